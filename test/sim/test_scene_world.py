"""Scenes in physics: the project's scene files built as MuJoCo worlds, refused with one line when
the simulator cannot build them, and scored from body positions and door angles."""
from __future__ import annotations

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")
from task_learning.world.scene import load_scene  # noqa: E402
from task_learning_sim.completion import inside, physics_completion  # noqa: E402
from task_learning_sim.scene_world import SceneBuildError, build_world  # noqa: E402
from task_learning_sim.shapes import load_shapes  # noqa: E402


def _settled(name: str, steps: int = 500):
    world = build_world(load_scene(name))
    model = world.spec.compile()
    data = mujoco.MjData(model)
    for _ in range(steps):
        mujoco.mj_step(model, data)
    return world, model, data


@pytest.mark.parametrize("name", ["store_groceries", "tidy_kitchen"])
def test_every_object_rests_where_the_scene_puts_it(name):
    world, _, data = _settled(name)
    assert world.items and world.receptacles
    for item in world.items.values():
        assert inside(world, data, item.id, item.start), f"{item.id} left {item.start}"
        assert np.linalg.norm(data.body(item.id).cvel) < 0.05, f"{item.id} still moving"


def test_paper_plates_are_packed_on_edge_their_thin_side_across_the_row():
    """A flat box too wide every way for the gripper stands on its edge, as people pack plates:
    it stays there, 18 cm tall, and its narrow side (4 cm) lies level, graspable from above."""
    world, model, data = _settled("store_groceries")
    plates = data.geom("PaperPlates|1")
    axes, half = plates.xmat.reshape(3, 3), model.geom("PaperPlates|1").size
    assert float(np.abs(axes[2]) @ half) == pytest.approx(0.09, abs=0.005)  # half its height
    level = [i for i in range(3) if abs(axes[2, i]) < 0.5]
    assert min(2 * half[i] for i in level) == pytest.approx(0.04, abs=1e-6)


def test_completion_comes_from_body_positions_and_door_angles():
    world, model, data = _settled("store_groceries")
    start = physics_completion(world, model, data)
    assert (start.satisfied, start.total) == (3, 18)  # the three doors closed, nothing put away
    fridge = world.receptacles["Fridge|1"]
    # put the yogurt inside the fridge's compartment: its free joint's position, in the world
    centre = np.mean([fridge.place.low, fridge.place.high], axis=0)
    frame = data.body(fridge.place.body)
    target = frame.xpos + frame.xmat.reshape(3, 3) @ (centre - [0, 0, 0.1])
    data.joint("Yogurt|1/free").qpos[:3] = target
    data.joint("Fridge|1/hinge").qpos[0] = 1.0  # the door stands open
    for _ in range(250):
        mujoco.mj_step(model, data)
    after = physics_completion(world, model, data)
    assert after.satisfied == 3 and "Fridge|1 is open" in after.failures
    assert after.to_dict()["completion_source"] == "mujoco"
    data.joint("Fridge|1/hinge").qpos[0] = 0.0
    mujoco.mj_forward(model, data)
    assert physics_completion(world, model, data).satisfied == 4


def test_a_furniture_type_without_a_shape_is_one_line_naming_it():
    with pytest.raises(SceneBuildError, match=r"CoffeeMachine\|1") as err:
        build_world(load_scene("bcr_kitchen"))
    assert "\n" not in str(err.value)


def test_an_object_too_big_for_its_place_is_refused():
    shapes = load_shapes()
    eggs = shapes.objects["Eggs"].model_copy(update={"size": [0.08, 0.3, 0.5]})
    bigger = shapes.model_copy(update={"objects": {**shapes.objects, "Eggs": eggs}})
    with pytest.raises(SceneBuildError, match=r"Eggs\|1 \(Eggs, 0.50 m tall\) is too big for Fridge\|1"):
        build_world(load_scene("store_groceries"), bigger)


def test_a_place_out_of_the_arms_reach_is_refused():
    shapes = load_shapes()
    high = shapes.furniture["Fridge"].model_copy(update={"size": [0.65, 0.7, 2.9], "floor": 2.2, "ceiling": 2.7})
    tall = shapes.model_copy(update={"furniture": {**shapes.furniture, "Fridge": high}})
    with pytest.raises(SceneBuildError, match=r"no place the user wants it can take it \(Fridge\|1's place is out"):
        build_world(load_scene("store_groceries"), tall)
