"""Checked command-line values and safe terminal output, shared by every subcommand.

Every numeric option has a range (`bounded_int`, `bounded_float`): `run --workers 0`,
`bcr --trials 1000000000` or `bag play --rate nan` is refused by argparse with a one-line error
before anything runs. Both ask task_learning.inputs.numbers.number_problem, the check configuration
values and node parameters go through too; test_cli_safety checks that no option of any command
takes a bare `int` or `float`.
`PrintableStream` wraps stdout/stderr while a command runs so that no text it echoes (object
names from a scene file, goal text from a model or an imported knowledge base) can carry terminal
escape sequences or other control characters to the user's terminal.
"""
from __future__ import annotations

import argparse
import errno
import sys
from collections.abc import Callable
from typing import TextIO

from task_learning.inputs.numbers import number_problem
from task_learning.inputs.safe_text import printable

# Sane maxima where no configuration gives a bound.
MAX_WORKERS = 64  # concurrent LLM requests per tree level
MAX_TRIALS = 10_000  # BCR trials in one command
MAX_ACTIONS = 10_000  # BCR actions per trial
MAX_REQUESTS = 100_000  # LLM requests for one object
MAX_SEED = 2**32 - 1
MAX_WAIT_S = 86_400.0

__all__ = ["printable"]  # re-exported: the one implementation is task_learning.inputs.safe_text


def bounded_int(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: an integer in [low, high]."""

    def parse(value: str) -> int:
        try:
            number = int(value, 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {printable(value)!r}") from None
        problem = number_problem(number, low=low, high=high, integer=True)
        if problem:
            raise argparse.ArgumentTypeError(problem)
        return number

    parse.__name__ = "integer"
    return parse


def bounded_float(low: float, high: float, *, low_open: bool = False) -> Callable[[str], float]:
    """An argparse type: a finite number in [low, high] (or (low, high] with low_open)."""

    def parse(value: str) -> float:
        try:
            number = float(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {printable(value)!r}") from None
        problem = number_problem(number, low=low, high=high, low_open=low_open)
        if problem:
            raise argparse.ArgumentTypeError(problem)
        return number

    parse.__name__ = "number"
    return parse


SEED = bounded_int(0, MAX_SEED)


class PrintableStream:
    """A text stream that strips escape sequences and control characters from what it writes.
    A write that fails (a full disk behind `> file`) names the stream, so the one-line error
    says what could not be written.

    Text goes to the binary buffer underneath, and every byte is accounted for: CPython's text
    layer ignores the count its buffer returns, so a disk that fills part-way through a large
    write (`kb export > file`) kept 64 KiB of it and exited 0. Here a short write is written on
    until the rest is taken or the system says why not (ENOSPC, EFBIG: an OSError, one line)."""

    def __init__(self, inner: TextIO, name: str = "standard output") -> None:
        self._inner = inner
        self._name = name
        self._buffer = getattr(inner, "buffer", None)
        if self._buffer is not None:
            try:  # nothing waits in the text layer, so text written around this wrapper keeps its order
                inner.reconfigure(write_through=True)  # type: ignore[attr-defined]
            except (AttributeError, ValueError, OSError):
                self._buffer = None

    def write(self, text: str) -> int:
        try:
            if self._buffer is None:
                self._inner.write(printable(text))
            else:
                self._write_all(printable(text).encode(self._inner.encoding or "utf-8",
                                                       self._inner.errors or "strict"))
                if "\n" in text and getattr(self._inner, "line_buffering", False):
                    self._buffer.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror or str(exc), self._name) from None
        return len(text)

    def _write_all(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            count = self._buffer.write(view)  # type: ignore[union-attr]
            if not count:  # None (would block) or 0: nothing taken, so the rest would be lost
                raise OSError(errno.EIO, "the output took no more bytes")
            view = view[count:]

    def flush(self) -> None:
        try:
            self._inner.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror or str(exc), self._name) from None

    def __getattr__(self, name: str) -> object:  # fileno, isatty, encoding...
        return getattr(self._inner, name)


# ------------------------------------------------------------------------------ the LLM options
LLM_CHOICES = "offline | openai | local | replay:FILE | record:FILE"
LLM_HELP = (f"{LLM_CHOICES} (default %(default)s). offline: a deterministic stand-in, NOT a language "
            "model; openai: any OpenAI-compatible endpoint (config/llm.yaml); local: Gemma 3 270M on "
            "llama.cpp's server, started and stopped by this command (install: make llm); see docs/llm.md")


def add_llm_arguments(parser: argparse.ArgumentParser, default: str = "offline") -> None:
    """--llm and the options that point it at your own model without editing config/llm.yaml."""
    parser.add_argument("--llm", default=default, help=LLM_HELP)
    parser.add_argument("--llm-model", default=None, metavar="NAME",
                        help="completions model (openai; env TASK_LEARNING_LLM_MODEL), or the GGUF file "
                             "to serve (local)")
    parser.add_argument("--llm-selection-model", default=None, metavar="NAME",
                        help="model for selection and chat prompts (openai; env "
                             "TASK_LEARNING_LLM_SELECTION_MODEL)")
    parser.add_argument("--base-url", default=None, metavar="URL",
                        help="endpoint (openai; env OPENAI_BASE_URL), or a running llama-server to use "
                             "instead of starting one (local; env TASK_LEARNING_LOCAL_LLM_URL)")
    parser.add_argument("--decoding", default="auto", choices=("auto", "free", "grounded"),
                        help="free: the papers' protocols; grounded: answers constrained to what the robot "
                             "can ground (goals of this scene, an option of the list); auto (default): grounded "
                             "with --llm local, free with the others (docs/llm.md)")
    parser.add_argument("--llm-record", default=None, metavar="FILE",
                        help="append every answered LLM call (request and answer) to this JSONL cassette, with "
                             "any --llm (replay it with --llm replay:FILE)")


def llm_options(args: argparse.Namespace) -> dict[str, str]:
    """The make_client options that `add_llm_arguments` collected (only those given)."""
    pairs = (("base_url", "base_url"), ("completion_model", "llm_model"),
             ("selection_model", "llm_selection_model"), ("record", "llm_record"))
    return {option: value for option, name in pairs if (value := getattr(args, name, None))}


def decoding_of(args: argparse.Namespace, supported: bool = True, what: str = "") -> str:
    """The decoding `--decoding` chose for this command's `--llm` ("free" | "grounded"). A command
    whose protocol has no grounded form (`supported` False) says so in one line on stderr and
    decodes freely: never silently."""
    from task_learning.llm.constraints import Decoding, parse_decoding

    decoding = parse_decoding(getattr(args, "decoding", "auto"), getattr(args, "llm", ""))
    if decoding is Decoding.GROUNDED and not supported:
        print(f"--decoding grounded: {what or 'this command'} has no grounded form yet; free decoding",
              file=sys.stderr)
        return Decoding.FREE.value
    return decoding.value



def grounded_or_free(args: argparse.Namespace, client: object) -> str:
    """`decoding_of(args)` as the client's endpoint can serve it: an endpoint that cannot constrain
    (OpenAI's completions API) decodes freely, said in one line on stderr."""
    from task_learning.llm.constraints import effective_decoding, parse_decoding

    decoding, notice = effective_decoding(getattr(client, "provider", None), parse_decoding(decoding_of(args)))
    if notice:
        print(notice, file=sys.stderr)
    return decoding.value
