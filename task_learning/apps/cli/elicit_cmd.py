"""`task-learning elicit`: elicit a goal for one scene object with STARS (or an ablation).

    task-learning elicit --scene tidy_kitchen --object "mug in dish rack" --condition STARS --llm offline --json

JSON output: {"candidates": [{"text", "score", "source", "viable", "mismatches", ...}], "chosen":
{...} or null, "usage": {"calls", "prompt_tokens", "completion_tokens", ...}, plus outcome,
condition, object, counts, stages, selection (and oversight for +O). `candidates` lists every
distinct response retrieved (for ST the whole tree, for STARS also the repairs).
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from task_learning.apps.cli.options import (
    MAX_REQUESTS,
    MAX_WORKERS,
    add_llm_arguments,
    bounded_int,
    decoding_of,
    llm_options,
)
from task_learning.errors import TaskLearningError
from task_learning.stars.conditions import flags, parse_condition
from task_learning.stars.tree import TreeSettings


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "elicit", help="elicit a goal for one object (STARS search tree, analysis, repair, selection)",
        description="Retrieve goal descriptions for one object of a scene from an LLM, the STARS way.")
    parser.add_argument("--scene", required=True, help="scene name (tidy_kitchen, ...) or file")
    parser.add_argument("--object", required=True,
                        help='object id ("Mug|2"), a type naming one object, or "<type> in|on <place>"')
    parser.add_argument("--condition", default="STARS",
                        help="TBP, TBP+O, ST, STS, STAR, STARS, STARS* (tidy kitchen), STARS+O, STARS+CTX (default STARS)")
    add_llm_arguments(parser)
    parser.add_argument("--task", default="", help="task name (default: the scene's task)")
    parser.add_argument("--max-workers", type=bounded_int(1, MAX_WORKERS), default=8, help="concurrent requests per tree level")
    parser.add_argument("--max-requests", type=bounded_int(1, MAX_REQUESTS), default=1500, help="request cap for this object")
    parser.add_argument("--answers", default="",
                        help="+O conditions: scripted operator answers, comma separated "
                             "(default: the simulated user of the scene)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.set_defaults(func=run)


def _resolve(scene: Any, metadata: dict[str, Any], name: str) -> str:
    from task_learning.world.resolve import resolve_object

    return resolve_object(metadata, name)


def run(args: argparse.Namespace) -> int:
    from task_learning.llm.client import make_client
    from task_learning.llm.constraints import effective_decoding, parse_decoding
    from task_learning.planning.session import check_run_config
    from task_learning.stars.elicit import ElicitationSetup, elicit_goal
    from task_learning.world.scene import load_scene

    condition = parse_condition(args.condition)
    if args.max_workers < 1 or args.max_requests < 1:
        raise TaskLearningError("--max-workers and --max-requests must be at least 1")
    scene = load_scene(args.scene)
    check_run_config()
    metadata = {"sceneName": scene.name, "objects": scene.objects}
    object_id = _resolve(scene, metadata, args.object)
    operator = None
    if flags(condition).oversight:
        operator = _operator(args.answers, scene, metadata, object_id)
    client = make_client(args.llm, **llm_options(args))
    decoding, notice = effective_decoding(client.provider, parse_decoding(decoding_of(args)))
    if notice:
        print(notice, file=sys.stderr)
    try:
        result = elicit_goal(args.task or scene.task, object_id, metadata, scene, condition, client,
                             setup=ElicitationSetup(settings=TreeSettings(max_workers=args.max_workers,
                                                                          max_requests=args.max_requests),
                                                    operator=operator, decoding=decoding))
        client.raise_if_unavailable()
    finally:
        closer = getattr(client, "close", None)
        if callable(closer):
            closer()
    if args.json:
        json.dump(result.to_dict(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        _print_human(result)
    return 0 if result.chosen is not None else 1


def _operator(answers: str, scene: Any, metadata: dict[str, Any], object_id: str) -> Any:
    if answers.strip():
        from task_learning.oversight.operator import ScriptedOperator

        return ScriptedOperator([a.strip() for a in answers.split(",") if a.strip()])
    from task_learning.oversight.simulated import SimulatedOperator

    return SimulatedOperator.from_scene(scene)


def _print_human(result: Any) -> None:
    from task_learning.stars.report import selection_line

    print(f"{result.condition.value} for {result.object_id} ({result.context.description}): {result.outcome}")
    for cand in result.candidates:
        mark = {True: "viable", False: "unviable", None: "-"}[cand.viable]
        why = "; ".join(m.feedback or m.detail for m in cand.mismatches)
        print(f"  #{cand.candidate_id:<3} {cand.score:.4f} {cand.source.value:<14} {mark:<8} {cand.text}"
              + (f"  [{why}]" if why else ""))
    if result.distribution:
        from task_learning.stars.grounded import describe_distribution

        print(f"grounded distribution: {describe_distribution(result.distribution, limit=8)}")
    if result.selection is not None:
        print(selection_line(result.selection))
    if result.oversight is not None:
        print(f"oversight: {result.oversight.status.value}")
        for turn in result.oversight.transcript:
            print(f"  {turn}")
    if result.chosen is not None:
        print(f"chosen: {result.chosen.text} ({result.chosen.score:.4f})")
    u = result.usage
    print(f"usage: {u.calls} calls, {u.prompt_tokens} prompt + {u.completion_tokens} completion tokens,"
          f" {u.cache_hits} cache hits, {u.failures} failures")
    for err in result.errors:
        print(f"error: {err}")
