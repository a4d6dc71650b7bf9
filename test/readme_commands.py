"""The commands of the README and docs/ as a test runs them: exactly as printed (not a test module).

`readme_block` finds a fenced block of README.md, `readme_ros2_commands` every `ros2 ...` line of
its fenced blocks (continuation lines joined, as the shell reads them), and `shell` runs one such
line in a shell that ran the block's `source .venv/bin/activate` first, in the checkout, with
`exec`, so the command itself gets the signals a terminal would send.
"""
from __future__ import annotations

from pathlib import Path

from .ros_testing import ROOT

README = ROOT / "README.md"
DOCS = ROOT / "docs"
ACTIVATE = "source .venv/bin/activate"  # the first line of the README's venv blocks


def _pages() -> list[Path]:
    """README.md, then every page of docs/ (the README points there for the details)."""
    return [README, *sorted(DOCS.rglob("*.md"))]


def _blocks() -> list[list[str]]:
    blocks: list[list[str]] = []
    for page in _pages():
        inside = False
        for line in page.read_text(encoding="utf-8").splitlines():
            if line.startswith("```"):
                inside = not inside
                if inside:
                    blocks.append([])
                continue
            if inside:
                blocks[-1].append(line)
    return blocks


def _joined(lines: list[str]) -> list[str]:
    """Commands, lines continued with a backslash joined."""
    commands: list[str] = []
    pending = ""
    for line in lines:
        text = (pending + " " + line.strip()) if pending else line
        if text.rstrip().endswith("\\"):
            pending = text.rstrip()[:-1].rstrip()
            continue
        pending = ""
        if text.strip():
            commands.append(text)
    return commands


def readme_block(first_line: str, has: str) -> list[str]:
    """The commands of the README's fenced block that starts with `first_line` and has a command
    starting with `has`."""
    for lines in _blocks():
        if lines and lines[0].strip() == first_line and any(line.startswith(has) for line in lines):
            return _joined(lines)
    raise AssertionError(f"README.md and docs/ have no block starting with {first_line!r} with {has!r}")


def readme_ros2_commands() -> list[str]:
    """Every `ros2 ...` command in the README's fenced blocks."""
    return [c for lines in _blocks() for c in _joined(lines) if c.startswith("ros2 ")]


def shell(command: str) -> list[str]:
    """argv running a README command as printed, after the block's `source .venv/bin/activate`."""
    return ["bash", "-c", f"{ACTIVATE} && exec {command}"]


def printed(commands: list[str], prefix: str) -> str:
    """The one command of `commands` that starts with `prefix`."""
    found = [c for c in commands if c.startswith(prefix)]
    assert len(found) == 1, f"README: {len(found)} commands start with {prefix!r}"
    return found[0]


__all__ = ["ACTIVATE", "README", "printed", "readme_block", "readme_ros2_commands", "shell"]
