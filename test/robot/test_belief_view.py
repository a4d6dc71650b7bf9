"""BeliefView reads the grasp's width and the object's length from the belief (the track's extent as it lies)."""
from __future__ import annotations

import math
import threading
from types import SimpleNamespace

import numpy as np
import pytest

from task_learning.robot.belief_view import BeliefView


def _world(turn_deg: float, held: str | None = None) -> SimpleNamespace:
    c, s = math.cos(math.radians(turn_deg)), math.sin(math.radians(turn_deg))
    T = np.eye(4)
    T[:3, :3] = [[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]
    box = SimpleNamespace(T_world_marker=T, spec=SimpleNamespace(extent=(0.06, 0.15, 0.2), receptacle=None))
    bare = SimpleNamespace(T_world_marker=np.eye(4), spec=SimpleNamespace(extent=None, receptacle=None))
    shelf = SimpleNamespace(T_world_marker=np.eye(4), spec=SimpleNamespace(extent=(0.5, 0.8, 1.0), receptacle="cabinet"))
    belief = SimpleNamespace(tracks={"Granola|1": box, "Apple|1": bare, "Pantry|1": shelf}, held=held)
    return SimpleNamespace(_cond=threading.Condition(), belief=belief, metadata={"objects": []})


@pytest.mark.parametrize("turn_deg", [0.0, 35.0])
def test_grasp_width_is_the_extent_across_the_narrow_level_side(turn_deg):
    view = BeliefView(_world(turn_deg))  # type: ignore[arg-type]
    assert view.grasp_width("Granola|1") == pytest.approx(0.06)


def test_no_grasp_width_without_an_extent_for_furniture_the_held_object_or_the_unknown():
    view = BeliefView(_world(0.0))  # type: ignore[arg-type]
    assert view.grasp_width("Apple|1") is None
    assert view.grasp_width("Pantry|1") is None
    assert view.grasp_width("Nothing|1") is None
    assert BeliefView(_world(0.0, held="Granola|1")).grasp_width("Granola|1") is None  # type: ignore[arg-type]


@pytest.mark.parametrize("turn_deg", [0.0, 35.0])
def test_length_is_the_extent_along_the_long_level_side(turn_deg):
    view = BeliefView(_world(turn_deg))  # type: ignore[arg-type]
    assert view.length_of("Granola|1") == pytest.approx(0.15)  # not its height (0.2): that axis stands up


def test_a_box_lying_on_its_side_is_as_long_as_its_longest_level_extent():
    world = _world(0.0)
    lying = np.eye(4)
    lying[:3, :3] = [[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]]  # its y axis up, its z level
    world.belief.tracks["Granola|1"].T_world_marker = lying
    assert BeliefView(world).length_of("Granola|1") == pytest.approx(0.2)  # type: ignore[arg-type]
    assert BeliefView(world).length_of("Apple|1") is None  # type: ignore[arg-type]
    assert BeliefView(world).length_of("Pantry|1") is None  # type: ignore[arg-type]
