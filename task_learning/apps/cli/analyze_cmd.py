"""`task-learning analyze`: would the robot understand, ground and achieve this goal sentence?

    task-learning analyze --scene tidy_kitchen --object "mug in dish rack" --json \
        "the goal is that the mug is in the cupboard and the cupboard is closed"

Analyses against the scene's symbolic world at its start. The sentence "-" reads one sentence per
line from stdin (one JSON object per line with --json). Exit status 0 when the analysis ran (viable
or not), 2 for a bad scene or object name.
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from task_learning.grounding import GoalAnalysis, GroundingKnowledge, analyze_goal
from task_learning.grounding.scene_state import resolve_object, scene_metadata
from task_learning.world.state import world_state_from_metadata


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "analyze", help="analyse a goal sentence (unknown words, grounding, affordances)",
        description="Analyse one goal sentence against a scene, as STARS's Analysis does: viable, "
                    "or the mismatches (unknown_word, uninterpretable, ungrounded_object, "
                    "affordance_mismatch) with the robot's repair feedback.")
    parser.add_argument("--scene", required=True, help="scene name (tidy_kitchen) or scene file")
    parser.add_argument("--object", default="",
                        help="the task object in context: an id (Mug|2), a type naming one object, "
                             "or '<type> in|on <place>' (mug in dish rack)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("sentence", help='the goal sentence, or "-" for one per line on stdin')
    parser.set_defaults(func=run)


def analysis_json(analysis: GoalAnalysis, context_id: str) -> dict[str, Any]:
    return {"sentence": analysis.sentence, "object": context_id, "viable": analysis.viable,
            "mismatches": [{"kind": m.kind.value, "detail": m.detail, "feedback": m.feedback,
                            "subject": m.subject} for m in analysis.mismatches],
            "literals": [lit.to_dict() for lit in analysis.literals],
            "goal": [str(lit) for lit in analysis.literals],
            "feedback": analysis.feedback}


def _print_human(analysis: GoalAnalysis) -> None:
    if analysis.viable:
        print("viable: " + ", ".join(str(lit) for lit in analysis.literals))
        return
    for m in analysis.mismatches:
        print(f"not viable: {m.kind.value}: {m.detail}")
    print(f"feedback: {analysis.feedback}")


def run(args: argparse.Namespace) -> int:
    metadata = scene_metadata(args.scene)
    state = world_state_from_metadata(metadata)
    context_id = resolve_object(metadata, args.object) if args.object else ""
    knowledge = GroundingKnowledge.load()
    if args.sentence == "-":  # undecodable bytes become U+FFFD: an unknown word, not a crash
        text = sys.stdin.buffer.read().decode("utf-8", errors="replace")
        sentences = [line for line in text.splitlines() if line.strip()]
    else:
        sentences = [args.sentence]
    for sentence in sentences:
        analysis = analyze_goal(sentence, state, context_id or None, knowledge)
        if args.json:
            print(json.dumps(analysis_json(analysis, context_id), ensure_ascii=True))
        else:
            _print_human(analysis)
    return 0
