"""Median goal-analysis time per sentence: tidy_kitchen and a 500-object kitchen (target < 1 ms).

    .venv/bin/python bench/bench_grounding.py [--repeat 200]

Sentences: the 13 responses of the mug example plus a mix of viable and unviable sentences over the
kitchen. The state index is built once per state (as the node does for each world_state message);
its build time is reported separately. Large worlds: tidy_kitchen's objects replicated to 500
(many duplicates: the hardest case for choosing among same-typed objects) and the world helper's
generate_scene(480 objects + 20 furniture).
"""
from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from task_learning.grounding import GroundingKnowledge, analyze_goal
from task_learning.grounding.scene_state import scene_metadata
from task_learning.world import SymbolicWorld, generate_scene
from task_learning.world.state import world_state_from_metadata

G = "the goal is that "
MUG_RESPONSES = [G + s for s in (
    "the mug is in the cabinet and the cabinet is closed",
    "the mug is in the cupboard and the cupboard is closed",
    "the mug is in the dishwasher and the dishwasher is turned on",
    "the mug is in the dishwasher and the dishwasher is closed",
    "the mug is in the cupboard and the dish rack is empty",
    "the mug is in the dishwasher and the dishwasher is on",
    "the mug is in the dishwasher and the dishwasher is started",
    "the mug is in the dish rack and the dish rack is empty",
    "the mug is in the dish rack and the dish rack is tidy",
    "the mug is in the dish rack and the dish rack is clean",
    "the mug is in the dishwasher",
    "the mug is in the cupboard",
    "the mug is in the dish rack and the dish rack is in the cupboard",
)]
MORE = [G + s for s in (
    "the half and half is in the refrigerator and the refrigerator is closed",
    "the steak knife on the counter is in the dishwasher",
    "the mugs are in the dishwasher",
    "the milk and the half and half and the jar of salsa are in the fridge",
    "the box of aluminum foil is in the pantry and the pantry is closed",
    "the mug is in the microwave",
    "the mug is under the sink",
)]


def big_world(size: int) -> dict:
    """tidy_kitchen's objects replicated (ids renumbered per type) up to `size` objects."""
    base = scene_metadata("tidy_kitchen")
    objects = list(base["objects"])
    counters: dict[str, int] = {}
    for o in objects:
        counters[o["objectType"]] = counters.get(o["objectType"], 0) + 1
    i = 0
    while len(objects) < size:
        clone = copy.deepcopy(base["objects"][i % len(base["objects"])])
        t = clone["objectType"]
        counters[t] += 1
        clone["objectId"] = f"{t}|{counters[t]}"
        clone["distance"] = 1.0 + (i % 17)
        objects.append(clone)
        i += 1
    return {**base, "objects": objects}


def median_ms(state, context, sentences, repeat, knowledge) -> float:
    times = []
    for _ in range(repeat):
        for sentence in sentences:
            start = time.perf_counter()
            analyze_goal(sentence, state, context, knowledge)
            times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000, max(times) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--size", type=int, default=500)
    args = parser.parse_args()
    start = time.perf_counter()
    knowledge = GroundingKnowledge.load()
    print(f"knowledge load: {(time.perf_counter() - start) * 1000:.1f} ms")
    sentences = MUG_RESPONSES + MORE
    generated = generate_scene(args.size - 20, n_furniture=20, seed=0)
    generated_metadata = SymbolicWorld(generated).metadata
    for label, metadata in (("tidy_kitchen", scene_metadata("tidy_kitchen")),
                            (f"{args.size}-object kitchen (tidy_kitchen replicated)", big_world(args.size)),
                            (f"{args.size}-object generated scene", generated_metadata)):
        state = world_state_from_metadata(metadata)
        start = time.perf_counter()
        knowledge.index(state)
        build = (time.perf_counter() - start) * 1000
        context = "Mug|2" if any(o.object_id == "Mug|2" for o in state.objects) else None
        med, worst = median_ms(state, context, sentences, args.repeat, knowledge)
        print(f"{label}: {len(state.objects)} objects, index build {build:.2f} ms, "
              f"median {med:.3f} ms/sentence, max {worst:.3f} ms "
              f"({len(sentences)} sentences x {args.repeat})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
