"""The shared configuration loader (task_learning/inputs/schema.py): pydantic's errors become the
project's one-line ConfigError naming the file, the key path as the document spells it, and what
was expected."""
from __future__ import annotations

from typing import Annotated, Literal

import pytest
from pydantic import BeforeValidator, Field

from task_learning.errors import ConfigError
from task_learning.inputs.schema import Schema, bounded, invalid, known_key, load_model, validate


def _name(value: object) -> object:
    if not isinstance(value, str) or not value.strip():
        raise invalid(f"expected a name, got {value!r}")
    return value


Name = Annotated[str, BeforeValidator(_name)]


class Part(Schema):
    size: Annotated[float, bounded(low=0.0, high=2.0, low_open=True)]
    count: Annotated[int, bounded(low=1, high=10, integer=True)] = 1


class Doc(Schema):
    title: str
    parts: list[Part] = Field(default_factory=list)
    place: Name | list[Name] | None = None
    mode: Literal["fast", "slow"] = "fast"
    weights: dict[Annotated[str, known_key(["a", "b"])], float] = Field(default_factory=dict)
    words: dict[str, int] = Field(default_factory=dict)


def _error(data: object) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        validate(Doc, data, file="d.yaml")
    return caught.value


@pytest.mark.parametrize("data, key, message", [
    ({"title": "t", "parst": []}, "parst", "unknown key (did you mean 'parts'?)"),
    ({"title": "t", "zzzz": 1}, "zzzz", "unknown key (allowed: mode, parts, place, title, weights, words)"),
    ({}, "title", "missing required key"),
    ({"title": 5}, "title", "expected str, got int: 5"),
    ({"title": "t", "parts": {"a": 1}}, "parts", "expected list, got dict: {'a': 1}"),
    ({"title": "t", "parts": [[1]]}, "parts[0]", "expected a mapping, got list"),
    ({"title": "t", "parts": [{"size": 3}]}, "parts[0].size", "must be a finite number in (0, 2], got 3"),
    ({"title": "t", "parts": [{"size": 1, "count": True}]}, "parts[0].count", "expected an integer, got bool True"),
    ({"title": "t", "parts": [{"size": 1, "count": 11}]}, "parts[0].count", "must be between 1 and 10, got 11"),
    ({"title": "t", "place": 5}, "place", "expected a name, got 5"),
    ({"title": "t", "place": ["x", " "]}, "place[1]", "expected a name, got ' '"),
    ({"title": "t", "mode": "quick"}, "mode", "expected 'fast' or 'slow', got 'quick'"),
    ({"title": "t", "weights": {"c": 1.0}}, "weights.c", "unknown key (allowed: a, b)"),
    ({"title": "t", "words": {True: 1}}, "words.True", "expected str, got bool: True"),
])
def test_an_error_names_the_key_path_and_what_was_expected(data, key, message):
    error = _error(data)
    assert (error.file, error.key, error.message) == ("d.yaml", key, message)
    assert str(error) == f"d.yaml: {key}: {message}"


def test_a_document_that_is_not_a_mapping():
    error = _error([1, 2])
    assert str(error) == "d.yaml: expected a mapping, got list"


def test_a_valid_document_becomes_the_model_and_keeps_int_values():
    doc = validate(Doc, {"title": "t", "parts": [{"size": 1}], "place": ["x"], "weights": {"b": 2, "a": 1}},
                   file="d.yaml")
    assert doc.parts[0].size == 1.0 and doc.parts[0].count == 1 and doc.place == ["x"]
    assert list(doc.weights) == ["b", "a"]  # a table keeps its order


def test_a_key_prefix_places_a_part_of_a_document():
    with pytest.raises(ConfigError) as caught:
        validate(Part, {"size": 0}, file="d.yaml", key="markers[2]")
    assert str(caught.value) == "d.yaml: markers[2].size: must be a finite number in (0, 2], got 0"


def test_files_are_read_by_the_config_rules(tmp_path):
    path = tmp_path / "d.yaml"
    path.write_text("title: a\ntitle: b\n")
    with pytest.raises(ConfigError, match="duplicate key 'title'"):
        load_model(Doc, path)
    path.write_text("title: t\nparts: [{size: .nan}]\n")
    with pytest.raises(ConfigError, match=r"parts\[0\]\.size: must be a finite number, got nan"):
        load_model(Doc, path)
    with pytest.raises(ConfigError, match="a directory"):
        load_model(Doc, tmp_path)
