"""What the offline model does inside the real STARS pipeline, per scene and condition: the
paper's three scenes (which it was written against) and held-out scenes (which it was not).

The offline model is NOT a language model, and it was written with the paper's tables at hand:
on the paper's scenes these figures measure agreement between two hand-written tables, not what a
language model knows. The held-out scenes (AI2-THOR FloorPlan furniture, object types not in the
paper) are printed apart. Nothing here is compared with, or tuned to, the paper's percentages.

For every task object it runs task_learning.stars.elicit_goal (with the grounding analysis) on the
offline provider under TBP, ST, STS, STAR, STARS and prints:
  objects  the % of task objects whose chosen goal is viable AND puts the object where the scene's
           user prefers (closing doors is the planner's business and not counted here),
  viable   the % of task objects whose chosen goal the robot can use at all,
  in-tree  the % of objects with at least one viable candidate at a preferred place,
  cands    retrieved candidates, calls and tokens (cl100k_base).
The scene preferences are read HERE, for scoring only; the offline model never sees them.

Run: .venv/bin/python bench/bench_offline_model.py [--scene tidy_kitchen] [--verbose]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from task_learning.llm.client import make_client
from task_learning.stars.elicit import elicit_goal
from task_learning.world.scene import load_scene
from task_learning.world.state import world_state_from_metadata

CALIBRATED = ("tidy_kitchen", "store_groceries", "organize_office")  # written against these
HELD_OUT = ("heldout_kitchen", "heldout_bedroom")
SCENES = CALIBRATED + HELD_OUT
CONDITIONS = ("TBP", "ST", "STS", "STAR", "STARS")


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
    kind = "calibrated (written against it)" if name in CALIBRATED else "HELD-OUT"
    print(f"\n== {name}: {len(scene.task_objects)} task objects, {kind}")
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
        print(f"{cond:9} {100 * ok / n:9.1f} {100 * usable / n:9.1f} {100 * in_tree / n:9.1f} {cands:6d} {calls:6d} {tokens:8d} "
              f"{time.perf_counter() - started:7.2f}")


def provider_speed() -> None:
    """Milliseconds per goal request of the bare provider (no client, no cache)."""
    from task_learning.llm.base import LLMRequest
    from task_learning.offline_model import OfflineProvider

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
    print("offline model inside STARS (deterministic, NOT a language model; written with the "
          "paper's tables at hand: calibrated scenes first, held-out scenes apart)")
    provider_speed()
    for name in args.scene or SCENES:
        run_scene(name, args.verbose)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
