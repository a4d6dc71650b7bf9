"""`task-learning experiment --paper llm-state`: the LLM-State paper's Tables I and II, each row beside the
paper's, the chosen methods (`--methods`, default all six) on every task, `--runs` runs per task
(default 5: one per map, the paper's x/5), at `--temperature` (default 0; the paper does not state
its own), in the project's or the paper's words (`--prompts`), with a plot (`--plot FILE`).
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
    TABLE_II_METHODS,
    format_table_i,
    format_heldout,
    format_table_ii,
    heldout_to_dict,
    plot_tables,
    run_heldout,
    run_tables,
)
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


def run(args: argparse.Namespace) -> int:
    from task_learning.apps.cli.options import llm_options
    from task_learning.llm.client import make_client
    from task_learning.llm.routing import describe_routes, routes
    from task_learning.llm_state.prompts import PROMPT_TYPES

    try:
        methods = parse_methods(args.methods)
    except ValueError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    house = load_household()
    client = make_client(args.llm, **llm_options(args))
    offline = args.llm == "offline"
    if not args.json and not offline:
        print(f"LLM-State prompts: {describe_routes(client, PROMPT_TYPES)} (config/llm.yaml "
              "openai.selection_prompt_types)", file=sys.stderr)
    report = None if args.json else (lambda msg: print(msg, file=sys.stderr))
    with client:  # a local server started for this command stops at the end
        table = run_tables(house, client, methods, runs=args.runs, temperature=args.temperature,
                           wording=args.prompts, report=report)
        heldout = run_heldout(house, client, methods, temperature=args.temperature, wording=args.prompts)
    if args.json:
        print(json.dumps({"paper": "llm-state", "llm": getattr(client.provider, "label", args.llm),
                          "routing": routes(client, PROMPT_TYPES), "note": OFFLINE_NOTE if offline else "",
                          "table_iii": NO_TABLE_III, **table.to_dict(house),
                          "heldout": heldout_to_dict(heldout)}, indent=2))
    else:
        print(f"Runs per task: {args.runs} (run i on map i mod {len(table.maps)}); temperature {args.temperature:g}; "
              f"prompts: {args.prompts}")
        print(format_table_i(house, table))
        if any(m in methods for m in TABLE_II_METHODS):
            print()
            print(format_table_ii(house, table))
        if any(m in methods for m in HELDOUT_METHODS):
            print()
            print(format_heldout(house, heldout))
        print("\n" + textwrap.fill(NO_TABLE_III, width=100))
        if offline:
            print(textwrap.fill("Note: " + OFFLINE_NOTE, width=100))
    if args.plot:
        print(f"plot: {plot_tables(house, table, args.plot, llm=args.llm)}", file=sys.stderr)
    return 0
