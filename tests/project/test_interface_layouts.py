"""The robot's standard interfaces have the field layouts of the distribution the robot runs.

tests/data/interfaces/<distribution>.yaml is the wire protocol: for every type the stack speaks
(NavigateToPose, FollowJointTrajectory, PointHead, GripperCommand, TFMessage, MoveGroup, ...) and
every type nested in them, the fields in wire order and the constants, written from the upstream
packages' published definitions. Fast DDS does not refuse a mismatched layout, so a wrong field
here would misbehave silently on a robot. Two checks:

- the definitions in interfaces/standard/ give exactly the table's entries for their packages, for
  every distribution (parsed with rosidl's own parser, no build);
- the types importable here (built by `make setup` in config/ros_interfaces.yaml's distribution,
  or a ROS install's own) have the table's layout of that distribution, nested types included
  (which checks the ros-kilted message wheels' geometry_msgs, trajectory_msgs, ... too).
"""
from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest
import yaml
from rosidl_adapter.parser import parse_message_string
from rosidl_parser import definition

from task_learning.ros_interfaces import DISTRIBUTIONS, load_ros_interfaces

ROOT = Path(__file__).resolve().parents[2]
STANDARD = ROOT / "interfaces" / "standard"
TABLES = ROOT / "tests" / "data" / "interfaces"
BUILT_PACKAGES = ("nav2_msgs", "control_msgs", "tf2_msgs", "moveit_msgs", "octomap_msgs", "object_recognition_msgs")
PARTS = {"msg": ("",), "srv": ("request", "response"), "action": ("goal", "result", "feedback")}
IDL_TO_MSG = {"double": "float64", "float": "float32", "octet": "byte", "boolean": "bool"}


def table(distribution: str) -> dict[str, Any]:
    data = yaml.safe_load((TABLES / f"{distribution}.yaml").read_text())
    assert isinstance(data, dict)
    return data


def _parts_of(text: str, kind: str) -> list[str]:
    """A .srv or .action file's sections (split at `---`); a .msg is one."""
    sections: list[list[str]] = [[]]
    for line in text.splitlines():
        if line.strip() == "---" and kind != "msg":
            sections.append([])
        else:
            sections[-1].append(line)
    return ["\n".join(section) for section in sections]


def _layout_of_section(package: str, name: str, text: str) -> dict[str, list[str]]:
    spec = parse_message_string(package, name, text)
    entry = {"fields": [f"{field.type} {field.name}" for field in spec.fields]}
    if spec.constants:
        entry["constants"] = [f"{c.type} {c.name}={c.value}" for c in spec.constants]
    return entry


def layout_of_definition(package: str, kind: str, name: str, text: str) -> dict[str, Any]:
    """A definition file's table entry: {fields, constants} or, for srv/action, one per part."""
    sections = _parts_of(text, kind)
    assert len(sections) == len(PARTS[kind]), f"{package}/{kind}/{name}: {len(sections)} sections"
    if kind == "msg":
        return _layout_of_section(package, name, sections[0])
    return {part: _layout_of_section(package, name + part.capitalize(), section)
            for part, section in zip(PARTS[kind], sections)}


def source_definitions(distribution: str) -> dict[str, dict[str, Any]]:
    """Every definition in interfaces/standard/ for `distribution`: the common ones and the
    distribution's own (distro/<distribution>/), keyed like the table."""
    found: dict[str, dict[str, Any]] = {}
    for package in BUILT_PACKAGES:
        for folder in (STANDARD / package, STANDARD / package / "distro" / distribution):
            for kind in PARTS:
                for path in sorted((folder / kind).glob(f"*.{kind}")):
                    key = f"{package}/{kind}/{path.stem}"
                    assert key not in found, f"{key} is defined twice for {distribution}"
                    found[key] = layout_of_definition(package, kind, path.stem, path.read_text())
    return found


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_definitions_match_the_table(distribution: str) -> None:
    expected = {key: entry for key, entry in table(distribution).items() if key.split("/")[0] in BUILT_PACKAGES}
    assert source_definitions(distribution) == expected


def test_each_distribution_has_its_own_layouts() -> None:
    """The differences that make the setting matter are in the tables (so a table copied from
    another distribution would fail here)."""
    def fields(distribution: str, key: str, part: str) -> list[str]:
        entry: list[str] = table(distribution)[key][part]["fields"]
        return entry

    navigate = "nav2_msgs/action/NavigateToPose"
    assert fields("humble", navigate, "result") == ["std_msgs/Empty result"]
    assert fields("jazzy", navigate, "result") == ["uint16 error_code", "string error_msg"]
    assert "uint16 TF_ERROR=9002" in table("kilted")[navigate]["result"]["constants"]
    follow = "control_msgs/action/FollowJointTrajectory"
    assert "int32 index" not in fields("jazzy", follow, "feedback")
    assert {"int32 index", "int32 multi_dof_index"} <= set(fields("kilted", follow, "feedback"))


def _msg_type(slot: definition.AbstractType) -> str:
    """A Python message slot's type written as in a .msg file (the table's notation)."""
    if isinstance(slot, definition.BasicType):
        return IDL_TO_MSG.get(slot.typename, slot.typename)
    if isinstance(slot, definition.NamespacedType):
        return f"{slot.namespaces[0]}/{slot.name}"
    if isinstance(slot, definition.AbstractGenericString):
        word = "wstring" if isinstance(slot, definition.AbstractWString) else "string"
        return f"{word}<={slot.maximum_size}" if slot.has_maximum_size() else word
    if isinstance(slot, definition.Array):
        return f"{_msg_type(slot.value_type)}[{slot.size}]"
    if isinstance(slot, definition.BoundedSequence):
        return f"{_msg_type(slot.value_type)}[<={slot.maximum_size}]"
    if isinstance(slot, definition.UnboundedSequence):
        return f"{_msg_type(slot.value_type)}[]"
    raise AssertionError(f"unexpected slot type {slot!r}")


def built_layout(cls: type) -> dict[str, list[str]]:
    """An imported message class's fields (wire order) and constants, in the table's notation.
    A constant's type is not kept by the generated class: its value's text is compared."""
    names = list(cls.get_fields_and_field_types())  # type: ignore[attr-defined]
    slots = cls.SLOT_TYPES  # type: ignore[attr-defined]
    entry = {"fields": [f"{_msg_type(slot)} {name}" for slot, name in zip(slots, names)]}
    metaclass = type(cls)
    constants: dict[str, Any] = getattr(metaclass, f"_{metaclass.__name__}__constants", {})
    if constants:
        entry["constants"] = [f"{name}={_constant_text(value)}" for name, value in constants.items()]
    return entry


def _constant_text(value: Any) -> str:
    """A byte constant is a one-byte bytes object in Python, a number in the definition."""
    return str(value[0]) if isinstance(value, bytes) and len(value) == 1 else str(value)


def _without_constant_types(entry: dict[str, list[str]]) -> dict[str, list[str]]:
    if "constants" not in entry:
        return entry
    return {**entry, "constants": [constant.split(" ", 1)[1] for constant in entry["constants"]]}


def test_built_types_have_the_configured_layouts() -> None:
    distribution = load_ros_interfaces().distribution
    for key, expected in table(distribution).items():
        package, kind, name = key.split("/")
        cls = getattr(importlib.import_module(f"{package}.{kind}"), name)
        if kind == "msg":
            assert built_layout(cls) == _without_constant_types(expected), key
            continue
        for part in PARTS[kind]:
            built = built_layout(getattr(cls, part.capitalize()))
            assert built == _without_constant_types(expected[part]), f"{key} {part}"
