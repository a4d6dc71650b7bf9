"""Calibration of the offline model against the paper's picture (seed 000, Tables 2 and 11-13).

For every task object of the three seed-000 scenes, runs the real STARS pipeline
(task_learning.stars.elicit_goal with the grounding analysis) on the offline provider under the
conditions TBP, ST, STS, STAR, STARS and STARS* and prints, per scene and condition:
  objects  the % of task objects whose chosen goal is viable AND puts the object where the scene's
           user prefers (the object part of the paper's completion measure; closing doors is the
           planner's business and not counted here),
  viable   the % of task objects whose chosen goal the robot can use at all,
  in-tree  the % of objects with at least one viable candidate at a preferred place,
  cands    retrieved candidates, calls and tokens.
The scene preferences are read HERE, for scoring only; the offline model never sees them.

Run: .venv/bin/python bench/bench_offline_model.py [--scene tidy_kitchen] [--verbose]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from task_learning.llm.client import make_client  # noqa: E402
from task_learning.stars.elicit import elicit_goal  # noqa: E402
from task_learning.world.scene import load_scene  # noqa: E402
from task_learning.world.state import world_state_from_metadata  # noqa: E402

SCENES = ("tidy_kitchen", "store_groceries", "organize_office")
CONDITIONS = ("TBP", "ST", "STS", "STAR", "STARS", "STARS*")
PAPER = {  # seed 000 Table 2, task completion % (objects + closed containers)
    "tidy_kitchen": {"TBP": 52.5, "ST": 50.0, "STS": 40.0, "STAR": 77.5, "STARS": 77.5, "STARS*": 92.5},
    "store_groceries": {"TBP": 66.7, "ST": 66.7, "STS": 66.7, "STAR": 77.8, "STARS": 94.4},
    "organize_office": {"TBP": 35.7, "ST": 21.4, "STS": 21.4, "STAR": 64.3, "STARS": 92.9},
}


def placed_as_preferred(candidate, object_id: str, preferred: list[str]) -> bool:
    if candidate is None or not candidate.viable:
        return False
    for lit in candidate.literals:
        if lit.predicate in ("inside", "on") and lit.args and lit.args[0] == object_id \
                and str(getattr(lit.truth, "value", lit.truth)) == "true" and lit.args[1] in preferred:
            return True
    return False


def metadata_of(scene) -> dict:
    return {"sceneName": scene.name, "objects": scene.objects}


def run_scene(name: str, verbose: bool) -> None:
    scene = load_scene(name)
    meta = metadata_of(scene)
    state = world_state_from_metadata(meta)
    print(f"\n== {name}: {len(scene.task_objects)} task objects  (paper completion % in brackets)")
    print(f"{'condition':9} {'objects %':>9} {'viable %':>9} {'in-tree %':>9} {'cands':>6} {'calls':>6} {'tokens':>8} {'wall s':>7}")
    for cond in CONDITIONS:
        client = make_client("offline", cache=False)
        ok = in_tree = cands = usable = 0
        calls = tokens = 0
        started = time.perf_counter()
        for oid in scene.task_objects:
            res = elicit_goal(scene.task, oid, state, scene, cond, client)
            pref = list(scene.preferences.get(oid, []))
            hit = placed_as_preferred(res.chosen, oid, pref)
            ok += hit
            usable += bool(res.chosen is not None and res.chosen.viable)
            in_tree += any(placed_as_preferred(c, oid, pref) for c in res.candidates)
            cands += len(res.candidates)
            calls += res.usage.calls
            tokens += res.usage.prompt_tokens + res.usage.completion_tokens
            if verbose:
                chosen = res.chosen.text if res.chosen else "-"
                print(f"   {cond:6} {oid:22} {'OK ' if hit else 'no '} {chosen}")
        n = len(scene.task_objects)
        paper = PAPER.get(name, {}).get(cond)
        paper_s = f"[{paper:.1f}]" if paper is not None else ""
        print(f"{cond:9} {100 * ok / n:9.1f} {100 * usable / n:9.1f} {100 * in_tree / n:9.1f} {cands:6d} {calls:6d} {tokens:8d} "
              f"{time.perf_counter() - started:7.2f}  {paper_s}")


def provider_speed() -> None:
    """Milliseconds per goal request of the bare provider (no client, no cache)."""
    from task_learning.llm.base import LLMRequest
    from task_learning.llm.offline import OfflineProvider

    provider = OfflineProvider()
    stops = ("(END RESULT)", ".", "Steps:", "\n")

    def request(obj: str, prefix: str) -> LLMRequest:
        return LLMRequest("recurse", prompt="... (RESULT)" + prefix, logprobs=5, stop=stops,
                          context={"object": obj, "object_place": "table", "object_relation": "on",
                                   "prefix": prefix, "feedback": "", "repair_of": "", "system_context": []})

    objects = ["mug", "cereal box", "milk", "stapler", "steak knife", "apple core"]
    started = time.perf_counter()
    for obj in objects:  # first request of an object builds its sentence set
        provider.complete(request(obj, ""), 30)
    cold = (time.perf_counter() - started) / len(objects)
    started = time.perf_counter()
    n = 0
    for _ in range(50):
        for obj in objects:
            provider.complete(request(obj, f" The goal is that the {obj} is in the"), 30)
            n += 1
    warm = (time.perf_counter() - started) / n
    print(f"provider: {1000 * cold:.2f} ms first request of an object, {1000 * warm:.2f} ms per further request")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scene", choices=SCENES, action="append")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    print("offline model calibration (the offline model is deterministic and NOT a language model)")
    provider_speed()
    for name in args.scene or SCENES:
        run_scene(name, args.verbose)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
