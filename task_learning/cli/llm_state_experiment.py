"""`task-learning experiment --paper llm-state`: seed 003's Tables I and II, each row beside the
paper's, every method on every task and map (5 runs per cell), with a plot (`--plot FILE`)."""
from __future__ import annotations

import argparse
import json
import sys
import textwrap

from task_learning.experiments.llm_state_tables import (
    OFFLINE_NOTE,
    TABLE_I_METHODS,
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


def run(args: argparse.Namespace) -> int:
    from task_learning.cli.options import llm_options
    from task_learning.llm.client import make_client

    house = load_household()
    client = make_client(args.llm, **llm_options(args))
    methods = list(dict.fromkeys(TABLE_I_METHODS + TABLE_II_METHODS))
    report = None if args.json else (lambda msg: print(msg, file=sys.stderr))
    with client:  # a local server started for this command stops at the end
        table = run_tables(house, client, methods, report=report)
        heldout = run_heldout(house, client)
    offline = args.llm == "offline"
    if args.json:
        print(json.dumps({"paper": "llm-state", "llm": getattr(client.provider, "label", args.llm),
                          "note": OFFLINE_NOTE if offline else "", **table.to_dict(house),
                          "heldout": heldout_to_dict(heldout)}, indent=2))
    else:
        print(format_table_i(house, table))
        print()
        print(format_table_ii(house, table))
        print()
        print(format_heldout(house, heldout))
        if offline:
            print("\n" + textwrap.fill("Note: " + OFFLINE_NOTE, width=100))
    if args.plot:
        print(f"plot: {plot_tables(house, table, args.plot)}", file=sys.stderr)
    return 0
