"""No function of task_learning/ or nodes/ longer than 80 lines (issue 28): a long function is
split into named steps, not grown. A function's length is its lines from `def` to its last line
(ast: end_lineno - lineno + 1; a nested function counts on its own and inside its parent).

ALLOWED lists the functions not split yet, each with its length when it was listed: such a
function may shrink, never grow past that. An entry whose function was split or removed is
harmless; delete it when you see it."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("task_learning", "nodes", "sim")
MAX_LINES = 80
ALLOWED: dict[str, int] = {}  # every function is split now (issue 28); keep it empty


def function_lengths(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> dict[str, int]:
    """`path:name` -> lines, of every function and method in `packages` (the longest of a name)."""
    lengths: dict[str, int] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    where = f"{path.relative_to(root).as_posix()}:{node.name}"
                    length = (node.end_lineno or node.lineno) - node.lineno + 1
                    lengths[where] = max(length, lengths.get(where, 0))
    return lengths


def test_no_function_grows_past_80_lines() -> None:
    lengths = function_lengths()
    assert len(lengths) > 1000  # the walk found the code (a moved package would empty it)
    too_long = {where: n for where, n in lengths.items() if n > ALLOWED.get(where, MAX_LINES)}
    assert not too_long, "\n".join(
        [f"{where}: {n} lines (at most {ALLOWED.get(where, MAX_LINES)}): split it into named steps"
         for where, n in sorted(too_long.items())])


def test_a_function_of_81_lines_is_found(tmp_path: Path) -> None:
    body = "\n".join(f"        x{i} = {i}" for i in range(MAX_LINES - 1))
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text(f"class A:\n    def long(self):\n{body}\n        return 0\n")
    assert function_lengths(tmp_path, ("pkg",)) == {"pkg/mod.py:long": MAX_LINES + 1}
