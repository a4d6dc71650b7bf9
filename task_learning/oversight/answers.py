"""What an operator's reply means: the one reading every front end shares.

The terminal prompt, `task-learning operator --answer`, the Qt panel, the rqt plugin and the
oversight queue behind the ROS node all call `interpret_reply`, so a person answers as people do,
wherever they type:
- yes or no in everyday words ("yes", "yeah", "sure", "no", "nope"; "skip" when asked for words);
- a listed candidate by its number ("17", "#17", "number 17"): the candidate asked about is a yes,
  another one is that candidate's sentence as a description;
- the goal in plain words. `goal_sentence_from_words` turns what people say ("put it in the
  recycling bin", "in the fridge, closed", "the cupboard") into a goal sentence about the object
  in question, and the oversight flow analyses it like any candidate.
What is no answer ("maybe", "?", an empty line, a yes to a question asking for words, a number no
candidate has) is never stored: the reply carries a hint saying what is expected, and the question
stays as it was, to be answered again (or to time out, which is never consent).

`remaining_s` / `remaining_text` say how long a question has left, for every front end to show.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass

from task_learning.oversight.phrasing import clean_goal_text, copula, count_words, goal_sentence
from task_learning.types import AnswerKind, ConfirmationRequest, GoalCandidate

_YES = frozenset({
    "y", "yes", "yeah", "yea", "yep", "yup", "sure", "ok", "okay", "correct", "right", "exactly",
    "affirmative", "yes please", "that's right", "that is right", "that's it", "that is it",
    "go ahead", "do it", "sounds good", "fine", "of course", "definitely", "absolutely",
})
_NO = frozenset({
    "n", "no", "nope", "nah", "no thanks", "no thank you", "not that", "wrong", "incorrect",
    "negative", "not really", "no way", "definitely not", "absolutely not",
})
# Declining (to confirm, or to describe the goal): "no" and these.
_SKIP = frozenset({"skip", "pass", "none", "nothing", "never mind", "nevermind", "no goal"})
_UNSURE = frozenset({
    "maybe", "perhaps", "possibly", "probably", "not sure", "i'm not sure", "im not sure",
    "i am not sure", "unsure", "don't know", "dont know", "i don't know", "i dont know",
    "i do not know", "dunno", "idk", "no idea", "no clue", "not certain", "i guess", "i think so",
    "kind of", "sort of", "whatever", "either", "hmm", "hm", "um", "uh", "?", "??", "???",
    "maybe not", "maybe yes", "yes or no", "who knows", "depends", "it depends",
})
_NUMBER = re.compile(r"^(?:#|no\.\s*|nr\.?\s*|number\s+|option\s+|candidate\s+|goal\s+)?#?(\d{1,9})$")
_NO_THEN = re.compile(r"^(?:no|nope|nah)\s*[,;:.!-]+\s*(.+)$")
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class Reply:
    """An operator's reply as the robot understands it.

    answer: YES, NO or DESCRIPTION; None when the reply is no answer (ask again with `hint`).
    description: for DESCRIPTION, the words to analyse (the person's own, or the sentence of the
      candidate picked by number); empty otherwise.
    candidate_id: the listed candidate picked by number, else None.
    """

    answer: AnswerKind | None
    description: str = ""
    candidate_id: int | None = None
    hint: str = ""

    @property
    def accepted(self) -> bool:
        return self.answer is not None


def expected(request: ConfirmationRequest) -> str:
    """What this question takes, as the end of "please ...": a line a person can act on."""
    numbers = ", give a listed candidate's number" if _listed(request) else ""
    if request.wants_description:
        return f"describe the goal in words (e.g. \"put it in the cupboard\"){numbers}, or say 'no' to skip"
    return f"answer yes or no{numbers}, or describe the goal in words (e.g. \"put it in the cupboard\")"


def interpret_reply(request: ConfirmationRequest, text: str) -> Reply:
    """Read one reply to `request` (see the module's docstring for the rules)."""
    said = _SPACES.sub(" ", text or "").strip()
    word = _SPACES.sub(" ", re.sub(r"[,.!]+", " ", said.lower())).strip()
    if not word:
        return _again(request, "An empty answer")
    if word in _UNSURE or word.rstrip("?").strip() in _UNSURE:
        return _again(request, f"'{_short(said)}' is not an answer the robot can act on")
    if _both_yes_and_no(word):  # "yes no", "no, yes": not a goal in words, and not one answer
        return _again(request, f"'{_short(said)}' says both yes and no")
    if word in _YES:
        if request.wants_description:
            return _again(request, "This question asks for the goal in words, not for a yes")
        return Reply(AnswerKind.YES)
    if word in _NO or word in _SKIP:
        return Reply(AnswerKind.NO)
    number = _NUMBER.match(word)
    if number:
        return _by_number(request, int(number.group(1)))
    correction = _NO_THEN.match(said)  # "no, put it in the fridge": the words are the answer
    if correction and count_words(correction.group(1)):
        said = correction.group(1).strip()
    if not count_words(said):
        return _again(request, f"'{_short(said)}' has no words")
    return Reply(AnswerKind.DESCRIPTION, said)


def _both_yes_and_no(word: str) -> bool:
    """Only yes-words and no-words, of both kinds ("yes no", "no yes", "yeah nope")."""
    tokens = word.split()
    if len(tokens) < 2 or not all(t in _YES or t in _NO for t in tokens):
        return False
    return any(t in _YES for t in tokens) and any(t in _NO for t in tokens)


def _again(request: ConfirmationRequest, why: str) -> Reply:
    return Reply(None, hint=f"{why}: please {expected(request)}.")


def _short(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _listed(request: ConfirmationRequest) -> list[GoalCandidate]:
    listed = list(request.candidates)
    if request.candidate is not None and all(c.candidate_id != request.candidate.candidate_id
                                             for c in listed):
        listed.insert(0, request.candidate)
    return listed


def _by_number(request: ConfirmationRequest, number: int) -> Reply:
    listed = _listed(request)
    for cand in listed:
        if cand.candidate_id != number:
            continue
        asked = request.candidate
        if not request.wants_description and asked is not None and asked.candidate_id == number:
            return Reply(AnswerKind.YES, candidate_id=number)
        return Reply(AnswerKind.DESCRIPTION, cand.text, candidate_id=number)
    if not listed:
        return _again(request, f"No candidates are listed with this question, so {number} names none")
    numbers = ", ".join(f"#{c.candidate_id}" for c in listed)
    return _again(request, f"No candidate #{number} here (listed: {numbers})")


# --- plain words -> a goal sentence ---------------------------------------------------------------

_PREPOSITION = r"(?:inside of|inside|into|in|on top of|onto|on|to)"
_PUT_VERBS = (r"(?:put|place|move|take|bring|store|keep|leave|return|set|throw|toss|drop|stick|"
              r"stash|stow|hang|get)")
_GOES = (r"(?:goes|go|belongs|belong|should go|should be|has to go|have to go|needs to go|must go|"
         r"is|are|stays|stay)")
_PRONOUN = r"(?:it|them|this|that|these|those|they)"
# A place runs to the end, or to "and"/"then" and what is said after it ("... and close it").
_PLACE = r"(?P<place>.+?)(?:\s+(?:and then|and|then)\s+(?P<more>.+))?"
_PUT = re.compile(rf"^{_PUT_VERBS}\s+(?P<subject>.+?)\s+(?:back\s+|away\s+)?"
                  rf"(?P<prep>{_PREPOSITION})\s+{_PLACE}$")
_GOES_TO = re.compile(rf"^(?P<subject>{_PRONOUN}|(?:the|a|an)\s+.+?)\s+{_GOES}\s+(?:back\s+|away\s+)?"
                      rf"(?P<prep>{_PREPOSITION})\s+{_PLACE}$")
_BARE_PLACE = re.compile(rf"^(?:back\s+|away\s+)?(?P<prep>{_PREPOSITION})\s+{_PLACE}$")
_NOUN_PHRASE = re.compile(rf"^{_PLACE}$")
_COPULA = re.compile(r"\b(?:is|are)\b")
_PLACE_OF_CLAUSE = re.compile(rf"\b{_PREPOSITION}\s+(?P<place>(?:the|a|an)\s+.+)$")
_CLOSE_PLACE = re.compile(r"^(?:closed|shut|close it|shut it|close the door|shut the door|"
                          r"keep it closed|leave it closed|with the door closed|door closed|"
                          r"it closed|closed door|closed afterwards)$")
_OPEN_PLACE = re.compile(r"^(?:open|opened|leave it open|keep it open|it open)$")
_CLOSE_THING = re.compile(r"^(?:close|shut)\s+(?P<thing>.+)$")
_THING_STATE = re.compile(r"^(?P<thing>(?:the|a|an)\s+.+?)\s+(?P<state>closed|shut|open)$")
_PIECES = re.compile(r"\s*[,;]\s*")
_LEAD = re.compile(r"^(?:and then|and|then|but|also|please)\s+")
_ARTICLE = re.compile(r"^(?:the|a|an)\s+")


def object_noun(object_description: str) -> str:
    """'mug in the dish rack' -> 'mug'; 'steak knife on the counter' -> 'steak knife'."""
    noun = re.split(r"\s+(?:in|on|inside|at|under|near|by)\s+", object_description.strip(), maxsplit=1)[0]
    return _ARTICLE.sub("", noun.strip()) or "object"


def goal_sentence_from_words(words: str, noun: str) -> str:
    """The goal sentence plain words stand for, about the object `noun` names ("mug"):

        put it in the recycling bin  -> the goal is that the mug is in the recycling bin
        in the fridge, closed        -> the goal is that the mug is in the fridge and the fridge is closed
        the cupboard                 -> the goal is that the mug is in the cupboard
        the mug is in the cupboard   -> the goal is that the mug is in the cupboard (as before)

    Words this does not recognise come back as the goal sentence they already are, for the
    analysis to say what it cannot use. Only wording is changed here; grounding is the analysis'."""
    text = clean_goal_text(words)
    if not text:
        return ""
    pieces = [_LEAD.sub("", p) for p in _PIECES.split(text.lower()) if p.strip()]
    first, rest = pieces[0], pieces[1:]
    said_it = re.match(rf"^{_PRONOUN}\b", first) is not None  # "it is in the fridge": say which
    if not rest and not said_it and (_COPULA.search(first) or first.startswith(("the goal", "goal is"))):
        return goal_sentence(text)  # a goal sentence already, kept as the person wrote it
    subject = f"the {noun}"
    place = clause = ""
    for pattern in (_PUT, _GOES_TO, _BARE_PLACE):
        match = pattern.match(first)
        if match:
            who = match.groupdict().get("subject") or "it"
            who = subject if re.fullmatch(_PRONOUN, who) else who
            place = _with_article(match.group("place"))
            verb = "are" if " and " in who or (who == subject and copula(noun) == "are") else "is"
            clause = f"{who} {verb} {_preposition(match.group('prep'))} {place}"
            break
    if match is None and _COPULA.search(first):  # "the mug is in the fridge, closed"
        clause = first
        found = _PLACE_OF_CLAUSE.search(first)
        place = found.group("place") if found else ""
    elif match is None:
        match = _NOUN_PHRASE.match(first)
        if match is None or not (_ARTICLE.match(first) or count_words(match.group("place")) <= 3):
            return goal_sentence(text)
        place = _with_article(match.group("place"))  # "the cupboard": where it goes
        clause = f"{subject} {copula(noun)} in {place}"
    if match is not None and match.groupdict().get("more"):
        rest.insert(0, match.group("more"))
    clauses = [clause] + [_state_clause(_LEAD.sub("", part), place or subject) for part in rest]
    return goal_sentence(" and ".join(clauses))


def _state_clause(part: str, place: str) -> str:
    part = part.strip()
    if _CLOSE_PLACE.match(part):
        return f"{place} is closed"
    if _OPEN_PLACE.match(part):
        return f"{place} is open"
    match = _THING_STATE.match(part)
    if match:
        return f"{match.group('thing')} is {match.group('state')}"
    match = _CLOSE_THING.match(part)
    if match:
        thing = match.group("thing")
        return f"{place if re.fullmatch(_PRONOUN, thing) else _with_article(thing)} is closed"
    return part  # a clause of its own ("the fridge is closed"), or words the analysis will name


def _with_article(place: str) -> str:
    place = place.strip()
    return place if _ARTICLE.match(place) else f"the {place}"


def _preposition(word: str) -> str:
    return {"to": "in", "into": "in", "inside of": "in", "onto": "on", "on top of": "on"}.get(word, word)


# --- time left --------------------------------------------------------------------------------------

def remaining_s(request: ConfirmationRequest, now: float | None = None) -> float | None:
    """Seconds until the question times out, or None when its deadline is not known."""
    if not request.deadline:
        return None
    return max(0.0, request.deadline - (time.time() if now is None else now))


def remaining_text(request: ConfirmationRequest, now: float | None = None) -> str:
    """'1 min 27 s left (then it counts as no)', for a person deciding how fast to answer."""
    left = remaining_s(request, now)
    if left is None:
        return f"times out after {request.timeout_s:g} s" if request.timeout_s else ""
    if left <= 0:
        return "time is up"
    seconds = int(left + 0.5)
    shown = f"{seconds // 60} min {seconds % 60} s" if seconds >= 60 else f"{seconds} s"
    return f"{shown} left (then it counts as no answer, never as yes)"
