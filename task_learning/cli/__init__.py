"""`task-learning` command line. Each subcommand lives in its own module under task_learning.cli
and exposes `register(subparsers)`, which adds its parser and sets `func(args) -> int`.

Errors the core raises on bad input (TaskLearningError) are printed as one clear line, exit 2,
never as a traceback.
"""
from __future__ import annotations

import argparse
import importlib
import logging
import sys

from task_learning.errors import TaskLearningError

# Modules providing subcommands; a module missing from the tree is skipped, so components land
# independently.
SUBCOMMAND_MODULES = (
    "task_learning.cli.scene_cmd",
    "task_learning.cli.bringup_cmd",
    "task_learning.cli.analyze_cmd",
    "task_learning.cli.elicit_cmd",
    "task_learning.cli.operator_cmd",
    "task_learning.cli.bcr_cmd",
    "task_learning.cli.run_cmd",
    "task_learning.cli.kb_cmd",
    "task_learning.cli.experiment_cmd",
    "task_learning.cli.demo_cmd",
    "task_learning.cli.perceive_cmd",
    "task_learning.cli.bag_cmd",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="task-learning",
        description="A robot learns household tasks by asking an LLM and a human (STARS, BCR).",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue
            raise
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except TaskLearningError as exc:
        print(f"task-learning {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `task-learning ... | head`: the reader left, which is not an error
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
