"""The grounded Search Tree asked only where the goals part: one token per request (`search: decisive`).

Under `--decoding grounded` a goal's probability counts only its decisive tokens, the ones written
while more than one grounded goal could still follow (stars/grounded.py `decisive`). So the model
is asked only at those places: a request is the goal prompt ending at a prefix where the goals part
(" The goal is that the yogurt is", " ... is in the"), with the grammar of the goals that continue
it, for ONE token and its alternatives (llama.cpp reports them before the grammar applies:
measured, docs/llm.md). Each alternative above the floor that some goal continues, and the token
the grammar let the model write, is followed:
- a text only one goal starts with is that goal, recorded at once (the rest is forced);
- otherwise the text goes on by the words every goal continuing it shares (" in" -> " in the": the
  grammar would force them) and is asked in the next level.
A sentence end where a goal is complete ("... on the counter" against "... counter top") finishes
that goal. The tree is the same the paths search finds (stars/tree.py with `settled`/`forced`), but
the server decodes one token per request instead of every token up to where one goal is left: on a
CPU a grammar's tokens cost up to seconds each (measured). The goals found, their decisive tokens'
probabilities and so the scores are the same; what differs is how many tokens the server writes.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from task_learning.llm.base import LLMResponse
from task_learning.stars.tree import Steps, TreeRoot, TreeState, ends_sentence
from task_learning.types import GoalCandidate

if TYPE_CHECKING:
    from task_learning.stars.grounded import GoalSpace


@dataclass(frozen=True)
class _Branch:
    prefix: str  # the prompt's end: where the goals continuing it part
    probs: tuple[float, ...] = ()
    pieces: tuple[str, ...] = ()


def decisive_steps(space: "GoalSpace", root: TreeRoot, tree: TreeState,
                   floor: float) -> Steps[list[GoalCandidate]]:
    """Expand `root` (built by `space.root`) asking one token per decisive prefix, level by level
    (each level's requests yielded together); returns the new candidates in the order found."""
    first_new = len(tree.candidates)
    start = space.forced_end(space.start)
    pending = [_Branch(start, (1.0,) if start != space.start else (), (start[len(space.start):],)
                       if start != space.start else ())]
    level = 0
    while pending:
        batch: list[_Branch] = []
        for branch in pending:
            key = (root.key, branch.prefix)
            if key in tree.requested:
                tree.counts["repeated_prefix"] += 1
                continue
            if tree.remaining_requests - len(batch) <= 0:
                tree.counts["capped"] += 1
                continue
            tree.requested.add(key)
            batch.append(branch)
        if not batch:
            break
        tree.counts["requests"] += len(batch)
        prompt_type = root.root_type if level == 0 else root.recurse_type
        responses = yield [replace(root.build_request(prompt_type, b.prefix), max_tokens=1) for b in batch]
        if len(responses) != len(batch):
            responses = [LLMResponse(text="", error=f"{len(responses)} answers for {len(batch)} requests")
                         for _ in batch]
        level += 1
        pending = [nxt for branch, response in zip(batch, responses)
                   for nxt in _follow(space, root, tree, branch, response, floor, level)]
    return tree.candidates[first_new:]


def _follow(space: "GoalSpace", root: TreeRoot, tree: TreeState, branch: _Branch, response: LLMResponse,
            floor: float, level: int) -> list[_Branch]:
    """Record the goals one response settles; return the branches still to ask."""
    if not response.ok:
        tree.counts["failed_requests"] += 1
        tree.errors.append(response.error)
        return []
    if not response.tokens:
        tree.counts["no_logprobs"] += 1
        return []
    token = response.tokens[0]
    options = {token.token: token.logprob}  # what the grammar let it write is always followed
    for alt, logprob in token.top:
        if math.exp(logprob) > floor and alt not in options:
            options[alt] = logprob
    source = root.root_source if level == 1 else root.recurse_source
    out = []
    for alt, logprob in options.items():
        p, text = math.exp(logprob), branch.prefix + alt
        if not alt or ends_sentence(alt):
            if space.complete(branch.prefix):  # the goal ends here, against longer ones
                tree.counts["sentence_ends"] += 1
                tree.add_response(branch.prefix, [*branch.probs, p], root, source, root.parent_id, level,
                                  alt == token.token, (*branch.pieces, ""))
            continue
        if not space.allows(text):
            tree.counts["outside_constraint"] += 1
            continue
        goal = space.settled(text)
        if goal is not None:
            tree.counts["settled"] += 1
            rest = goal[len(text):]
            tree.add_response(goal, [*branch.probs, p, *([1.0] if rest else [])], root, source, root.parent_id,
                              level, alt == token.token, (*branch.pieces, alt, *([rest] if rest else [])))
            continue
        going = space.forced_end(text)
        extra = going[len(text):]
        out.append(_Branch(going, (*branch.probs, p, *([1.0] if extra else [])),
                           (*branch.pieces, alt, *([extra] if extra else []))))
    return out
