"""Loading and validating YAML under `config/`: one source of truth, errors that name file and key.

Validation is by small explicit schemas (`check_keys`) rather than a schema library, so every
message reads like "config/scenes/tidy_kitchen.yaml: objects[3].recptacle: unknown key (did you
mean 'receptacle'?)".
"""
from __future__ import annotations

import difflib
import os
import sys
from pathlib import Path
from typing import Any, Iterable, Mapping

import yaml

from task_learning.errors import ConfigError

ENV_CONFIG_DIR = "TASK_LEARNING_CONFIG"
PACKAGE = "task_learning"
AMENT_PACKAGES_INDEX = Path("share", "ament_index", "resource_index", "packages")


def config_dir() -> Path:
    """The config folder, first found of: $TASK_LEARNING_CONFIG; the source tree's `config/` (a
    checkout, an editable install); `share/task_learning/config` of the package's prefix in the
    ament index (a colcon install, or the venv's prefix that `make setup` lays out); the same
    under sys.prefix."""
    env = os.environ.get(ENV_CONFIG_DIR)
    if env:
        return Path(env)
    source_tree = Path(__file__).resolve().parent.parent / "config"
    if source_tree.is_dir():
        return source_tree
    candidates = [share / "config" for share in _ament_share_dirs()]
    candidates.append(Path(sys.prefix) / "share" / PACKAGE / "config")
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    searched = ", ".join(str(c) for c in candidates)
    raise ConfigError(None, None, f"no config folder found (searched {searched}; set {ENV_CONFIG_DIR} "
                      f"or AMENT_PREFIX_PATH)")


def _ament_share_dirs() -> list[Path]:
    """`share/task_learning` of every prefix on AMENT_PREFIX_PATH that registers the package in
    the ament index (`share/ament_index/resource_index/packages/task_learning`), first one first.
    Read directly, as ament_index_python does, so the core library needs no ROS package."""
    found = []
    for prefix in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep):
        if prefix and (Path(prefix) / AMENT_PACKAGES_INDEX / PACKAGE).is_file():
            found.append(Path(prefix) / "share" / PACKAGE)
    return found


def config_path(*parts: str) -> Path:
    return config_dir().joinpath(*parts)


def load_yaml(path: str | Path) -> Any:
    """Parse a YAML file; a syntax error becomes a ConfigError with the line and column."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(path, None, f"cannot read: {exc.strerror or exc}") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(path, None, f"{where}malformed YAML: {problem}") from None


def check_keys(
    mapping: Any,
    *,
    file: str | Path,
    key: str,
    required: Iterable[str] = (),
    optional: Iterable[str] = (),
) -> Mapping[str, Any]:
    """Require a mapping with exactly the given keys; misspellings get a 'did you mean'."""
    if not isinstance(mapping, Mapping):
        raise ConfigError(file, key or None, f"expected a mapping, got {type(mapping).__name__}")
    required = list(required)
    allowed = set(required) | set(optional)
    for name in mapping:
        if name not in allowed:
            hint = difflib.get_close_matches(str(name), sorted(allowed), n=1)
            suffix = f" (did you mean '{hint[0]}'?)" if hint else f" (allowed: {', '.join(sorted(allowed))})"
            raise ConfigError(file, join_key(key, str(name)), f"unknown key{suffix}")
    for name in required:
        if name not in mapping:
            raise ConfigError(file, join_key(key, name), "missing required key")
    return mapping


def expect_type(value: Any, types: type | tuple[type, ...], *, file: str | Path, key: str) -> Any:
    if not isinstance(value, types):
        names = types.__name__ if isinstance(types, type) else " or ".join(t.__name__ for t in types)
        raise ConfigError(file, key, f"expected {names}, got {type(value).__name__}: {value!r}")
    return value


def join_key(parent: str, child: str | int) -> str:
    if isinstance(child, int):
        return f"{parent}[{child}]"
    return f"{parent}.{child}" if parent else child
