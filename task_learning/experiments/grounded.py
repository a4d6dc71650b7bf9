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


def grounded_report(distributions: Mapping[str, Sequence[Mapping[str, Any]]], scene: Any,
                    by_mean: Mapping[str, Sequence[Mapping[str, Any]]] | None = None) -> dict[str, Any]:
    """Per elicited object: its distribution over places, the user's preferred places and their
    rank; and how many objects had the preferred place first. With `by_mean` (the same goals
    ranked by their tokens' geometric mean), that ranking's rank too (`rank_mean`, `first_mean`)."""
    preferences: Mapping[str, Sequence[str]] = getattr(scene, "preferences", {}) or {}
    objects: dict[str, dict[str, Any]] = {}
    for object_id, distribution in distributions.items():
        preferred = list(preferences.get(object_id, ()))
        objects[object_id] = {"distribution": list(distribution), "preferred": preferred,
                              "rank": preferred_rank(distribution, preferred)}
        if by_mean is not None and object_id in by_mean:
            objects[object_id]["rank_mean"] = preferred_rank(by_mean[object_id], preferred)
    ranks = [o["rank"] for o in objects.values()]
    report = {"objects": objects, "first": sum(1 for r in ranks if r == 1), "elicited": len(ranks)}
    if by_mean is not None:
        report["first_mean"] = sum(1 for o in objects.values() if o.get("rank_mean") == 1)
    return report
