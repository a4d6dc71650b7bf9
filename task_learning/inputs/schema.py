"""Configuration files described once, as typed pydantic models, and the one loader that reads them.

A file's shape (which keys, which types, which ranges) is declared as a `Schema` subclass; the
loader validates a parsed document against it and turns pydantic's ValidationError into the
project's one-line ConfigError naming the file, the key path and what was expected, e.g.
"config/scenes/tidy_kitchen.yaml: objects[3].recptacle: unknown key (did you mean 'receptacle'?)".
What a schema cannot say (an object reference that must name an object of the same scene, a
total that must match) stays with the code that builds the domain objects, raising ConfigError
with the same kind of key path.

Pydantic v2 rather than hand-written checks or plain dataclasses: it validates nested lists and
mappings, reports every error with its location, and checks types strictly (`strict=True`: no
"5" for 5, no true for 1), which is what the hand-written validators did line by line. Numbers go
through task_learning.inputs.numbers.number_problem (`bounded(...)`), so a configuration value, a command
line option and a node parameter are refused with the same words. Files are read by
config.load_yaml (regular files only, a size bound, duplicate keys and NaN refused).
"""
from __future__ import annotations

import difflib
from pathlib import Path
from typing import Annotated, Any, Mapping, Sequence, TypeVar

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, ValidationError, model_validator
from pydantic_core import PydanticCustomError

from task_learning.errors import ConfigError
from task_learning.inputs.config import join_key, load_yaml
from task_learning.inputs.numbers import number_problem
from task_learning.inputs.safe_text import has_control_characters


class Schema(BaseModel):
    """Base of every configuration schema: unknown keys refused (with a 'did you mean'), types
    checked strictly, NaN and infinities refused, instances immutable."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _refuse_unknown_keys(cls, data: Any) -> Any:
        """The first key the model does not know, named with the closest known one (pydantic's
        own extra="forbid" error cannot say which keys were meant)."""
        if isinstance(data, Mapping):
            allowed = {info.alias or name for name, info in cls.model_fields.items()}
            for key in data:
                if key not in allowed:
                    hint = difflib.get_close_matches(str(key), sorted(allowed), n=1)
                    suffix = f" (did you mean '{hint[0]}'?)" if hint else f" (allowed: {', '.join(sorted(allowed))})"
                    raise PydanticCustomError("unknown_key", "unknown key{suffix}", {"key": key, "suffix": suffix})
        return data


M = TypeVar("M", bound=BaseModel)


def validate(model: type[M], data: Any, *, file: str | Path, key: str = "") -> M:
    """`data` (a parsed document, or the part of one under `key`) as a `model`; ConfigError
    naming `file`, the key path and what was expected otherwise."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise config_error(exc, data, file=file, key=key) from None


def load_model(model: type[M], path: str | Path) -> M:
    """A YAML file (config.load_yaml's rules) validated as a `model`."""
    return validate(model, load_yaml(path), file=path)


def bounded(*, low: float | None = None, high: float | None = None, low_open: bool = False,
            integer: bool = False) -> BeforeValidator:
    """The check of a finite number (an int with `integer`) in [low, high] ((low, high] with
    `low_open`), for `Annotated[float, bounded(low=0, high=1)]`: refused with
    task_learning.inputs.numbers' words ("must be between 0 and 1000, got 1001"), a bool or a string
    included, as the command line and node parameters refuse them."""

    def check(value: Any) -> Any:
        problem = number_problem(value, low=low, high=high, low_open=low_open, integer=integer)
        if problem:
            raise invalid(problem)
        return value

    return BeforeValidator(check)


def _plain_text(value: str) -> str:
    if has_control_characters(value):
        raise invalid(f"control characters in {value!r}")
    return value


# Text that reaches terminals and logs (names, ids): control characters refused.
no_control_characters = AfterValidator(_plain_text)
PlainText = Annotated[str, no_control_characters]


def known_key(names: Sequence[str]) -> AfterValidator:
    """For the keys of a mapping whose keys are fixed names but whose order matters (a model
    would lose it): `dict[Annotated[str, known_key(NAMES)], float]`."""

    def check(key: str) -> str:
        if key not in names:
            hint = difflib.get_close_matches(key, sorted(names), n=1)
            raise invalid("unknown key" + (f" (did you mean '{hint[0]}'?)" if hint else
                                           f" (allowed: {', '.join(sorted(names))})"))
        return key

    return AfterValidator(check)


def invalid(message: str) -> PydanticCustomError:
    """The error a schema's validator raises: `message` is what the user reads after the key."""
    return PydanticCustomError("invalid", "{message}", {"message": message})


# Type names as the hand-written checks before this loader wrote them, for pydantic's type errors.
_EXPECTED = {
    "string_type": "str", "int_type": "int", "bool_type": "bool", "float_type": "float",
    "list_type": "list", "tuple_type": "list", "set_type": "list",
}
_MAPPING_ERRORS = ("model_type", "model_attributes_type", "dict_type", "mapping_type")


def config_error(exc: ValidationError, data: Any, *, file: str | Path, key: str = "") -> ConfigError:
    """The ConfigError for the first problem pydantic found in `data`: its key path (as the
    document spells it: `objects[2].at`), and what was expected. Where a value may take one of
    several forms (`str | list[str]`), the deepest problem wins and the forms are listed."""
    errors = [(_key_path(error, data, key), error) for error in exc.errors(include_url=False)]
    first_path = errors[0][0]
    same_place = [(p, e) for p, e in errors if p == first_path or p.startswith((first_path + ".", first_path + "["))]
    deepest = max(len(p) for p, _ in same_place)
    chosen = [e for p, e in same_place if len(p) == deepest]
    path = next(p for p, _ in same_place if len(p) == deepest)
    return ConfigError(file, path or None, _message(chosen))


def _key_path(error: Mapping[str, Any], data: Any, prefix: str) -> str:
    """The error's location as a key path into `data`: pydantic's location also names the union
    member or validator it tried ('str', 'list[str]', 'function-after[...]'), which are not in the
    document and are left out."""
    path = prefix
    current = data
    loc = list(error["loc"])
    for index, item in enumerate(loc):
        if isinstance(current, Mapping) and item in current:
            current = current[item]
            # a key, even one YAML read as a number or a boolean (pydantic's location says 1 for true)
            is_key_error = index + 1 < len(loc) and loc[index + 1] == "[key]"
            path = join_key(path, str(error["input"] if is_key_error else item))
        elif isinstance(current, list) and isinstance(item, int) and 0 <= item < len(current):
            current = current[item]
            path = join_key(path, item)
        elif index == len(loc) - 1 and error["type"] == "missing":
            path = join_key(path, str(item))
    if error["type"] == "unknown_key":
        path = join_key(path, str(error["ctx"]["key"]))
    elif error["type"] == "union_tag_not_found":  # the discriminator's key is missing
        path = join_key(path, str(error["ctx"]["discriminator"]).strip("'"))
    return path


def _message(errors: Sequence[Mapping[str, Any]]) -> str:
    error = errors[0]
    kind, value, ctx = error["type"], error.get("input"), error.get("ctx") or {}
    if kind in _EXPECTED:  # a union's forms, each refused for its type: "expected str or list"
        names = " or ".join(dict.fromkeys(_EXPECTED[e["type"]] for e in errors if e["type"] in _EXPECTED))
        return f"expected {names}, got {type(value).__name__}: {value!r}"
    if kind in ("missing", "union_tag_not_found"):
        return "missing required key"
    if kind in _MAPPING_ERRORS:
        return f"expected a mapping, got {type(value).__name__}"
    if kind == "literal_error":
        return f"expected {ctx['expected']}, got {value!r}"
    if kind == "union_tag_invalid":  # a discriminated union: `kind: star`
        return (f"unknown {ctx['discriminator'].strip(chr(39))} {ctx['tag']!r} "
                f"(known: {ctx['expected_tags'].replace(chr(39), '')})")
    if kind in _PYDANTIC_WORDS and not isinstance(value, (dict, list)):
        return f"{error['msg']}, got {value!r}"
    return str(error["msg"])  # a schema's own validator: its whole message; pydantic's other sentences


# pydantic's own error kinds whose sentence needs the value appended ("Input should be greater
# than or equal to 1, got 0"); a schema's validator (`invalid`) carries its whole message.
_PYDANTIC_WORDS = {"greater_than", "greater_than_equal", "less_than", "less_than_equal", "finite_number",
                   "multiple_of", "enum", "string_pattern_mismatch", "string_too_short", "string_too_long",
                   "bool_parsing", "int_parsing", "float_parsing", "int_from_float", "is_instance_of"}
