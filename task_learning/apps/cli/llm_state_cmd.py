"""`task-learning llm-state`: run LLM-State (the LLM-State paper) or one of its baselines on a household task.

    task-learning llm-state --scene map1 --task heat_milk --method ours --llm offline --trials 5 --json

`--scene` is a map of config/llm_state/households.yaml (map1..map5, or a held-out map by name) or
`all` (every one of the paper's maps, map1..map5, `--trials` runs on each). `--backend symbolic|ai2thor` runs the task instead in the FloorPlan
config/llm_state/thor_tasks.yaml names for it (llm_state/thor_tasks.py; tasks no FloorPlan
supports end with the reason). JSON: {"trials": [{"success", "steps", "llm_calls", "tokens", "replans",
"dropped_calls", "dropped_by_kind", "unknown_object_calls", "end_reason", "map", ...}],
"summary": {...}, "llm": ..., "note": ...}. `--show-state` adds each trial's final open state.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap
from typing import Any

from task_learning.apps.cli.options import add_llm_arguments, bounded_float, bounded_int, grounded_or_free, llm_options
from task_learning.errors import TaskLearningError
from task_learning.experiments.llm_state_tables import OFFLINE_NOTE
from task_learning.llm.answer_bounds import ANSWER_PROTOCOLS, resolve
from task_learning.llm.prompt_templates import PROMPT_WORDINGS
from task_learning.llm_state.agent import METHODS, LLMStateAgent
from task_learning.llm_state.household import HouseholdWorld, load_household
from task_learning.llm_state.thor_tasks import THOR_BACKENDS, load_thor_tasks, run_thor_trial

MAX_CAP = 1000


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "llm-state",
        help="run LLM-State (the LLM-State paper) or a baseline on an open-world household task",
        description="Algorithm 1 of the LLM-State paper: attention, state estimation from the whole history, a "
                    "plan of fewer than 20 primitives, re-planning on the first failure.",
    )
    parser.add_argument("--scene", default=None,
                        help="household map (map1..map5, a held-out map by name) or 'all' (map1..map5, --trials "
                             "runs on each; default map1); with --backend symbolic|ai2thor "
                             "the task's project scene (config/llm_state/thor_tasks.yaml) unless given")
    parser.add_argument("--backend", choices=("household",) + THOR_BACKENDS, default="household",
                        help="household: the LLM-State paper's open-world household (default); symbolic / ai2thor: the task "
                             "in an AI2-THOR FloorPlan, on recorded metadata / through the ai2thor Controller")
    parser.add_argument("--task", required=True, help="task name (config/llm_state/tasks.yaml)")
    parser.add_argument("--method", choices=METHODS, default="ours")
    add_llm_arguments(parser)
    parser.add_argument("--trials", type=bounded_int(1, 1000), default=1,
                        help="number of runs (1-1000); with --scene all, on every map")
    parser.add_argument("--hands", type=bounded_int(1, 4), default=None,
                        help="the robot's hands (default 2; AI2-THOR's agent has 1)")
    parser.add_argument("--cap", type=bounded_int(1, MAX_CAP), default=None,
                        help="step cap (default: the task's, from Table I)")
    parser.add_argument("--temperature", type=bounded_float(0.0, 2.0), default=0.0,
                        help="the model's temperature (default 0; the paper does not state its own)")
    parser.add_argument("--prompts", choices=PROMPT_WORDINGS, default="own",
                        help="own (default): the project's prompt wording; paper: the appendix's prompts verbatim "
                             "(config/llm_state/paper_prompts.yaml; InnerMonologue-W and ProgPrompt keep ours)")
    parser.add_argument("--answers", choices=ANSWER_PROTOCOLS, default="auto",
                        help="bounded: a base model's answers (a cue, stop sequences, max_tokens that fit the parser: "
                             "config/prompts/bounded_answers.yaml); paper: each prompt as is, 1,500 tokens, no stop; "
                             "auto (default): bounded with --llm local, paper otherwise")
    parser.add_argument("--show-state", action="store_true", help="add each trial's final state and actions")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    house = load_household()
    task = house.task(args.task)
    on_thor = args.backend != "household"
    maps = [""]  # AI2-THOR: the task's one FloorPlan
    if on_thor:
        thor_task = load_thor_tasks().task(task.name)
        if args.hands not in (None, 1):
            raise TaskLearningError(f"--hands {args.hands}: AI2-THOR's agent holds one object (--backend {args.backend})")
        if args.scene not in (None, thor_task.scene):
            raise TaskLearningError(f"--scene {args.scene}: task {task.name!r} runs in {thor_task.scene} on an "
                                    "AI2-THOR world (config/llm_state/thor_tasks.yaml)")
        args.scene, args.hands = thor_task.scene, 1
    else:
        args.scene, args.hands = args.scene or "map1", args.hands or 2
        maps = list(house.paper_maps) if args.scene == "all" else [house.map(args.scene).name]
    from task_learning.llm.client import make_client
    from task_learning.llm.routing import describe_routes, routes
    from task_learning.llm_state.prompts import PROMPT_TYPES

    answers = resolve(args.answers, args.llm)
    client = make_client(args.llm, **llm_options(args))
    if not args.json and args.llm != "offline":
        print(f"LLM-State prompts: {describe_routes(client, PROMPT_TYPES)} (config/llm.yaml "
              "openai.selection_prompt_types)", file=sys.stderr)
    results = []
    decoding = grounded_or_free(args, client)
    if on_thor and decoding == "grounded":
        print("--decoding grounded: LLM-State on AI2-THOR has no grounded form yet; free decoding", file=sys.stderr)
    with client:  # a local server started for this command stops at the end
        for map_name in maps:
            for i in range(args.trials):
                if on_thor:
                    results.append(run_thor_trial(client, args.method, task, thor_task, backend=args.backend,
                                                  cap=args.cap, trial=i, temperature=args.temperature,
                                                  wording=args.prompts, answers=answers))
                else:
                    world = HouseholdWorld(house, map_name, task, hands=args.hands)
                    agent = LLMStateAgent(client, args.method, temperature=args.temperature, wording=args.prompts,
                                          answers=answers, decoding=decoding)
                    results.append(agent.run(world, task, cap=args.cap, trial=i))
                client.raise_if_unavailable()
    offline = args.llm == "offline"
    trials = []
    for r in results:
        data = r.to_dict()
        if not args.show_state:
            data.pop("action_log"), data.pop("final_state")
        trials.append(data)
    n = len(results)
    summary = {"task": task.name, "goal": task.goal, "method": args.method, "scene": args.scene,
               "backend": args.backend,
               "successes": sum(r.success for r in results), "trials": n,
               "mean_steps": round(sum(r.steps for r in results) / n, 2),
               "llm_calls": sum(r.llm_calls for r in results), "tokens": sum(r.tokens for r in results),
               "dropped_calls": sum(r.dropped_calls for r in results), "cap": args.cap or task.cap,
               "hands": args.hands, "temperature": args.temperature, "prompts": args.prompts, "answers": answers}
    try:
        if args.json:
            print(json.dumps({"trials": trials, "summary": summary,
                              "llm": getattr(client.provider, "label", args.llm),
                              "routing": routes(client, PROMPT_TYPES),
                              "note": OFFLINE_NOTE if offline else ""}, indent=2))
        else:
            for r in results:
                print(f"{'ok  ' if r.success else 'FAIL'} {r.map}: {r.steps} steps, {r.llm_calls} LLM calls, "
                      f"{r.tokens} tokens, {r.replans} re-plans, {r.dropped_calls} dropped calls ({r.end_reason})")
                if args.show_state:
                    for line in r.action_log:
                        print("    " + line)
                    print("    state: " + json.dumps(r.state))
            print(f"{task.name} [{args.method}]: {summary['successes']}/{n} reached the goal, "
                  f"mean {summary['mean_steps']:.1f} steps")
            if offline:
                print("\n" + textwrap.fill("Note: " + OFFLINE_NOTE, width=100))
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0
