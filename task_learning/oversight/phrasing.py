"""What the robot says and how the user's words are counted (the STARS paper appendix C).

Kept apart from the flow so the node, the panel and the terminal all phrase questions alike and
every front end counts words the same way.
"""
from __future__ import annotations

import functools
import re

from task_learning.errors import TaskLearningError

GOAL_PREFIX = "the goal is that "
_WORD = re.compile(r"[A-Za-z0-9]+(?:['’][A-Za-z]+)?")
_SPACES = re.compile(r"\s+")


def clean_goal_text(text: str) -> str:
    """Collapse whitespace and drop trailing sentence punctuation, keeping the words as said."""
    return _SPACES.sub(" ", text).strip().rstrip(".!?").strip()


def goal_clause(candidate_text: str) -> str:
    """'the goal is that the mug is in the cupboard' -> 'the mug is in the cupboard'."""
    text = clean_goal_text(candidate_text)
    if text.lower().startswith(GOAL_PREFIX):
        return text[len(GOAL_PREFIX):].strip()
    return text


def goal_sentence(text: str) -> str:
    """Canonical goal sentence, as STARS' candidates are written: 'the goal is that <clause>'.

    A user may say "the mug is in the cupboard" or "The goal is that the mug is in the cupboard.";
    both are analysed as the same sentence."""
    clause = goal_clause(text)
    if not clause:
        return ""
    return GOAL_PREFIX + clause[0].lower() + clause[1:]


@functools.lru_cache(maxsize=256)
def is_plural(noun: str) -> bool:
    """Whether the robot's lexicon names an object with a plural ("paper plates", "eggs"); a noun
    it does not list is taken as singular."""
    words = tuple(noun.lower().split())
    if not words:
        return False
    try:
        from task_learning.grounding.knowledge import GroundingKnowledge

        forms = [f for f in GroundingKnowledge.load().lexicon.forms.get(words[0], []) if f.words == words]
    except TaskLearningError:  # a broken lexicon is reported where grounding loads it
        return False
    return bool(forms) and all(f.plural for f in forms)


def copula(noun: str) -> str:
    """'is' or 'are', agreeing with the noun: 'the mug is', 'the paper plates are'."""
    return "are" if is_plural(noun) else "is"


def _noun_of(object_description: str) -> str:
    return object_description.split(" in ")[0].split(" on ")[0].strip()


def with_indefinite_article(object_description: str) -> str:
    """'a mug in the dish rack', 'an egg in the fridge', 'paper plates in the bag' (a plural takes none)."""
    noun = _noun_of(object_description)
    if is_plural(noun):
        return object_description
    first = noun.lower()
    vowel_sound = first[:1] in ("a", "e", "i", "o", "u") and not first.startswith(("uni", "use", "usu", "ute", "eu"))
    return f"{'an' if vowel_sound else 'a'} {object_description}"


def proposal_question(object_description: str, candidate_text: str) -> str:
    """The paper's yes/no question, e.g. "For a mug in the dish rack is the goal that the mug is in
    the cupboard and the cupboard is closed?"."""
    return f"For {with_indefinite_article(object_description)} is the goal that {goal_clause(candidate_text)}?"


def description_question(object_description: str, feedback: str = "") -> str:
    """Asking for a goal description; after an unusable one, say why first (the mismatch feedback)."""
    noun = _noun_of(object_description)
    ask = (f"For {with_indefinite_article(object_description)}, what is the goal? Please describe it, e.g. "
           f"\"the goal is that the {noun} {copula(noun)} in the ...\".")
    if feedback:
        return f"I cannot use that goal: {feedback} {ask}"
    return ask


def count_words(text: str) -> int:
    """Words as appendix C counts them: "the goal is that the steak knife is in the dishwasher" is
    11 words, "No." is one. Punctuation is not a word."""
    return len(_WORD.findall(text))
