"""`task-learning bringup`: start the ROS 2 nodes as OS processes with the parameters in config/
(the no-ROS-install twin of `ros2 launch task_learning task_learning.launch.py`)."""
from __future__ import annotations

import argparse
import logging

from task_learning.apps import bringup
from task_learning.world.factory import BACKENDS


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "bringup", help="start the ROS 2 nodes as separate processes (Ctrl-C stops them)",
        description="Start the nodes listed in config/bringup.yaml, each as its own OS process with "
                    "its parameter file from config/nodes/. Ctrl-C or SIGTERM stops them cleanly; a "
                    "node that dies is reported with its exit code.")
    parser.add_argument("--nodes", nargs="+", metavar="NODE",
                        help="only these nodes (names from config/bringup.yaml; default: all but those with "
                             "default: false, e.g. anticipation)")
    parser.add_argument("--scene", help="scene for every node that takes one (e.g. tidy_kitchen)")
    parser.add_argument("--backend", choices=BACKENDS, help="world backend for perception")
    parser.add_argument("--db", help="knowledge base shared by the planner, oversight, anticipation and web_operator nodes")
    parser.add_argument("--param", action="append", default=[], metavar="NODE.NAME:=VALUE",
                        help="a parameter for one node, e.g. planner.condition:=STARS (repeatable)")
    parser.add_argument("--llm", default="", help="LLM of every node that has one: offline | openai | local | "
                        "replay:FILE (default: as in config/nodes/); local also starts the llm_server node "
                        "(llama-server with the installed model) unless --base-url names a running one")
    parser.add_argument("--llm-model", default="", metavar="NAME",
                        help="completions model (openai), or the GGUF file llm_server serves (local)")
    parser.add_argument("--llm-selection-model", default="", metavar="NAME",
                        help="model for selection and chat prompts (openai)")
    parser.add_argument("--base-url", default="", metavar="URL",
                        help="the LLM endpoint (openai), or a running llama-server (local)")
    parser.add_argument("--decoding", default="", choices=("", "auto", "free", "grounded"),
                        help="decoding of every node with an LLM: free (the papers' protocols), grounded "
                             "(answers constrained to what the robot can ground) or auto (grounded with "
                             "local, free otherwise); default: as in config/nodes/ (auto); docs/llm.md")
    parser.add_argument("--config", help="bring-up file (default: config/bringup.yaml)")
    parser.add_argument("--keep-going", action="store_true",
                        help="keep the other nodes running when one dies")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    logging.getLogger(bringup.__name__).setLevel(logging.INFO)
    config = bringup.load_bringup_config(args.config)
    overrides: dict[str, object] = {"scene": args.scene, "backend": args.backend}
    if args.db:
        overrides.update({"planner.db_path": args.db, "oversight.db_path": args.db,
                          "anticipation.db_path": args.db, "web_operator.db_path": args.db})
    for item in args.param:
        key, sep, value = item.partition(":=")
        if not sep or "." not in key:
            parser_error = f"--param {item!r}: expected NODE.NAME:=VALUE"
            raise bringup.TaskLearningError(parser_error)
        overrides[key] = value
    nodes, wiring = bringup.llm_wiring(config, args.nodes, args.llm, base_url=args.base_url,
                                       model=args.llm_model, selection_model=args.llm_selection_model,
                                       decoding=args.decoding)
    return bringup.run_bringup(nodes, {**wiring, **overrides}, config=config,
                               on_node_exit="continue" if args.keep_going else None)
