"""`task-learning experiment --paper llm-state`: the LLM-State paper's Tables I and II, each row beside the
paper's, the chosen methods (`--methods`, default all six) on every task, `--runs` runs per task
(default 5: one per map, the paper's x/5), at `--temperature` (default 0; the paper does not state
its own), in the project's or the paper's words (`--prompts`), with a plot (`--plot FILE`).
`--tasks` and `--maps` run a subset (the held-out runs are then left out). With a language model
(`--llm local`, ...) each row is printed beside the offline stand-in's row for the same runs (run
in the same command, labelled: not a language model) and the paper's, followed by each method's
runs, wall time, LLM calls, tokens and the machine's load; `--answers` (auto: bounded with
`--llm local`) says how a base model's answers are bounded (llm/answer_bounds.py).
Table III (the real robot) is not reproduced."""
from __future__ import annotations

import argparse
import json
import sys
import textwrap

from task_learning.experiments.llm_state_tables import (
    ALL_METHODS,
    HELDOUT_METHODS,
    OFFLINE_NOTE,
    STANDIN_NOTE,
    TABLE_II_METHODS,
    TableRun,
    check_subset,
    format_heldout,
    format_table_i,
    format_table_ii,
    format_trials,
    heldout_to_dict,
    plot_tables,
    run_heldout,
    run_tables,
)
from task_learning.experiments.table import describe_model
from task_learning.llm_state.household import load_household

NO_TABLE_III = ("Table III (the real Fetch robot, \"heat some food from the fridge and bring it to the sofa\", 3 trials) "
                "is not reproduced: there is no robot here.")


def parse_methods(text: str | None) -> list[str]:
    """Comma-separated methods, in the tables' order; ValueError naming the unknown ones."""
    if not text:
        return list(ALL_METHODS)
    asked = [m.strip() for m in text.split(",") if m.strip()]
    unknown = [m for m in asked if m not in ALL_METHODS]
    if unknown or not asked:
        raise ValueError(f"--methods: unknown method(s) {', '.join(unknown) or '(none given)'} "
                         f"(known: {', '.join(ALL_METHODS)})")
    return [m for m in ALL_METHODS if m in asked]


def _names(text: str | None) -> list[str] | None:
    return [n.strip() for n in text.split(",") if n.strip()] if text else None


def run(args: argparse.Namespace) -> int:
    from task_learning.apps.cli.options import llm_options
    from task_learning.experiments.machine import LoadSampler
    from task_learning.llm.answer_bounds import resolve
    from task_learning.llm.client import make_client
    from task_learning.llm.local_provider import shared_server
    from task_learning.llm.routing import describe_routes, routes
    from task_learning.llm_state.prompts import PROMPT_TYPES

    house = load_household()
    tasks, maps = _names(getattr(args, "tasks", None)), _names(getattr(args, "maps", None))
    try:
        methods = parse_methods(args.methods)
        check_subset(house, tasks, maps)
    except ValueError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    from task_learning.apps.cli.options import grounded_or_free

    offline = args.llm == "offline"
    answers = resolve(getattr(args, "answers", "auto"), args.llm)
    report = None if args.json else (lambda msg: print(msg, file=sys.stderr))
    subset = bool(tasks or maps)
    with LoadSampler() as load, shared_server(args.llm, llm_options(args)) as options:
        client = make_client(args.llm, **options)
        if not args.json and not offline:
            print(f"LLM-State prompts: {describe_routes(client, PROMPT_TYPES)} (config/llm.yaml "
                  f"openai.selection_prompt_types); answers: {answers}", file=sys.stderr)
        with client:  # a local server started for this command stops at the end
            decoding = grounded_or_free(args, client)
            table = run_tables(house, client, methods, runs=args.runs, temperature=args.temperature,
                               wording=args.prompts, report=report, tasks=tasks, maps=maps, answers=answers,
                               sample_load=not offline, decoding=decoding)
            heldout = {} if subset else run_heldout(house, client, methods, temperature=args.temperature,
                                                    wording=args.prompts, answers=answers, decoding=decoding)
        llm_label = getattr(client.provider, "label", args.llm)
        routing = routes(client, PROMPT_TYPES)
    # Beside a language model, the offline stand-in on the same runs (seconds; not a language model).
    standin = None
    if not offline:
        with make_client("offline") as offline_client:
            standin = run_tables(house, offline_client, methods, runs=args.runs, temperature=args.temperature,
                                 wording=args.prompts, tasks=tasks, maps=maps)
    model = "" if offline else describe_model(args.llm, options)
    if args.json:
        print(json.dumps({"paper": "llm-state", "llm": llm_label,
                          "routing": routing, "note": OFFLINE_NOTE if offline else STANDIN_NOTE,
                          "table_iii": NO_TABLE_III, **table.to_dict(house),
                          **({"model": model, "wall_s": round(load.wall_s, 1), "machine_during_command": load.summary(),
                              "trials": {m: table.trials(m) for m in table.methods},
                              "offline_standin": standin.to_dict(house),
                              "model_answers": _answers(table)} if standin is not None else {}),
                          "heldout": heldout_to_dict(heldout)}, indent=2))
    else:
        print(f"Runs per task: {args.runs} (run i on map i mod {len(table.maps)}: {', '.join(table.maps)}); "
              f"temperature {args.temperature:g}; prompts: {args.prompts}; answers: {answers}")
        print(format_table_i(house, table, standin))
        if any(m in methods for m in TABLE_II_METHODS):
            print()
            print(format_table_ii(house, table, standin))
        if heldout and any(m in methods for m in HELDOUT_METHODS):
            print()
            print(format_heldout(house, heldout))
        if subset:
            print("\nHeld-out runs left out: --tasks/--maps chose a subset.")
        if standin is not None:
            print()
            print(format_trials(table, standin))
            print("\n" + load.describe_command(model))
        print("\n" + textwrap.fill(NO_TABLE_III, width=100))
        if offline:
            print(textwrap.fill("Note: " + OFFLINE_NOTE, width=100))
        else:
            print(textwrap.fill("Note: " + STANDIN_NOTE, width=100))
    if args.plot:
        print(f"plot: {plot_tables(house, table, args.plot, llm=args.llm)}", file=sys.stderr)
    return 0


def _answers(table: "TableRun") -> list[dict[str, object]]:
    """Each run's first answers from the model (what it wrote, as the parser read it) and the
    actions they led to, with the world's reason for each failure."""
    return [{"task": r.task, "map": r.map, "method": r.method, "end_reason": r.end_reason, "answers": r.transcript,
             "dropped_by_kind": dict(r.dropped), "actions": list(r.action_log)}
            for rs in table.runs.values() for r in rs]
