"""Measures of `--decoding grounded` against a scene's ground truth (scoring only, never shown to
the model): where the user's preferred place ranks in each object's grounded distribution."""
from __future__ import annotations

from typing import Any, Mapping, Sequence


def preferred_rank(distribution: Sequence[Mapping[str, Any]], preferred: Sequence[str]) -> int | None:
    """1 when the most likely place is one the user prefers; None when no preferred place has a
    share (the model gave it no probability above the tree's floor, or the robot cannot ground it)."""
    for rank, share in enumerate(distribution, 1):
        if share.get("place") in preferred:
            return rank
    return None


def grounded_report(distributions: Mapping[str, Sequence[Mapping[str, Any]]], scene: Any) -> dict[str, Any]:
    """Per elicited object: its distribution over places, the user's preferred places and their
    rank; and how many objects had the preferred place first."""
    preferences: Mapping[str, Sequence[str]] = getattr(scene, "preferences", {}) or {}
    objects = {}
    for object_id, distribution in distributions.items():
        preferred = list(preferences.get(object_id, ()))
        objects[object_id] = {"distribution": list(distribution), "preferred": preferred,
                              "rank": preferred_rank(distribution, preferred)}
    ranks = [o["rank"] for o in objects.values()]
    return {"objects": objects, "first": sum(1 for r in ranks if r == 1), "elicited": len(ranks)}
