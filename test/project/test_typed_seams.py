"""No parameter or attribute that holds a seam of the stack is typed `Any` (issue 44): a world, an
engine, an operator, a knowledge base, a store, an LLM client or provider, an executor, a node, a
service or action client, a goal handle or a future. Those are exactly where backends are swapped
(a real robot, a physics simulator, a stand-in model), and an `Any` there switches mypy off for
every call through it; the project's Protocols or rclpy's own types say what is plugged in.

A name is a seam when one of its `_`-separated words is in SEAM_WORDS (`goal_handle`, `_client`,
`llm`); an annotation is `Any` when it is `Any` itself or `Any` in a union/Optional
(`Any | None`). Containers of seams (`list[Any]` named `clients`) count too."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("task_learning", "nodes", "sim")
SEAM_WORDS = frozenset({
    "world", "worlds", "engine", "engines", "operator", "operators", "kb", "store", "stores",
    "client", "clients", "llm", "provider", "providers", "executor", "handle", "handles", "node",
    "nodes", "backend", "backends", "future", "futures", "publisher", "subscriptions", "server",
    "robot", "skills", "agent", "learner", "sink", "group",
})


def _is_seam(name: str) -> bool:
    return any(word in SEAM_WORDS for word in name.lower().split("_") if word)


def _names_any(annotation: ast.expr | None) -> bool:
    """True when `annotation` is Any, or a union, Optional or list/set/tuple of Any."""
    if annotation is None:
        return False
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return False
    if isinstance(annotation, ast.Name):
        return annotation.id == "Any"
    if isinstance(annotation, ast.Attribute):
        return annotation.attr == "Any"
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return _names_any(annotation.left) or _names_any(annotation.right)
    if isinstance(annotation, ast.Subscript):
        head = annotation.value
        head_name = head.id if isinstance(head, ast.Name) else head.attr if isinstance(head, ast.Attribute) else ""
        if head_name in {"Optional", "Union", "list", "List", "set", "Set", "tuple", "Sequence", "Iterable"}:
            inner = annotation.slice
            parts = inner.elts if isinstance(inner, ast.Tuple) else [inner]
            return any(_names_any(part) for part in parts)
    return False


def _target_name(target: ast.expr) -> str:
    if isinstance(target, ast.Name):
        return target.id
    if isinstance(target, ast.Attribute):
        return target.attr
    return ""


def any_seams(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> list[str]:
    """`path:line name` of every parameter or annotated attribute/variable of a seam typed Any."""
    found: list[str] = []
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            where = path.relative_to(root).as_posix()
            for node in ast.walk(tree):
                if isinstance(node, ast.arg) and _is_seam(node.arg) and _names_any(node.annotation):
                    found.append(f"{where}:{node.lineno} {node.arg}")
                elif isinstance(node, ast.AnnAssign) and _is_seam(_target_name(node.target)) \
                        and _names_any(node.annotation):
                    found.append(f"{where}:{node.lineno} {_target_name(node.target)}")
    return sorted(found)


def test_no_seam_is_typed_any() -> None:
    found = any_seams()
    assert not found, "typed Any (use the project's Protocol or rclpy's type):\n" + "\n".join(found)


def test_a_seam_typed_any_is_found(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text(
        "from typing import Any, Optional\n"
        "class A:\n"
        "    def __init__(self, world: Any, name: Any, goal_handle: 'Any | None' = None) -> None:\n"
        "        self._llm_client: Optional[Any] = None\n"
        "        self.count: Any = 0\n"
        "        self.clients: list[Any] = []\n"
        "def f(kb: typing.Any, engine: 'Engine') -> None: ...\n")
    assert any_seams(tmp_path, ("pkg",)) == [
        "pkg/mod.py:3 goal_handle", "pkg/mod.py:3 world", "pkg/mod.py:4 _llm_client",
        "pkg/mod.py:6 clients", "pkg/mod.py:7 kb"]
