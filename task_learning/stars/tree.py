"""Search Tree (ST): beam search over the token alternatives of temperature-0 completions.

The STARS paper §4.1 / B.3 and notes/stars-reference.md, exactly:
- branch at every token whose own probability is below 0.90; each alternative above 0.05 starts a
  branch (prefix = completion up to that token + the alternative), skipping an alternative equal to
  the chosen token (lower-cased, stripped), a "-" and a "," alternative;
- an alternative ending the sentence ("." / newline / "(") is a finished response at once, without
  a request (its probability counts in the score: the paper's 0.8618 for "... in the dishwasher"
  only comes out that way);
- the root request is level 0, recursion goes to level 2 at most; from level 1 on a branch is only
  continued (requested) if the mean probability of its tokens so far (its prefix, the alternative
  included) is at least 0.85 ("the total response generated so far", B.3);
- score = mean token probability; responses are deduplicated across the whole elicitation
  (including repair trees) by normalised text, and a prefix is never requested twice;
- a hard cap on requests per object.

Several trees (the repair trees of one round) expand together level by level. The expansion is a
generator (`expand_steps`) that yields the independent requests of one level and receives their
responses, processed in request order, so the result never depends on how or in what order they
were answered. A `Sender` answers a level: `concurrent_sender` (one request per call, concurrently
through a bounded thread pool), `batched_sender` (one list-prompt round trip through
`LLMClient.complete_many`), or a driver that merges the levels of many objects
(task_learning.stars.together).
"""
from __future__ import annotations

import logging
import math
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Generator, Protocol, Sequence, TypeVar

from task_learning.llm.base import LLMRequest, LLMResponse
from task_learning.types import CandidateSource, GoalCandidate

log = logging.getLogger(__name__)

_SPACES = re.compile(r"\s+")
# Probabilities arrive as log probabilities; exp(log(0.05)) may land a hair above 0.05. Thresholds
# are compared with this tolerance so a value printed as exactly 0.05 or 0.90 is not "above"/"below".
_EPS = 1e-9


class CompletionClient(Protocol):
    """What the tree needs from `task_learning.llm.client.LLMClient`."""

    def complete(self, request: LLMRequest) -> LLMResponse: ...


T = TypeVar("T")
Sender = Callable[[list[LLMRequest]], list[LLMResponse]]
# A stage that needs the model: yields lists of independent requests, receives their responses in
# the same order, returns its result.
Steps = Generator[list[LLMRequest], list[LLMResponse], T]


def drive(steps: Steps[T], send: Sender) -> T:
    """Run a generator of request levels to its end, answering each level with `send`."""
    try:
        requests = next(steps)
        while True:
            requests = steps.send(send(requests))
    except StopIteration as done:
        result: T = done.value  # the generator's return value
        return result


def concurrent_sender(client: CompletionClient, executor: ThreadPoolExecutor | None = None) -> Sender:
    """One request per call; a level's requests concurrently on `executor` (None: one by one)."""
    return lambda requests: _send_all(client, requests, executor)


def batched_sender(client: CompletionClient) -> Sender:
    """A level as list-prompt round trips (`complete_many`); a client without it answers one by one."""
    many = getattr(client, "complete_many", None)
    if not callable(many):
        return concurrent_sender(client)

    def send(requests: list[LLMRequest]) -> list[LLMResponse]:
        try:
            return list(many(requests))
        except Exception as exc:  # noqa: BLE001 - a bug below us becomes failed requests, counted and reported
            log.error("LLM batch failed unexpectedly: %s", exc)
            return [LLMResponse(text="", error=f"client raised {type(exc).__name__}: {exc}") for _ in requests]

    return send


@dataclass(frozen=True)
class TreeSettings:
    """The paper's thresholds (do not tune them per object)."""

    branch_below: float = 0.90  # a token with probability below this is a branch point
    alternative_above: float = 0.05  # an alternative with probability above this starts a branch
    continue_at_least: float = 0.85  # from level 1 on, mean probability needed to recurse
    max_depth: int = 2  # root = level 0
    max_requests: int = 1500  # per object, over the tree and every repair tree
    max_workers: int = 8  # concurrent requests of one level (1 = sequential)


def normalize_response(text: str) -> str:
    """Dedup key and candidate text: lower case, single spaces, stripped, no trailing '.'."""
    text = _SPACES.sub(" ", text).strip().lower()
    while text.endswith("."):
        text = text[:-1].rstrip()
    return text


def ends_sentence(token: str) -> bool:
    """'.', '.(', ".'''", a newline or '(' end the goal sentence."""
    if "\n" in token:
        return True
    stripped = token.strip()
    return stripped.startswith(".") or stripped.startswith("(")


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


@dataclass
class TreeRoot:
    """One tree to expand: how to build its requests and how to label what it finds."""

    build_request: Callable[[str, str], LLMRequest]  # (prompt_type, prefix) -> request
    key: str  # identifies the base prompt (prefix dedup is per base prompt)
    root_type: str = "initial"  # prompt type of the root request
    recurse_type: str = "recurse"
    root_source: CandidateSource = CandidateSource.INITIAL
    recurse_source: CandidateSource = CandidateSource.RECURSE
    parent_id: int = -1  # the candidate this tree repairs (-1: the initial tree)
    repair_feedback: str = ""
    generation: int = 0  # 0: initial tree, n: n-th repair round
    # --decoding grounded: the text every branch starts from (the part all allowed answers share,
    # sent as part of the prompt), and which branch texts the constraint allows (None: any)
    start: str = ""
    allows: Callable[[str], bool] | None = None
    complete: Callable[[str], bool] | None = None  # a finished allowed answer (None: any)
    expand: Callable[[str], str] | None = None  # an answer the server stopped early, completed
    # the one allowed answer a branch's text leaves (None: more than one): such a branch is that
    # answer, recorded without a request (the rest is forced: it cannot change the scores)
    settled: Callable[[str], str | None] | None = None
    # whether a token every allowed answer continuing a text continues with (a forced token):
    # its alternatives are other spellings of the same answers, not followed
    forced: Callable[[str, str], bool] | None = None


@dataclass
class _Pending:
    root: TreeRoot
    prefix: str
    probs: tuple[float, ...]
    level: int
    parent_id: int
    pieces: tuple[str, ...] = ()  # the token text of each of `probs`


@dataclass
class TreeEvent:
    """One response (requested or finished by a sentence end) as it was found, duplicates included."""

    text: str
    score: float
    candidate_id: int
    duplicate: bool
    level: int
    requested: bool


@dataclass
class TreeState:
    """Shared by every tree of one elicitation: dedup of responses and prefixes, request counting."""

    settings: TreeSettings = field(default_factory=TreeSettings)
    candidates: list[GoalCandidate] = field(default_factory=list)
    by_text: dict[str, GoalCandidate] = field(default_factory=dict)
    generation: dict[int, int] = field(default_factory=dict)  # candidate id -> repair generation
    requested: set[tuple[str, str]] = field(default_factory=set)
    events: list[TreeEvent] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=lambda: {
        "requests": 0, "responses": 0, "duplicates": 0, "failed_requests": 0, "capped": 0,
        "pruned_low_mean": 0, "pruned_depth": 0, "repeated_prefix": 0, "no_logprobs": 0,
        "sentence_ends": 0, "outside_constraint": 0, "settled": 0, "forced_positions": 0,
    })
    # candidate id -> the probabilities of the tokens its text was found with, and those tokens'
    # texts ("" for a sentence end): grounded scoring
    paths: dict[int, tuple[float, ...]] = field(default_factory=dict)
    pieces: dict[int, tuple[str, ...]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    # Called after each level of requests is processed (a live view shows the tree growing).
    on_level: Callable[[], None] | None = field(default=None, repr=False, compare=False)

    def levels(self) -> dict[int, int]:
        """Candidate id -> the tree level it was first found at (0: the root request)."""
        found: dict[int, int] = {}
        for event in self.events:
            found.setdefault(event.candidate_id, event.level)
        return found

    @property
    def remaining_requests(self) -> int:
        return max(0, self.settings.max_requests - self.counts["requests"])

    def add_response(self, text: str, probs: Sequence[float], root: TreeRoot, source: CandidateSource,
                     parent_id: int, level: int, requested: bool, pieces: Sequence[str] = ()) -> int:
        """Record a response; returns the candidate id it maps to (an existing one for a duplicate),
        or -1 for an empty response."""
        key = normalize_response(text)
        if not key:
            return -1
        score = _mean(probs)
        self.counts["responses"] += 1
        existing = self.by_text.get(key)
        if existing is not None:
            self.counts["duplicates"] += 1
            self.events.append(TreeEvent(key, score, existing.candidate_id, True, level, requested))
            return existing.candidate_id
        cand = GoalCandidate(text=key, score=score, source=source,
                             candidate_id=len(self.candidates) + 1, parent_id=parent_id,
                             repair_feedback=root.repair_feedback)
        self.candidates.append(cand)
        self.paths[cand.candidate_id] = tuple(probs)
        self.pieces[cand.candidate_id] = tuple(pieces)
        self.by_text[key] = cand
        self.generation[cand.candidate_id] = root.generation
        self.events.append(TreeEvent(key, score, cand.candidate_id, False, level, requested))
        return cand.candidate_id


def expand(client: CompletionClient, roots: Sequence[TreeRoot], state: TreeState,
           executor: ThreadPoolExecutor | None = None, sender: Sender | None = None) -> list[GoalCandidate]:
    """Expand the trees of `roots` together, level by level; returns the NEW distinct candidates in
    the order found (duplicates of earlier responses are counted, not returned). Levels go out
    through `sender` (default: concurrently on `executor`)."""
    return drive(expand_steps(roots, state), sender or concurrent_sender(client, executor))


def expand_steps(roots: Sequence[TreeRoot], state: TreeState) -> Steps[list[GoalCandidate]]:
    """`expand` as a generator: yields each level's requests (never an empty list), receives
    their responses in the same order."""
    settings = state.settings
    first_new = len(state.candidates)
    pending = [_Pending(root, root.start, (), 0, root.parent_id) for root in roots]
    while pending:
        batch: list[tuple[_Pending, LLMRequest]] = []
        capped_before = state.counts["capped"]
        for item in pending:
            prefix_key = (item.root.key, item.prefix)
            if prefix_key in state.requested:
                state.counts["repeated_prefix"] += 1
                continue
            if state.remaining_requests - len(batch) <= 0:
                state.counts["capped"] += 1
                continue
            state.requested.add(prefix_key)
            prompt_type = item.root.root_type if item.level == 0 else item.root.recurse_type
            batch.append((item, item.root.build_request(prompt_type, item.prefix)))
        if state.counts["capped"] > capped_before:
            log.warning("request cap of %d reached: %d branch(es) not requested",
                        settings.max_requests, state.counts["capped"] - capped_before)
        state.counts["requests"] += len(batch)
        responses = (yield [req for _, req in batch]) if batch else []
        if len(responses) != len(batch):  # a broken sender must not shift answers between branches
            responses = [LLMResponse(text="", error=f"{len(responses)} answers for {len(batch)} requests")
                         for _ in batch]
        next_pending: list[_Pending] = []
        for (item, _request), response in zip(batch, responses):
            next_pending.extend(_process(item, response, state))
        pending = next_pending
        if batch and state.on_level is not None:
            try:
                state.on_level()
            except Exception as exc:  # noqa: BLE001 - an observer must not break the search
                log.warning("tree level callback failed: %s", exc)
    return state.candidates[first_new:]


def _send_all(client: CompletionClient, requests: list[LLMRequest],
              executor: ThreadPoolExecutor | None) -> list[LLMResponse]:
    """Send one level's requests; results come back in submission order."""
    if executor is None or len(requests) <= 1:
        return [_send(client, r) for r in requests]
    futures = [executor.submit(_send, client, r) for r in requests]
    return [f.result() for f in futures]


def _send(client: CompletionClient, request: LLMRequest) -> LLMResponse:
    """The client never raises for provider failures; anything else still must not kill the tree."""
    try:
        return client.complete(request)
    except Exception as exc:  # noqa: BLE001 - a bug below us becomes a failed request, counted and reported
        log.error("LLM request failed unexpectedly: %s", exc)
        return LLMResponse(text="", error=f"client raised {type(exc).__name__}: {exc}")


def _ends_allowed(root: TreeRoot, head: str, alt: str) -> bool:
    """An alternative that ends the sentence where an allowed answer is complete."""
    return ends_sentence(alt) and (root.complete is None or root.complete(head))


def _process(item: _Pending, response: LLMResponse, state: TreeState) -> list[_Pending]:
    """Record one response and return the branches it opens."""
    settings = state.settings
    root = item.root
    if not response.ok:
        state.counts["failed_requests"] += 1
        state.errors.append(response.error)
        return []
    tokens = list(response.tokens)
    text = response.text if response.text else "".join(t.token for t in tokens)
    if not tokens and text.strip():
        state.counts["no_logprobs"] += 1
    source = root.root_source if item.level == 0 else root.recurse_source
    probs = item.probs + tuple(t.prob for t in tokens)
    pieces = item.pieces + tuple(t.token for t in tokens)
    written = item.prefix + text
    if root.expand is not None and root.expand(written) != written:  # the forced rest, certain
        full = root.expand(written)
        probs, pieces, written = probs + (1.0,), pieces + (full[len(written):],), full
    me = state.add_response(written, probs, root, source, item.parent_id, item.level, True, pieces)
    parent_for_branches = me if me > 0 else item.parent_id
    if item.level >= settings.max_depth:
        if any(t.prob < settings.branch_below - _EPS for t in tokens):
            state.counts["pruned_depth"] += 1
        return []
    branches: list[_Pending] = []
    head = item.prefix
    head_probs = list(item.probs)
    head_pieces = list(item.pieces)
    for token in tokens:
        p_token = token.prob
        if root.forced is not None and root.forced(head, token.token):
            state.counts["forced_positions"] += 1
        elif p_token < settings.branch_below - _EPS:
            chosen = token.token.strip().lower()
            for alt, logprob in token.top:
                p_alt = math.exp(logprob)
                if p_alt <= settings.alternative_above + _EPS:
                    continue
                stripped = alt.strip()
                if stripped.lower() == chosen or stripped in ("-", ","):
                    continue
                if root.allows is not None and not root.allows(head + alt) and not _ends_allowed(root, head, alt):
                    state.counts["outside_constraint"] += 1  # the grammar would never let it be written
                    continue
                if ends_sentence(alt):
                    state.counts["sentence_ends"] += 1
                    state.add_response(head, head_probs + [p_alt], root, root.recurse_source,
                                       parent_for_branches, item.level + 1, False, head_pieces + [""])
                    continue
                if item.level >= 1 and _mean(head_probs + [p_alt]) < settings.continue_at_least - _EPS:
                    state.counts["pruned_low_mean"] += 1
                    continue
                if _settle(root, state, head + alt, head_probs + [p_alt], (*head_pieces, alt),
                           parent_for_branches, item.level + 1):
                    continue
                branches.append(_Pending(root, head + alt, tuple(head_probs) + (p_alt,),
                                         item.level + 1, parent_for_branches, (*head_pieces, alt)))
        head += token.token
        head_probs.append(p_token)
        head_pieces.append(token.token)
    return branches


def _settle(root: TreeRoot, state: TreeState, text: str, probs: list[float], pieces: tuple[str, ...],
            parent_id: int, level: int) -> bool:
    """A branch whose text leaves one allowed answer is that answer, recorded without a request:
    the model would only write the forced rest, whose tokens no grounded score counts
    (stars/grounded.py `decisive`). False when the branch must be asked."""
    answer = root.settled(text) if root.settled is not None else None
    if answer is None:
        return False
    state.counts["settled"] += 1
    rest = answer[len(text):]
    state.add_response(answer, probs + [1.0] if rest else probs, root, root.recurse_source, parent_id, level,
                       False, (*pieces, rest) if rest else pieces)
    return True
