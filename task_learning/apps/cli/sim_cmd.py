"""`task-learning sim`: start the simulated robot (the `task-learning-sim` program) in the foreground.

The simulator is robot-side: its package (task_learning_sim, sim/) is never imported by the stack,
applications included (test/project/test_layers.py). This command only runs its program, the way
an integrator starts a robot's drivers beside the stack; its arguments pass through unchanged
(`task-learning sim --robot fetch --scene store_groceries`, `--check`, `--ros-args ...`).
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path
from typing import Any

PROGRAM = "task-learning-sim"


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        # every argument goes to the simulator's own parser: none is an option here ('+' prefixes)
        "sim", add_help=False, prefix_chars="+",
        help="run the simulated robot: a MuJoCo Fetch behind the standard ROS 2 interfaces (docs/sim.md)",
        description=f"Runs {PROGRAM} with the arguments given (see {PROGRAM} --help).",
    )
    parser.add_argument("arguments", nargs=argparse.REMAINDER)
    parser.set_defaults(func=run)


def program() -> str | None:
    """The simulator's executable: beside this Python's (the venv's bin), else on PATH."""
    beside = Path(sys.executable).parent / PROGRAM
    return str(beside) if beside.is_file() else shutil.which(PROGRAM)


def run(args: argparse.Namespace) -> int:
    path = program()
    if path is None:
        print(f"task-learning sim: no {PROGRAM} program (run `make setup`)", file=sys.stderr)
        return 1
    sys.stdout.flush()
    os.execv(path, [PROGRAM, *args.arguments])  # the simulator takes over this process (signals included)
    return 0  # not reached
