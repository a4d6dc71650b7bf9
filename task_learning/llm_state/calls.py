"""A strict parser for the function calls LLM-State's prompts ask for (the LLM-State paper, "text as code").

The paper executes the model's answer as Python; we never do. Each line is scanned by hand for
one call `name(arg, ...)` whose name is in the allowed table with the right number of arguments.
Arguments are quoted strings (single or double quotes, backslash escapes) or bare names
(`lightswitch2`, `kitchen_table`); nothing else (no expressions, no keywords, no nesting).
A plan line may carry a number ("3.", "3)") before the call and a comment after it
("(assuming there is a lightswitch3 in the kitchen)"). Whatever does not parse is dropped and
kept in `dropped` with the reason, so callers can count it (the paper: "incorrectly formatted
function calls from the LLM will be ignored and discarded").
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Mapping

# name -> number of arguments (the paper's nine primitives and its three state functions)
PLAN_FUNCTIONS: Mapping[str, int] = {
    "move": 1, "pickup": 1, "placein": 2, "placeon": 2, "open": 1, "close": 1,
    "switchon": 1, "switchoff": 1, "wait": 0,
}
ATTENTION_FUNCTIONS: Mapping[str, int] = {"add_related_objects": 1}
# update_state/update_reasoning are the appendix's names; add_attribute/generate_summary the main
# text's names for the same two roles (section IV-C2): both are accepted.
ESTIMATOR_FUNCTIONS: Mapping[str, int] = {
    "update_state": 2, "add_attribute": 2, "update_reasoning": 1, "generate_summary": 1,
}
ESTIMATOR_ALIASES: Mapping[str, str] = {"add_attribute": "update_state", "generate_summary": "update_reasoning"}

MAX_ARG_CHARS = 20000  # a longer quoted argument is garbage, not a summary
MAX_NAME_CHARS = 200  # a longer bare argument is garbage, not an object name
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BARE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.|-]*")
_NUMBERING = re.compile(r"^\s*(?:[-*]\s*)?(?:(?:step\s*)?\d+\s*[.):]\s*)?", re.IGNORECASE)
_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", "'": "'", '"': '"'}


@dataclass(frozen=True)
class Call:
    """One parsed function call: its name and its arguments as plain strings."""

    name: str
    args: tuple[str, ...]

    def render(self) -> str:
        return f"{self.name}({', '.join(self.args)})"


@dataclass
class ParsedAnswer:
    """What an answer held: the calls that parsed and the lines dropped, each with a reason."""

    calls: list[Call] = field(default_factory=list)
    dropped: list[tuple[str, str]] = field(default_factory=list)  # (line, reason)


class _Scanner:
    """Reads one call from a line by hand: position-based, no regex over the arguments."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def skip_space(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] in " \t":
            self.pos += 1

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def name(self) -> str | None:
        match = _NAME.match(self.text, self.pos)
        if not match:
            return None
        self.pos = match.end()
        return match.group(0)

    def argument(self) -> str:
        """A quoted string or a bare name; raises ValueError otherwise."""
        quote = self.peek()
        if quote in ("'", '"', "\u2018", "\u2019", "\u201c", "\u201d"):
            closing = {"\u2018": "\u2019", "\u201c": "\u201d"}.get(quote, quote)
            closers = {closing, quote} if quote in ("\u2019", "\u201d") else {closing}
            self.pos += 1
            out: list[str] = []
            while self.pos < len(self.text):
                ch = self.text[self.pos]
                if ch == "\\" and self.pos + 1 < len(self.text):
                    nxt = self.text[self.pos + 1]
                    out.append(_ESCAPES.get(nxt, "\\" + nxt))
                    self.pos += 2
                    continue
                if ch in closers:
                    self.pos += 1
                    value = "".join(out)
                    if len(value) > MAX_ARG_CHARS:
                        raise ValueError("argument too long")
                    return value
                out.append(ch)
                self.pos += 1
            raise ValueError("unterminated string")
        match = _BARE.match(self.text, self.pos)
        if not match:
            raise ValueError(f"unexpected {self.peek()!r} in the arguments" if self.peek() else "missing ')'")
        if match.end() - match.start() > MAX_NAME_CHARS:
            raise ValueError("argument too long")
        self.pos = match.end()
        return match.group(0)


def _parse_line(line: str, table: Mapping[str, int]) -> tuple[Call | None, str]:
    """(call, "") or (None, reason). Text after the closing parenthesis is a comment."""
    body = _NUMBERING.sub("", line, count=1).strip().strip("`")
    scanner = _Scanner(body)
    name = scanner.name()
    if name is None:
        return None, "no function call"
    scanner.skip_space()
    if scanner.peek() != "(":
        return None, "no function call"
    if name not in table:
        return None, f"unknown function {name!r}"
    scanner.pos += 1
    args: list[str] = []
    scanner.skip_space()
    if scanner.peek() == ")":
        scanner.pos += 1
    else:
        while True:
            scanner.skip_space()
            try:
                args.append(scanner.argument())
            except ValueError as exc:
                return None, str(exc)
            scanner.skip_space()
            if scanner.peek() == ",":
                scanner.pos += 1
                continue
            if scanner.peek() == ")":
                scanner.pos += 1
                break
            return None, "missing ')'" if not scanner.peek() else f"unexpected {scanner.peek()!r} in the arguments"
    if len(args) != table[name]:
        return None, f"{name} takes {table[name]} argument(s), got {len(args)}"
    rest = body[scanner.pos:]
    if any(re.search(rf"\b{re.escape(other)}\s*\(", rest) for other in table):
        return None, "more than one call on a line"
    return Call(name, tuple(a.strip() for a in args)), ""


def parse_calls(text: str, table: Mapping[str, int], *, aliases: Mapping[str, str] | None = None,
                header: str = "") -> ParsedAnswer:
    """Every call of `table` in `text`, one per line, in order; everything else is dropped.

    Blank lines and a `header` line (e.g. "Low-level Action Plan:") are skipped silently; so are
    lines of plain prose that hold no "(": they are not malformed calls, only talk.
    """
    result = ParsedAnswer()
    for raw in (text or "").splitlines():
        line = raw.strip()
        if not line or (header and line.rstrip(":").lower() == header.rstrip(":").lower()):
            continue
        call, reason = _parse_line(line, table)
        if call is None:
            if reason == "no function call" and "(" not in line:
                continue
            result.dropped.append((line[:200], reason))
            continue
        if aliases and call.name in aliases:
            call = Call(aliases[call.name], call.args)
        result.calls.append(call)
    return result


def parse_plan(text: str) -> ParsedAnswer:
    """The policy's answer: numbered primitive calls after "Low-level Action Plan:"."""
    return parse_calls(text, PLAN_FUNCTIONS, header="Low-level Action Plan:")


def parse_attention(text: str) -> ParsedAnswer:
    return parse_calls(text, ATTENTION_FUNCTIONS)


def parse_estimator(text: str) -> ParsedAnswer:
    return parse_calls(text, ESTIMATOR_FUNCTIONS, aliases=ESTIMATOR_ALIASES)


def format_action(call: Call) -> str:
    """A history entry's action as the appendix prints it: "['placein', 'a', 'b']"."""
    return "[" + ", ".join(repr(p) for p in (call.name, *call.args)) + "]"
