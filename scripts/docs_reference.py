"""The docs site's generated pages, made from the sources each time the site is built.

`mkdocs.yml` loads this file as a hook, so `make docs` (and any `mkdocs build` or `mkdocs serve`)
writes two reference pages that cannot drift from the code:

- `reference/interfaces.md`: every message (`msg/*.msg`), service (`interfaces/srv/*.srv`) and
  action (`interfaces/action/*.action`) field by field, from the definitions and their comments.
- `reference/parameters.md`: every node parameter from the nodes' `Parameters` models (the one
  description of each node's parameters, `nodes/plumbing/params.py`: default, range or choices,
  read-only, description), beside the value the shipped `config/nodes/<node>.yaml` gives it; each
  of those files is checked against its model first (a key or value the node would refuse fails
  the build with the file and the key). The node modules are imported (rclpy and the built
  interfaces must be importable, as after `make setup`); no node is created and ROS is not started.

It also keeps the navigation tolerant of pages it does not name: any Markdown page under `docs/`
that `nav` leaves out is listed under "More" (other branches add pages while `mkdocs.yml` is
edited elsewhere; with `--strict` a page in `nav` that does not exist fails the build, a page
missing from `nav` does not).

    .venv/bin/python scripts/docs_reference.py interfaces|parameters   # print one page
"""
from __future__ import annotations

import ast
import importlib
import logging
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

ROOT = Path(__file__).resolve().parent.parent
INTERFACES_PAGE = "reference/interfaces.md"
PARAMETERS_PAGE = "reference/parameters.md"
PYTHON_API_PAGE = "reference/python-api.md"
GENERATED_NOTE = ("Generated from the sources by `scripts/docs_reference.py` each time the site is built "
                  "(`make docs`): edit {source}, not this page.")
KINDS = (  # (heading, folder, suffix, names of the parts between the `---` lines)
    ("Messages", ROOT / "msg", ".msg", ("Fields",)),
    ("Services", ROOT / "interfaces" / "srv", ".srv", ("Request", "Response")),
    ("Actions", ROOT / "interfaces" / "action", ".action", ("Goal", "Result", "Feedback")),
)
PACKAGE = "task_learning_interfaces"
log = logging.getLogger("mkdocs.hooks.docs_reference")


# -- interfaces ------------------------------------------------------------------------------------

@dataclass
class Field:
    type: str
    name: str
    value: str = ""        # a constant's value or a field's default, as written
    constant: bool = False
    comment: str = ""


@dataclass
class Group:
    """Fields under one comment line of their own (or none, at the start of a part)."""

    note: str = ""
    fields: list[Field] = field(default_factory=list)


@dataclass
class Interface:
    name: str
    kind: str
    path: Path
    description: str
    parts: list[tuple[str, list[Group]]]


def _comment(text: str) -> str:
    return text.lstrip("#").strip()


def parse_interface(path: Path, kind: str, part_names: Sequence[str]) -> Interface:
    """One .msg/.srv/.action file: its leading comment, then per part its fields in groups."""
    description: list[str] = []
    parts: list[list[Group]] = [[Group()]]
    last: Field | None = None
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.rstrip()
        stripped = line.strip()
        if not stripped:
            continue
        if stripped == "---":
            parts.append([Group()])
            last = None
            continue
        if stripped.startswith("#"):
            if last is not None and line[0].isspace():  # an indented comment continues a field's
                last.comment = f"{last.comment} {_comment(stripped)}".strip()
            elif len(parts) == 1 and not any(g.fields for g in parts[0]) and not parts[0][-1].note:
                description.append(_comment(stripped))
            else:
                group = parts[-1][-1]
                if group.fields:
                    parts[-1].append(Group(_comment(stripped)))
                else:
                    group.note = f"{group.note} {_comment(stripped)}".strip()
                last = None
            continue
        definition, _, comment = line.partition("#")
        match = re.fullmatch(r"\s*(\S+)\s+([A-Za-z_][A-Za-z0-9_]*)\s*(=\s*(.*?)|\s+(.*?))?\s*", definition)
        if not match:
            raise ValueError(f"{path.relative_to(ROOT)}:{number}: cannot read the definition {stripped!r}")
        constant = bool(match.group(3) and match.group(3).lstrip().startswith("="))
        value = (match.group(4) if constant else match.group(5)) or ""
        last = Field(match.group(1), match.group(2), value.strip(), constant, comment.strip())
        parts[-1][-1].fields.append(last)
    if len(parts) != len(part_names):
        raise ValueError(f"{path.relative_to(ROOT)}: {len(parts)} parts, expected {len(part_names)} "
                         f"({', '.join(part_names)})")
    return Interface(path.stem, kind, path, " ".join(description),
                     [(name, [g for g in groups if g.note or g.fields]) for name, groups in zip(part_names, parts)])


def load_interfaces() -> list[Interface]:
    found: list[Interface] = []
    for kind, folder, suffix, part_names in KINDS:
        found += [parse_interface(path, kind, part_names) for path in sorted(folder.glob(f"*{suffix}"))]
    return found


def _anchor(name: str) -> str:
    return name.lower()


def _type_cell(type_name: str, ours: set[str]) -> str:
    """The field's type, linked to its section when it is one of this package's messages."""
    base = re.match(r"[A-Za-z0-9_/]+", type_name)
    stem = base.group(0) if base else type_name
    local = stem.removeprefix(f"{PACKAGE}/msg/")
    if local in ours:
        return f"[`{local}`](#{_anchor(local)})`{type_name[len(stem):]}`" if type_name != stem \
            else f"[`{local}`](#{_anchor(local)})"
    return f"`{type_name}`"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def interfaces_page(interfaces: Sequence[Interface]) -> str:
    names = [i.name for i in interfaces]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"interface names used twice (their anchors would clash): {', '.join(duplicates)}")
    messages = {i.name for i in interfaces if i.kind == "Messages"}
    out = ["# ROS interface reference", "",
           GENERATED_NOTE.format(source="`msg/`, `interfaces/srv/` and `interfaces/action/`"), "",
           f"All of them belong to the package `{PACKAGE}` (`interfaces/`, built by `make setup`): "
           f"`{PACKAGE}/msg/<Name>`, `{PACKAGE}/srv/<Name>`, `{PACKAGE}/action/<Name>`. Which node "
           "publishes, serves or calls what: [Architecture](../architecture.md).", ""]
    for kind, _, _, _ in KINDS:
        of_kind = [i for i in interfaces if i.kind == kind]
        out += [f"## {kind}", "", " · ".join(f"[{i.name}](#{_anchor(i.name)})" for i in of_kind), ""]
        for interface in of_kind:
            out += [f"### {interface.name}", "", f"`{interface.path.relative_to(ROOT)}`"
                    + (f": {interface.description}" if interface.description else ""), ""]
            for part, groups in interface.parts:
                if len(interface.parts) > 1:
                    out += [f"**{part}**", ""]
                if not groups:
                    out += ["(empty)", ""]
                for group in groups:
                    if group.note:
                        out += [group.note, ""]
                    if group.fields:
                        out += ["| field | type | meaning |", "|---|---|---|"]
                        for f in group.fields:
                            name = f"`{f.name}`" + (f" = `{f.value}`" if f.constant else "")
                            meaning = ("constant" + (f": {f.comment}" if f.comment else "")) if f.constant \
                                else f.comment + (f" (default `{f.value}`)" if f.value else "")
                            out.append(f"| {name} | {_type_cell(f.type, messages)} | {_cell(meaning.strip())} |")
                        out.append("")
    return "\n".join(out)


# -- node parameters -------------------------------------------------------------------------------

@dataclass(frozen=True)
class ParamTable:
    title: str          # "perception", "perception, backend fetch"
    module: str         # task_learning_nodes.nodes.perception
    attribute: str      # Parameters (the node's NodeParameters model)
    config: str         # config/nodes/perception.yaml, or "" when the node has none
    config_node: str    # the top key in that file
    file_model: str = ""  # the model that file is checked against, when not `attribute` (ParamsFile)


def param_tables() -> list[ParamTable]:
    """Every node's parameter model, in the registry's order, named after the node; the params file
    `config/bringup.yaml` gives it."""
    from task_learning.apps.bringup import load_bringup_config
    from task_learning_nodes.plumbing import registry

    files = {spec.name: spec.params_file for spec in load_bringup_config(ROOT / "config" / "bringup.yaml").nodes}
    tables: list[ParamTable] = []
    for node in registry.NODES:
        path = files.get(node)
        config = path.relative_to(ROOT).as_posix() if path is not None else ""
        module = registry.module_of(node)
        file_model = "ParamsFile" if hasattr(importlib.import_module(module), "ParamsFile") else ""
        tables.append(ParamTable(node, module, "Parameters", config, node, file_model))
        if node == "perception":  # declared by the fetch bridge with backend fetch
            tables.append(ParamTable(f"{node}, backend fetch", "task_learning_nodes.plumbing.fetch_params",
                                     "FetchParameters", config, node, "-"))
    return tables


def check_params_files(tables: Sequence[ParamTable]) -> None:
    """Each shipped params file against its node's model: ConfigError (file, key, why) otherwise."""
    from task_learning_nodes.plumbing.params import check_params_file

    for table in tables:
        if table.config and table.file_model != "-":
            model = getattr(importlib.import_module(table.module), table.file_model or table.attribute)
            check_params_file(ROOT / table.config, model, table.config_node)


def _flatten(values: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def _config_values(table: ParamTable) -> dict[str, Any]:
    if not table.config:
        return {}
    from task_learning.inputs.config import load_yaml  # the project's one YAML loader (aliases bounded)

    data = load_yaml(ROOT / table.config) or {}
    return _flatten(((data.get(table.config_node) or {}).get("ros__parameters")) or {})


def _value(value: Any) -> str:
    if isinstance(value, str):
        return f"`{value!r}`" if value == "" else f"`{value}`"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, (tuple, list)):
        return "`[" + ", ".join(str(v) for v in value) + "]`"
    return f"`{value}`"


def _number(value: float, like: Any) -> str:
    return str(int(value)) if isinstance(like, int) and not isinstance(like, bool) else f"{value:g}"


def _accepts(param: Any) -> str:
    if param.choices:
        return "one of " + ", ".join("`''`" if c == "" else f"`{c}`" for c in param.choices)
    if param.min is not None and param.max is not None:
        return f"{_number(param.min, param.default)} to {_number(param.max, param.default)}"
    return "any type" if param.dynamic_typing else ""


def parameters_page(tables: Sequence[ParamTable]) -> str:
    out = ["# Node parameters", "",
           GENERATED_NOTE.format(source="each node's `Parameters` model in `nodes/nodes/<node>.py` (`param(...)` fields, "
                                         "`nodes/plumbing/params.py`)"),
           "",
           "Each node declares its parameters with these descriptors, so `ros2 param describe /<node> <name>` "
           "shows the same description and range on a running graph. The values each node starts with are "
           "in its params file, `config/nodes/<node>.yaml` (what `task-learning bringup` and the launch "
           "files pass): the *params file* column, where it gives one; otherwise the default applies.", "",
           "**Writable** parameters are read each time they are used: `ros2 param set /<node> <name> <value>` "
           "takes effect from the next request (a goal, a call), and a value of the wrong type, out of range "
           "or not among the choices is refused with the reason. **Read-only** parameters are read once, at "
           "start (they shape publishers, clients, the world or the safety policy): `ros2 param set` refuses "
           "them (\"Trying to set a read-only parameter\"); set them in the params file or with "
           "`-p name:=value` and restart the node. A value a node cannot use stops it at start with one line "
           "naming the parameter.", ""]
    check_params_files(tables)  # a params file a node would refuse fails the build, naming file and key
    loaded = [(table, getattr(importlib.import_module(table.module), table.attribute).rows()) for table in tables]
    for table, params in loaded:
        configured = _config_values(table)
        out += [f"## {table.title}", "",
                f"`{table.module}.{table.attribute}`; params file "
                + (f"`{table.config}`." if table.config else "none (defaults only)."), "",
                "| parameter | default | params file | accepts | set at run time | description |",
                "|---|---|---|---|---|---|"]
        for p in params:
            file_value = _value(configured[p.name]) if p.name in configured else ""
            out.append(f"| `{p.name}` | {_value(p.default)} | {file_value} | {_accepts(p)} | "
                       f"{'read-only' if p.read_only else 'writable'} | {_cell(p.description)} |")
        out.append("")
    return "\n".join(out)


# -- the Python API ------------------------------------------------------------------------------

def core_packages() -> list[str]:
    """The core's packages: every package of task_learning but the applications and test doubles."""
    return sorted(p.name for p in (ROOT / "task_learning").iterdir()
                  if (p / "__init__.py").exists() and p.name not in ("apps", "testing"))


def imported_names(package: str) -> dict[str, str]:
    """name -> module, of the names an eager package's __init__ imports (`from m import name`)."""
    tree = ast.parse((ROOT / "task_learning" / package / "__init__.py").read_text(encoding="utf-8"))
    return {alias.asname or alias.name: node.module for node in tree.body
            if isinstance(node, ast.ImportFrom) and node.module for alias in node.names}


def python_api_page() -> str:
    """One section per core package: its docstring and every name of its `__all__`, rendered by
    mkdocstrings from the module that defines it (a lazily served name is found statically there)."""
    out = ["# Python API", "", GENERATED_NOTE.format(source="the packages' `__all__` and docstrings"), "",
           "The public face of each package of the core library (`task_learning`): the names its `__all__` "
           "lists. Import them from the package (`from task_learning.kb import KnowledgeBase`); modules "
           "not listed here are the packages' own business. Signatures and docstrings come from the "
           "source.", ""]
    for package in core_packages():
        module = importlib.import_module(f"task_learning.{package}")
        exports = getattr(module, "_EXPORTS", None) or imported_names(package)
        out += [f"::: task_learning.{package}", "    options:", "      members: false",
                "      show_root_heading: true", "      heading_level: 2", ""]
        for name in module.__all__:
            where = exports.get(name, f"task_learning.{package}")
            out += [f"::: {where}.{name}", "    options:", "      heading_level: 3", "      show_root_heading: true",
                    "      show_root_full_path: false", ""]
    return "\n".join(out)


# -- MkDocs hooks ----------------------------------------------------------------------------------

def _nav_paths(entries: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(entries, str):
        found.add(entries)
    elif isinstance(entries, dict):
        for value in entries.values():
            found |= _nav_paths(value)
    elif isinstance(entries, list):
        for entry in entries:
            found |= _nav_paths(entry)
    return found


def on_config(config: Any) -> Any:
    """Pages under docs/ that nav does not name go under "More", so new pages are reachable."""
    docs = Path(config["docs_dir"])
    named = _nav_paths(config["nav"] or [])
    rest = sorted(p.relative_to(docs).as_posix() for p in docs.rglob("*.md")
                  if p.relative_to(docs).as_posix() not in named)
    if rest and config["nav"] is not None:
        log.info("pages not named in mkdocs.yml's nav, listed under More: %s", ", ".join(rest))
        config["nav"] = [*config["nav"], {"More": rest}]
    return config


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    for uri, render in ((INTERFACES_PAGE, lambda: interfaces_page(load_interfaces())),
                        (PARAMETERS_PAGE, lambda: parameters_page(param_tables())),
                        (PYTHON_API_PAGE, python_api_page)):
        if files.get_file_from_path(uri) is not None:
            raise SystemExit(f"docs/{uri} exists, but it is generated by scripts/docs_reference.py: delete it")
        files.append(File.generated(config, uri, content=render()))
    return files


def main(argv: Sequence[str]) -> int:
    pages = {"interfaces": lambda: interfaces_page(load_interfaces()),
             "parameters": lambda: parameters_page(param_tables()),
             "python-api": python_api_page}
    if len(argv) != 1 or argv[0] not in pages:
        print(f"usage: scripts/docs_reference.py {'|'.join(pages)}", file=sys.stderr)
        return 2
    print(pages[argv[0]]())
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
