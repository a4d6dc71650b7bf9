"""Finding and reading YAML under `config/`: one source of truth, errors that name file and key.

A file's shape is described by a typed schema (task_learning.inputs.schema: pydantic models, one loader),
so every message reads like "config/scenes/tidy_kitchen.yaml: objects[3].recptacle: unknown key
(did you mean 'receptacle'?)".
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import yaml

from task_learning.errors import ConfigError
from task_learning.inputs.files import read_input_bytes
from task_learning.inputs.numbers import non_finite_path

ENV_CONFIG_DIR = "TASK_LEARNING_CONFIG"
PACKAGE = "task_learning"
AMENT_PACKAGES_INDEX = Path("share", "ament_index", "resource_index", "packages")
MAX_YAML_BYTES = 64 * 1024 * 1024  # a YAML file larger than this is refused unread
# No configuration, scene or export nests deeper than a few levels; a document nested deeper than
# this is refused while it is parsed (PyYAML composes recursively: a few thousand levels would
# end in RecursionError).
MAX_NESTING = 64
# An alias (`*name`) repeats its anchor's whole subtree wherever it stands, so a 420-byte file of
# nested aliases stands for billions of nodes (a "billion laughs"), which every check and schema
# after the parser walks. The shipped files use aliases to repeat a short list; what aliases add
# to a document beyond its own nodes is bounded here, counted on the parsed nodes in time
# linear in the file, before anything is built from them.
MAX_ALIAS_EXPANSION = 100_000


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


class StrictLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a mapping that repeats a key (PyYAML keeps the last value
    silently, so a typo'd duplicate would override the real setting unseen) and a document
    nested more than MAX_NESTING levels deep (before Python's recursion limit is reached)."""

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._depth += 1
        try:
            if self._depth > MAX_NESTING:
                raise yaml.composer.ComposerError(None, None, f"nested more than {MAX_NESTING} levels deep",
                                                  self.peek_event().start_mark)  # type: ignore[no-untyped-call]
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


    def compose_document(self) -> Any:
        node = super().compose_document()
        if node is not None:
            _check_alias_expansion(node)
        return node


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _check_alias_expansion(root: yaml.Node) -> None:
    """ComposerError when aliases make the document more than MAX_ALIAS_EXPANSION nodes larger
    than it is written, or when an alias stands inside its own anchor (an endless document).
    Each distinct node is visited once; sizes are capped, so the count stays a small number."""
    cap = 10 * MAX_ALIAS_EXPANSION
    sizes: dict[int, int] = {}
    entered: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            entered.discard(key)
            sizes[key] = min(cap, 1 + sum(sizes[id(child)] for child in _children(node)))
            continue
        if key in sizes:
            continue
        if key in entered:
            raise yaml.composer.ComposerError(None, None, "an alias inside its own anchor: the document "
                                              "would never end", node.start_mark)
        entered.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node) if id(child) not in sizes)
    added = sizes[id(root)] - len(sizes)
    if added > MAX_ALIAS_EXPANSION:
        raise yaml.composer.ComposerError(
            None, None, f"aliases (*name) repeat more than {MAX_ALIAS_EXPANSION} nodes (an alias bomb?): write "
            "the values out or repeat fewer", root.start_mark)


def _construct_unique_mapping(loader: StrictLoader, node: yaml.MappingNode, deep: bool = False) -> Any:
    first_line: dict[Any, int] = {}
    for key_node, _value in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue  # `<<: *anchor` merges, and explicit keys may override merged ones
        key = loader.construct_object(key_node, deep=True)
        try:
            seen = first_line.get(key)
        except TypeError:  # an unhashable key: construct_mapping reports it
            continue
        if seen is not None:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (first on line {seen + 1})", key_node.start_mark)
        first_line[key] = key_node.start_mark.line
    return loader.construct_mapping(node, deep=deep)


StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_unique_mapping)


def parse_yaml(text: str) -> Any:
    """Parse YAML text with the strict loader (duplicate keys refused); raises yaml.YAMLError."""
    return yaml.load(text, Loader=StrictLoader)  # noqa: S506 - a SafeLoader subclass


def load_yaml(path: str | Path) -> Any:
    """Parse a YAML file; a syntax error, a duplicate key, a binary or non-UTF-8 file, a file that
    is not a regular file (a FIFO, a device, a directory), NaN or an infinity anywhere, and
    nesting deeper than MAX_NESTING become a ConfigError naming the file (and line and column
    where YAML gives them, the key where the value is wrong)."""
    path = Path(path)
    raw = read_input_bytes(path, max_bytes=MAX_YAML_BYTES)
    if b"\x00" in raw[:8192]:
        raise ConfigError(path, None, "a binary file, not YAML text")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(path, None, f"not UTF-8 text (invalid byte 0x{raw[exc.start]:02x} at offset {exc.start}): "
                                      "a binary file, or save it as UTF-8") from None
    try:
        data = parse_yaml(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(path, None, f"{where}malformed YAML: {problem}") from None
    check_document(data, file=path)
    return data


def check_document(data: Any, *, file: str | Path) -> None:
    """Refuse NaN and infinities anywhere in a parsed document, and nesting deeper than
    MAX_NESTING: no value the project reads may be either, whatever its key (the one check for
    every YAML and JSON input, so no loader has to remember it)."""
    found = non_finite_path(data, max_depth=MAX_NESTING)
    if found is not None:
        raise ConfigError(file, found[0], found[1])


def join_key(parent: str, child: str | int) -> str:
    if isinstance(child, int):
        return f"{parent}[{child}]"
    return f"{parent}.{child}" if parent else child
