"""Node parameters described once per node, as a typed pydantic model, with descriptors `ros2 param describe` shows.

Every node describes its parameters as one `NodeParameters` model: a field per parameter, its type,
its default and what it accepts given by `param(default, description, min=, max=, choices=,
read_only=)`. That model is the one source of
- the declarations: `declare_parameters(node, Model)` declares each field (a `Param` row built from
  it) and returns the values read into a `Model` instance, typed (`params.max_actions` is an int);
  `read_parameters(node, Model)` reads the current values again (the writable ones may have changed);
- the check of the shipped parameter files, config/nodes/<node>.yaml (`check_params_file`: the
  project's one-line errors naming the file and the key, task_learning.inputs.schema);
- the docs site's parameter reference (scripts/docs_reference.py). The descriptor carries the description,
the range (integer or floating point) and the allowed values as additional constraints, so

    ros2 param describe /perception backend

documents the parameter where it runs. Most parameters are read once, at start, so they are
read-only: `ros2 param set` then says so instead of silently changing nothing. A parameter the node
reads each time it uses it is declared `read_only=False` and takes effect with `ros2 param set`
(the planner's condition, scene, engine, ...); a new value is checked like a value at start (type
and range by rclpy, choices here) and refused with the reason. The docs site's parameter reference
(reference/parameters.md, generated from these tables by scripts/docs_reference.py at every
`make docs`) lists every parameter, writable or read-only.
Values from a params file or `-p name:=value` still apply (read-only only refuses later changes).

Every int and float parameter has a range (a `Param` without one is a programming error, refused
when the table is built), and every value is checked by task_learning.inputs.numbers.number_problem, the
check command-line options and configuration values go through too: NaN and infinities are
refused whatever ROS's own range check makes of them. A value of the wrong type, out of range or
not among the choices stops the node at start with one line naming the parameter (run_node turns
the TaskLearningError into exit code 2).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence, TypeVar

from pydantic import Field, ValidationInfo, field_validator
from pydantic.fields import FieldInfo
from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor, SetParametersResult
from rclpy.exceptions import InvalidParameterTypeException, ParameterException
from rclpy.node import Node

from task_learning.errors import ConfigError, TaskLearningError
from task_learning.inputs.config import load_yaml
from task_learning.inputs.numbers import number_problem
from task_learning.inputs.schema import Schema, invalid, validate

ParamValue = bool | int | float | str | tuple[float, ...]  # a tuple: a double array


@dataclass(frozen=True)
class Param:
    """One node parameter: its default (which fixes its type), what it means, what it accepts."""

    name: str
    default: ParamValue
    description: str
    min: float | None = None  # inclusive bounds, both or neither (int or double parameters)
    max: float | None = None
    choices: tuple[str, ...] = ()
    read_only: bool = True
    dynamic_typing: bool = False  # accept any type (the node checks the value itself)

    def __post_init__(self) -> None:
        numeric = isinstance(self.default, (int, float)) and not isinstance(self.default, bool)
        if (numeric or isinstance(self.default, tuple)) and (self.min is None or self.max is None):
            raise TypeError(f"parameter {self.name}: a number needs a range (min and max)")
        if (self.min is None) != (self.max is None):
            raise TypeError(f"parameter {self.name}: give both min and max, or neither")

    def problem(self, value: Any) -> str:
        """Why `value` is not acceptable for this parameter ('' when it is): a number outside
        its range or not finite (each element of a list), a string not among the choices."""
        numbers = value if isinstance(value, (list, tuple)) else [value] if isinstance(
            self.default, (int, float)) and not isinstance(self.default, bool) else []
        for number in numbers:
            problem = number_problem(number, low=self.min, high=self.max,
                                     integer=isinstance(self.default, int) and not isinstance(self.default, bool))
            if problem:
                return problem
        if self.choices and value not in self.choices:
            return f"{value!r} is not one of {', '.join(repr(c) for c in self.choices)}"
        return ""

    def descriptor(self) -> ParameterDescriptor:
        descriptor = ParameterDescriptor(description=self.description, read_only=self.read_only,
                                         dynamic_typing=self.dynamic_typing)
        if self.choices:
            descriptor.additional_constraints = "one of: " + ", ".join(
                repr(c) if c == "" else c for c in self.choices)
        if self.min is not None and self.max is not None and not isinstance(self.default, tuple):
            if isinstance(self.default, bool) or not isinstance(self.default, (int, float)):
                raise TypeError(f"parameter {self.name}: a range needs an int or float default")
            if isinstance(self.default, int):
                descriptor.integer_range = [IntegerRange(from_value=int(self.min), to_value=int(self.max),
                                                         step=0)]
            else:
                descriptor.floating_point_range = [FloatingPointRange(
                    from_value=float(self.min), to_value=float(self.max), step=0.0)]
        return descriptor


def _type_name(value: Any) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number with a decimal point",
            str: "a string", tuple: "a list of numbers with decimal points, e.g. [0.1, 0.0]"}.get(
                type(value), type(value).__name__)


def param(default: ParamValue, description: str, *, min: float | None = None, max: float | None = None,
          choices: Sequence[str] = (), read_only: bool = True, dynamic_typing: bool = False) -> Any:
    """A `NodeParameters` field: its default (which fixes its ROS type), what it means and accepts."""
    extra: dict[str, Any] = {"min": min, "max": max, "choices": tuple(choices), "read_only": read_only,
                             "dynamic_typing": dynamic_typing}
    return Field(default=default, description=description, json_schema_extra={"param": extra})


def _group(annotation: Any) -> type[NodeParameters] | None:
    """The model of a group field (`ai2thor: Ai2thorParameters`), None for a parameter."""
    return annotation if isinstance(annotation, type) and issubclass(annotation, NodeParameters) else None


def _row(name: str, info: FieldInfo) -> Param:
    """The Param row of a `param(...)` field."""
    extra = info.json_schema_extra
    spec: Any = extra.get("param") if isinstance(extra, dict) else None
    if not isinstance(spec, dict):
        raise TypeError(f"parameter {name}: declare it with param(...)")
    return Param(name, info.default, info.description or "", **spec)


class NodeParameters(Schema):
    """A node's parameters: one field per parameter (`param(...)`), a nested model per group of
    parameters ROS names `<group>.<name>` (perception's `ai2thor.*`). Unknown keys are refused, every
    value is checked as ROS and `Param.problem` check it (type, range, choices), so a params file
    is refused here for what would stop the node at start."""

    @classmethod
    def rows(cls, prefix: str = "") -> tuple[Param, ...]:
        """The parameters as `Param` rows, in field order, groups flattened to `<group>.<name>`."""
        found: list[Param] = []
        for name, info in cls.model_fields.items():
            group = _group(info.annotation)
            found += group.rows(f"{prefix}{name}.") if group is not None else [_row(f"{prefix}{name}", info)]
        return tuple(found)

    @classmethod
    def row(cls, name: str) -> Param | None:
        return next((r for r in cls.rows() if r.name == name), None)

    @classmethod
    def from_flat(cls: type[P], values: Mapping[str, Any], *, file: str = "parameters") -> P:
        """An instance from ROS's flat names (`ai2thor.platform`)."""
        nested: dict[str, Any] = {}
        for name, value in values.items():
            *groups, leaf = name.split(".")
            target = nested
            for group in groups:
                target = target.setdefault(group, {})
            target[leaf] = value
        return validate(cls, nested, file=file)

    @field_validator("*", mode="before")
    @classmethod
    def _as_ros_checks_it(cls, value: Any, info: ValidationInfo) -> Any:
        field_name = info.field_name or ""
        field = cls.model_fields[field_name]
        if _group(field.annotation) is not None:
            return value
        row = _row(field_name, field)
        if row.dynamic_typing:
            return value
        value = _ros_typed(row, value)
        problem = row.problem(value)
        if problem:
            raise invalid(problem)
        return value


P = TypeVar("P", bound=NodeParameters)


def _ros_typed(row: Param, value: Any) -> Any:
    """`value` as ROS would take it for `row`'s type, or the error ROS's type check gives."""
    default = row.default
    if isinstance(default, tuple):
        if isinstance(value, (list, tuple)) or type(value).__name__ == "array":  # rclpy: array.array('d')
            items = tuple(value)
            if all(isinstance(v, float) for v in items):
                return items
    elif isinstance(default, bool):
        if isinstance(value, bool):
            return value
    elif isinstance(default, int):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif isinstance(default, float):
        if isinstance(value, float):
            return value
    elif isinstance(value, type(default)):
        return value
    raise invalid(f"expected {_type_name(default)}, got {value!r}")



def declare_parameters(node: Node, model: type[P]) -> P:
    """Declare every parameter of `model` on `node`; returns their values as a `model`.

    Raises TaskLearningError naming the parameter when a given value has the wrong type, is out
    of range or is not one of the choices."""
    params = model.rows()
    values: dict[str, Any] = {}
    for param in params:
        try:
            default = list(param.default) if isinstance(param.default, tuple) else param.default
            value: Any = node.declare_parameter(param.name, default, param.descriptor()).value
        except InvalidParameterTypeException:
            hint = " (write it with a decimal point, e.g. 120.0)" if isinstance(param.default, float) \
                else ' (quote strings that look like numbers or booleans, e.g. "off")' \
                if isinstance(param.default, str) else ""
            raise TaskLearningError(f"parameter {param.name}: expected {_type_name(param.default)}"
                                    f"{hint}") from None
        except ParameterException as exc:
            reason = exc.args[0] if exc.args else str(exc)
            raise TaskLearningError(f"parameter {param.name}: {reason}") from None
        problem = param.problem(value)
        if problem:
            raise TaskLearningError(f"parameter {param.name}: {problem}")
        values[param.name] = value
    choices = {p.name: p.choices for p in params if p.choices and not p.read_only}
    if choices:
        node.add_on_set_parameters_callback(lambda changed: _check_choices(changed, choices))
    return _typed(model, values)


def read_parameters(node: Node, model: type[P]) -> P:
    """The current values of `model`'s parameters (declared before) as a `model`: a writable one
    set with `ros2 param set` since is read as it is now."""
    return _typed(model, {p.name: node.get_parameter(p.name).value for p in model.rows()})


def _typed(model: type[P], values: Mapping[str, Any]) -> P:
    try:
        return model.from_flat(values)
    except ConfigError as exc:  # checked above already; a model stricter than its rows
        raise TaskLearningError(f"parameter {exc.key}: {exc.message}") from None


def check_params_file(path: str | Path, model: type[NodeParameters], node: str) -> NodeParameters:
    """A ROS 2 params file's `<node>.ros__parameters` checked against `model`: ConfigError naming
    the file and the key (`planner.ros__parameters.max_actions: must be ...`) when a value would
    stop the node, or a key is not one of its parameters (rclpy would ignore it silently)."""
    data = load_yaml(path) or {}
    key = f"{node}.ros__parameters"
    if not isinstance(data, Mapping) or not isinstance(data.get(node), Mapping) \
            or not isinstance(data[node].get("ros__parameters"), Mapping):
        raise ConfigError(path, key, "missing: a params file sets <node>: {ros__parameters: {...}}")
    return validate(model, data[node]["ros__parameters"], file=path, key=key)


def _check_choices(changed: Sequence[Any], choices: dict[str, tuple[str, ...]]) -> SetParametersResult:
    """`ros2 param set` of a writable parameter with choices: refused, with the reason, when the
    value is not one of them (rclpy checks types and ranges itself)."""
    for parameter in changed:
        allowed = choices.get(parameter.name)
        if allowed and parameter.value not in allowed:
            return SetParametersResult(successful=False, reason=(
                f"{parameter.name}: {parameter.value!r} is not one of {', '.join(repr(c) for c in allowed)}"))
    return SetParametersResult(successful=True)


# Where a node's LLM is, beside its `llm` parameter (the provider): pointing at your own model or
# at the graph's llm_server edits no file. Empty: config/llm.yaml (and its environment variables).
class LLMEndpointParameters(NodeParameters):
    llm_base_url: str = param("", "LLM endpoint: an OpenAI-compatible base URL (llm openai), or a running "
                              "llama-server (llm local; the launch sets it to the graph's llm_server node); "
                              "empty: config/llm.yaml")
    llm_model: str = param("", "Completions model (llm openai), or the GGUF file to serve (llm local without "
                           "llm_base_url); empty: config/llm.yaml")
    llm_selection_model: str = param("", "Model for selection and chat prompts (llm openai); empty: config/llm.yaml")
    decoding: str = param("auto", "free: the papers' protocols; grounded: answers constrained to what the robot "
                          "can ground (STARS goals, BCR's choice; a node whose protocol has no grounded form "
                          "says so in one line; docs/llm.md); auto: grounded with llm local, free otherwise")


def llm_client_options(values: LLMEndpointParameters) -> dict[str, str]:
    """make_client options from a node's LLM endpoint parameters (only those set)."""
    pairs = (("base_url", values.llm_base_url), ("completion_model", values.llm_model),
             ("selection_model", values.llm_selection_model))
    return {option: value for option, value in pairs if value}
