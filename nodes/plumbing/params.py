"""Node parameters declared from one table per node, with descriptors `ros2 param describe` shows.

Every node lists its parameters as `Param` rows (name, default, description, range or choices,
read-only) and declares them with `declare_parameters`. The descriptor carries the description,
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
when the table is built), and every value is checked by task_learning.numbers.number_problem, the
check command-line options and configuration values go through too: NaN and infinities are
refused whatever ROS's own range check makes of them. A value of the wrong type, out of range or
not among the choices stops the node at start with one line naming the parameter (run_node turns
the TaskLearningError into exit code 2).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor, SetParametersResult
from rclpy.exceptions import InvalidParameterTypeException, ParameterException
from rclpy.node import Node

from task_learning.errors import TaskLearningError
from task_learning.numbers import number_problem

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


def declare_parameters(node: Node, params: Sequence[Param]) -> dict[str, Any]:
    """Declare every parameter of `params` on `node`; returns their values by name.

    Raises TaskLearningError naming the parameter when a given value has the wrong type, is out
    of range or is not one of the choices."""
    values: dict[str, Any] = {}
    for param in params:
        try:
            default = list(param.default) if isinstance(param.default, tuple) else param.default
            value = node.declare_parameter(param.name, default, param.descriptor()).value
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
    return values


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
LLM_ENDPOINT_PARAMS = (
    Param("llm_base_url", "", "LLM endpoint: an OpenAI-compatible base URL (llm openai), or a running "
          "llama-server (llm local; the launch sets it to the graph's llm_server node); empty: config/llm.yaml"),
    Param("llm_model", "", "Completions model (llm openai), or the GGUF file to serve (llm local without "
          "llm_base_url); empty: config/llm.yaml"),
    Param("llm_selection_model", "", "Model for selection and chat prompts (llm openai); empty: config/llm.yaml"),
)


def llm_client_options(values: dict[str, Any]) -> dict[str, str]:
    """make_client options from the LLM_ENDPOINT_PARAMS values a node declared (only those set)."""
    pairs = (("base_url", "llm_base_url"), ("completion_model", "llm_model"),
             ("selection_model", "llm_selection_model"))
    return {option: str(values[name]) for option, name in pairs if str(values.get(name) or "")}
