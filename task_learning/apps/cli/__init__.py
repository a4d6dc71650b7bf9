"""`task-learning` command line. Each subcommand lives in its own module under task_learning.apps.cli
and exposes `register(subparsers)`, which adds its parser and sets `func(args) -> int`.

Errors the core raises on bad input (TaskLearningError), bad options (argparse), and file or
database errors are printed as one clear line, exit 2, never as a traceback; anything else (a bug)
is one line too, exit 1, with the traceback only under -v. While a command runs, stdout and
stderr strip terminal escape sequences and control characters from what it echoes.
"""
from __future__ import annotations

import argparse
import importlib
import logging
import os
import sqlite3
import sys
from typing import Any, NoReturn

from task_learning.apps.cli.options import PrintableStream, printable
from task_learning.errors import TaskLearningError

# Modules providing subcommands; a module missing from the tree is skipped, so components land
# independently.
SUBCOMMAND_MODULES = (
    "task_learning.apps.cli.scene_cmd",
    "task_learning.apps.cli.bringup_cmd",
    "task_learning.apps.cli.analyze_cmd",
    "task_learning.apps.cli.elicit_cmd",
    "task_learning.apps.cli.operator_cmd",
    "task_learning.apps.cli.bcr_cmd",
    "task_learning.apps.cli.run_cmd",
    "task_learning.apps.cli.kb_cmd",
    "task_learning.apps.cli.experiment_cmd",
    "task_learning.apps.cli.sweep_cmd",
    "task_learning.apps.cli.demo_cmd",
    "task_learning.apps.cli.faults_cmd",
    "task_learning.apps.cli.perceive_cmd",
    "task_learning.apps.cli.bag_cmd",
    "task_learning.apps.cli.episode_cmd",
    "task_learning.apps.cli.llm_state_cmd",
    "task_learning.apps.cli.anticipate_cmd",
    "task_learning.apps.cli.bootstrap_cmd",
    "task_learning.apps.cli.llm_cmd",
    "task_learning.apps.cli.sim_cmd",
)


class OneLineParser(argparse.ArgumentParser):
    """An argparse parser whose errors are one line (no usage dump) and exit 2; subparsers too.

    Flag combinations that cannot work are declared where the options are (`requires`,
    `excludes`) and refused here, after parsing and before anything runs: a flag that needs
    another must not quietly do something else without it (`anticipate --graph` without
    `--robot` ran the in-process day)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._combinations: list[tuple[str, tuple[str, ...], bool, str]] = []

    def requires(self, option: str, *needed: str, why: str = "") -> None:
        """`option` given without each of `needed` ('--robot', or '--oversight=ros' for a value)
        is refused with one line (and `why`)."""
        self._combinations.append((option, needed, True, why))

    def excludes(self, option: str, *others: str, why: str = "") -> None:
        """`option` given together with any of `others` is refused with one line (and `why`)."""
        self._combinations.append((option, others, False, why))

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        parsed, extras = super().parse_known_args(args, namespace)
        for option, others, required, why in self._combinations:
            if not self._given(parsed, option):
                continue
            bad = [o for o in others if self._given(parsed, o) != required]
            if bad:
                verb = "needs" if required else "cannot be combined with"
                shown = " ".join(o.replace("=", " ") for o in bad)
                self.error(f"{option.replace('=', ' ')} {verb} {shown}" + (f" ({why})" if why else ""))
        return parsed, extras

    def _given(self, parsed: argparse.Namespace, option: str) -> bool:
        """Whether `option` ('--x', or '--x=value') was given: its value differs from the default
        (or equals `value`)."""
        name, _, value = option.partition("=")
        action = self._option_string_actions[name]
        current = getattr(parsed, action.dest, None)
        return current == value if value else current not in (None, False, action.default)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {printable(message)} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="task-learning",
        description="A robot learns household tasks by asking an LLM and a human (STARS, BCR).",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
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


def _version() -> str:
    """The installed distribution's version (setup.cfg), or the package's when not installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("task_learning")
    except PackageNotFoundError:
        import task_learning

        return str(getattr(task_learning, "__version__", "unknown"))


def main(argv: list[str] | None = None) -> int:
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = PrintableStream(out), PrintableStream(err, "standard error")
    try:
        return _main(argv)
    except KeyboardInterrupt:  # Ctrl-C during a command, or while build_parser imports the subcommands
        return 130
    finally:
        sys.stdout, sys.stderr = out, err


def _main(argv: list[str] | None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # a bad option (one line printed) or --help: an exit code, not a raise
        return exc.code if isinstance(exc.code, int) else 2
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        code = int(args.func(args) or 0)
        _flush_output()
        return code
    except TaskLearningError as exc:
        print(f"task-learning {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except (OSError, sqlite3.Error) as exc:
        if isinstance(exc, BrokenPipeError):
            sys.stderr.close()
            return 0
        _discard_unwritable_output()
        print(f"task-learning {args.command}: error: {_describe(exc)}", file=sys.stderr)
        return 2
    except Exception as exc:  # a bug: still one line for the user, the traceback under -v
        if args.verbose:
            logging.getLogger(__name__).exception("unexpected error")
        print(f"task-learning {args.command}: internal error: {type(exc).__name__}: {exc} "
              "(a bug; rerun with -v for the traceback)", file=sys.stderr)
        return 1


def _flush_output() -> None:
    """Flush stdout: output that could not be written (a full disk behind `> file`, /dev/full)
    is this command's failure, not an exit 0 (PrintableStream names the stream; a closed pipe
    stays a quiet end, as below)."""
    sys.stdout.flush()


def _discard_unwritable_output() -> None:
    """After an error, output stdout cannot take (a full disk) is dropped, so the interpreter's
    own flush at exit adds no second error line."""
    try:
        sys.stdout.flush()
    except OSError:
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass


def _describe(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror
    return f"{type(exc).__name__}: {exc}"


if __name__ == "__main__":
    sys.exit(main())
