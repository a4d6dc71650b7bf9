#!/usr/bin/env python3
"""Can the important tests fail? Replace the code each one tests with a stub that returns an
empty/default value, run the test, and expect it to fail; the source is restored after each case
(even on Ctrl-C). A test that still passes with its code stubbed out checks nothing.

    .venv/bin/python scripts/stub_check.py            # every case (ROS cases need
    scripts/isolated.sh .venv/bin/python scripts/stub_check.py --ros   #  their own network)
    .venv/bin/python scripts/stub_check.py --list

Exit status 0 when every stubbed test failed, 1 when one passed (listed).
"""
from __future__ import annotations

import argparse
import ast
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Case:
    test: str  # pytest node id(s), space separated
    path: str  # the source file of the code under test
    function: str  # its qualified name in that file ("Class.method" or "function")
    stub: str  # what the stub returns
    ros: bool = False


CASES = [
    # oversight: nothing unconfirmed moves the robot
    Case("test/oversight/test_oversight_flow.py::test_timeout_never_confirms",
         "task_learning/oversight/flow.py", "_timed_out", "False"),
    Case("test/oversight/test_oversight_flow.py::test_stars_o_mug_accepts_cupboard_and_closed_with_a_single_yes",
         "task_learning/oversight/flow.py", "_Dialogue.ask", "None"),
    Case("test/oversight/test_oversight_flow.py::test_tbp_o_unanalysed_options_are_analysed_before_the_user_judges_them",
         "task_learning/oversight/flow.py", "_Dialogue.fill_analysis", "None"),
    Case("test/oversight/test_oversight_queue.py::test_timeout_resolves_to_the_safe_default_and_is_never_consent",
         "task_learning/oversight/pending.py", "parse_safe_default", "None"),
    Case("test/oversight/test_oversight_memory.py::test_answered_question_is_answered_from_memory_and_timeouts_are_asked_again",
         "task_learning/kb/store.py", "KnowledgeBase.previous_answer", "None"),
    # knowledge base
    Case("test/kb/test_kb_store.py::test_killed_writer_loses_nothing_committed",
         "task_learning/kb/store.py", "KnowledgeBase.goals", "[]"),
    Case("test/planning/test_planning_loop.py::test_stars_o_completes_then_trial2_needs_no_llm_and_no_question",
         "task_learning/kb/store.py", "KnowledgeBase.goal_for", "None"),
    # grounding (goal analysis)
    Case("test/grounding/test_grounding_mug_example.py", "task_learning/grounding/analysis.py", "_check_affordances", "None"),
    Case("test/grounding/test_grounding_core.py::test_recorded_ai2thor_kitchen",
         "task_learning/grounding/analysis.py", "_Grounder.ground", "[]"),
    # STARS
    Case("test/stars/test_stars_tree.py::test_mean_probability_rule_from_level_one",
         "task_learning/stars/tree.py", "_mean", "0.0"),
    Case("test/stars/test_stars_selection.py::test_presentation_order_lowest_score_first_ties_by_discovery",
         "task_learning/stars/selection.py", "presentation_order", "[]"),
    Case("test/stars/test_stars_selection.py::test_parse_answer",
         "task_learning/stars/selection.py", "parse_answer", "(None, '')"),
    Case("test/stars/test_stars_mug.py::test_stars_repairs_and_selection_in_paper_order",
         "task_learning/stars/tree.py", "expand_steps", "[]"),
    # world
    Case("test/world/test_world_actions.py::test_navigate_then_pickup_and_put",
         "task_learning/world/symbolic.py", "SymbolicWorld._pickup", "None"),
    Case("test/world/test_world_completion.py::test_one_misplaced_object_is_39_of_40",
         "task_learning/world/completion.py", "_ancestors", "[]"),
    # BCR
    Case("test/bcr/test_bcr_engines.py::test_heuristic_solves_every_seeded_trial",
         "task_learning/bcr/engines.py", "HeuristicEngine._score", "()"),
    Case("test/bcr/test_bcr_tree.py::test_roots_are_the_achievers_and_candidates_the_leaves",
         "task_learning/bcr/tree.py", "CandidateTree.candidates", "[]"),
    # LLM client and replay
    Case("test/llm/test_llm_client.py::test_identical_concurrent_requests_make_one_call",
         "task_learning/llm/client.py", "LLMClient._cache_hit", "None"),
    Case("test/llm/test_llm_replay.py::test_record_then_replay_gives_identical_responses_without_calls",
         "task_learning/llm/replay.py", "ReplayProvider.lookup", "None"),
    Case("test/offline_model/test_offline_model_provider.py::test_same_request_twice_gives_identical_responses",
         "task_learning/offline_model/provider.py", "OfflineProvider.complete",
         "LLMResponse(text='')"),
    # the Fast DDS profile every node gets unless the user chose one
    Case("test/nodes/test_dds_profile.py::test_bringup_starts_every_node_with_the_profile",
         "task_learning/apps/dds_profile.py", "profile_env", "{}"),
    # a hung stop names itself from a thread holding the GIL, not from faulthandler's watchdog
    Case("test/project/test_stop_deadline.py::test_a_hung_stop_names_every_thread_while_another_still_runs_python",
         "task_learning/lifecycle/stop_deadline.py", "StopDeadline._expire", "None"),
    # ROS message conversion and the graph
    Case("test/nodes/test_ros_convert.py::test_goal_candidate_round_trip",
         "nodes/plumbing/convert.py", "goal_candidate_from_msg", "None"),
    Case("test/grounding/test_grounding_node.py::test_mug_example_through_the_service",
         "task_learning/grounding/analysis.py", "_check_affordances", "None", ros=True),
    Case("test/oversight/test_oversight_panel_ros.py::test_silent_operator_over_ros_confirms_nothing",
         "task_learning/oversight/flow.py", "_timed_out", "False", ros=True),
]


def _find(tree: ast.Module, qualname: str) -> ast.FunctionDef:
    scope: list[ast.stmt] = tree.body
    parts = qualname.split(".")
    for i, part in enumerate(parts):
        for node in scope:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == part:
                if i == len(parts) - 1:
                    assert isinstance(node, ast.FunctionDef), qualname
                    return node
                scope = node.body
                break
        else:
            raise LookupError(f"no {qualname}")
    raise LookupError(f"no {qualname}")


def stubbed(source: str, qualname: str, value: str) -> str:
    """The source with the function's body replaced by `return <value>`."""
    func = _find(ast.parse(source), qualname)
    lines = source.splitlines(keepends=True)
    first, last = func.body[0].lineno, func.body[-1].end_lineno or func.body[-1].lineno
    indent = " " * func.body[0].col_offset
    return "".join(lines[:first - 1] + [f"{indent}return {value}  # STUB\n"] + lines[last:])


def run_case(case: Case, python: str) -> tuple[bool, float, str]:
    """(the stubbed test failed, seconds, last line of pytest's output)."""
    path = ROOT / case.path
    original = path.read_text()
    started = time.monotonic()
    try:
        path.write_text(stubbed(original, case.function, case.stub))
        out = subprocess.run([python, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                              "-o", "addopts=", *case.test.split()],
                             cwd=ROOT, capture_output=True, text=True, timeout=900)
    finally:
        path.write_text(original)
    lines = [line for line in out.stdout.splitlines() if line.strip()]
    return out.returncode != 0, time.monotonic() - started, lines[-1] if lines else out.stderr[-200:]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ros", action="store_true", help="also the cases that run a ROS graph")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    parser.add_argument("-k", dest="only", default="", help="only the cases whose test or function has this text")
    args = parser.parse_args()
    cases = [c for c in CASES if (args.ros or not c.ros) and (args.only in c.test or args.only in c.function)]
    if args.list:
        for case in cases:
            print(f"{case.test}  <-  {case.path}:{case.function} returns {case.stub}")
        return 0
    survivors = []
    for number, case in enumerate(cases, start=1):
        failed, seconds, last = run_case(case, sys.executable)
        verdict = "fails (good)" if failed else "STILL PASSES"
        print(f"{number:2d}. {case.test}\n    stub {case.path}:{case.function} -> {case.stub}: "
              f"{verdict} in {seconds:.0f} s [{last}]", flush=True)
        if not failed:
            survivors.append(case)
    print(f"stub_check: {len(cases) - len(survivors)} of {len(cases)} stubbed tests failed")
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
