"""Conflict resolution and reinforcement (the bootstrapped-productions paper, Eq. 1 and 2), and the transition graph.

* Sampling: among the applicable productions, P(Pi | K) ∝ exp(U(Pi)), with an injected RNG.
* Reward: a unit reward when `done` is chosen, propagated only along the shortest path from the
  task's start state to done in the state-transition graph kept while the task ran:
  U <- (N·U + γ^Δt)/(N+1), N <- N+1, Δt = steps from the production's application to done
  (the done production itself: Δt = 0). A subtask is its own pathway and one step in its parent.
  `quit` changes nothing.
* Cycles: the graph is searched depth first; an edge that closes a cycle makes the agent ask
  the LLM for an alternative.
"""
from __future__ import annotations

import math
import random
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Sequence, TypeVar

GAMMA = 0.95
DONE_NODE = "<done>"
T = TypeVar("T")
# Eq. 1 keeps U an average of gamma**dt, so within [0, 1] from its start of 0; N counts uses.
UTILITY_RANGE = (0.0, 1.0)
MAX_COUNT = 10**9


def utility_problem(utility: Any, count: Any) -> str:
    """Why (U, N) cannot be a production's (a stored row's or an import's), or "". A count of -1
    divided by zero in the next update, 1e308 and 10**30 overflowed; a bool is not a number."""
    low, high = UTILITY_RANGE
    if isinstance(utility, bool) or not isinstance(utility, (int, float)) or not math.isfinite(utility) \
            or not low <= utility <= high:
        return f"utility must be a number from {low:g} to {high:g} (Eq. 1 keeps it there), got {utility!r:.40}"
    if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= MAX_COUNT:
        return f"count must be a whole number from 0 to {MAX_COUNT}, got {count!r:.40}"
    return ""


def selection_probabilities(utilities: Sequence[float]) -> list[float]:
    """exp(U) normalised (shifted by the maximum for numerical safety)."""
    if not utilities:
        return []
    top = max(utilities)
    weights = [math.exp(u - top) for u in utilities]
    total = sum(weights)
    return [w / total for w in weights]


def sample(items: Sequence[T], utilities: Sequence[float], rng: random.Random) -> T:
    """One item drawn with P ∝ exp(U) using `rng` (injected: reproducible runs and tests)."""
    if not items or len(items) != len(utilities):
        raise ValueError("sample needs as many utilities as items (and at least one)")
    probabilities = selection_probabilities(utilities)
    draw = rng.random()
    cumulative = 0.0
    for item, p in zip(items, probabilities):
        cumulative += p
        if draw < cumulative:
            return item
    return items[-1]


def updated_utility(utility: float, count: int, delta_t: int, gamma: float = GAMMA) -> tuple[float, int]:
    """Eq. 1: (N·U + γ^Δt)/(N+1), and N+1."""
    return (count * utility + gamma ** delta_t) / (count + 1), count + 1


@dataclass
class TransitionGraph:
    """The states one task frame went through; edges labelled by the production applied
    (None: an action the LLM gave, which has no utility to update)."""

    start: str
    edges: dict[str, list[tuple[str, str | None]]] = field(default_factory=dict)

    def add(self, source: str, target: str, production: str | None) -> bool:
        """Add an edge; True when it closes a cycle (target reaches source, by DFS)."""
        self.edges.setdefault(source, []).append((target, production))
        return self.reaches(target, source)

    def reaches(self, source: str, target: str) -> bool:
        """Depth-first search: is there a path source -> target?"""
        stack, seen = [source], set()
        while stack:
            node = stack.pop()
            if node == target:
                return True
            if node in seen:
                continue
            seen.add(node)
            stack.extend(nxt for nxt, _ in self.edges.get(node, ()))
        return False

    def shortest_path(self, goal: str = DONE_NODE) -> list[str | None] | None:
        """The productions on the shortest start -> goal path (breadth first), in order."""
        previous: dict[str, tuple[str, str | None]] = {}
        queue = deque([self.start])
        seen = {self.start}
        while queue:
            node = queue.popleft()
            if node == goal:
                labels: list[str | None] = []
                while node != self.start:
                    node, label = previous[node][0], previous[node][1]
                    labels.append(label)
                return list(reversed(labels))
            for nxt, label in self.edges.get(node, ()):
                if nxt not in seen:
                    seen.add(nxt)
                    previous[nxt] = (node, label)
                    queue.append(nxt)
        return None


def path_rewards(path: Sequence[str | None], gamma: float = GAMMA) -> list[tuple[str, int]]:
    """(production, Δt) for every production on the path; the last step is the done one."""
    out = []
    for index, label in enumerate(path):
        if label is not None:
            out.append((label, len(path) - 1 - index))
    return out
