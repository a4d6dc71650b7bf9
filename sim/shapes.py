"""The physical shapes of scene object types (sim/shapes.yaml), validated on load.

The scene files say what a kitchen holds (a Fridge, a Flour); a world in physics also needs how
big each is and how its doors move. That is robot-side knowledge of this simulator, so it lives
beside it, in one YAML file with a typed schema (the project's `Schema`: unknown keys and wrong
types refused with the file and key named).
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, model_validator

from task_learning.inputs.schema import Schema, bounded, load_model

SHAPES_FILE = Path(__file__).resolve().parent / "shapes.yaml"
Metres = Annotated[float, bounded(low=0.0, high=10.0, low_open=True)]
Size3 = Annotated[list[Metres], Field(min_length=3, max_length=3)]


class FurnitureShape(Schema):
    """A piece of furniture: its form and size ([depth, width, height]), the height of its
    floor (bin, cabinet, drawer) and of its compartment's ceiling (cabinet, drawer)."""

    form: Literal["table", "bin", "cabinet", "drawer"]
    size: Size3
    floor: Annotated[float, bounded(low=0.0, high=10.0)] = 0.0
    ceiling: Annotated[float, bounded(low=0.0, high=10.0)] = 0.0


class ObjectShape(Schema):
    """An object: a box ([depth, width, height]) or a cylinder ([radius, height]), and a mass
    used where the scene's type catalogue gives none."""

    shape: Literal["box", "cylinder"]
    size: Annotated[list[Metres], Field(min_length=2, max_length=3)]
    mass: Annotated[float, bounded(low=0.0, high=50.0, low_open=True)] = 0.3

    def footprint(self) -> tuple[float, float]:
        """Depth and width on a flat surface."""
        if self.shape == "cylinder":
            return 2 * self.size[0], 2 * self.size[0]
        return self.size[0], self.size[1]

    def height(self) -> float:
        return self.size[-1]


    @model_validator(mode="after")
    def _size_fits_shape(self) -> "ObjectShape":
        if len(self.size) != (3 if self.shape == "box" else 2):
            raise ValueError(f"a {self.shape} has size " + ("[depth, width, height]" if self.shape == "box"
                                                             else "[radius, height]"))
        return self


class ShapesDoc(Schema):
    furniture: dict[str, FurnitureShape]
    objects: dict[str, ObjectShape]
    default_object: ObjectShape


@lru_cache(maxsize=4)
def load_shapes(path: Path = SHAPES_FILE) -> ShapesDoc:
    """The shapes file, validated (cached: it is read-only data)."""
    return load_model(ShapesDoc, path)
