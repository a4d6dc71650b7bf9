"""The `ai2thor` backend: the real ai2thor Controller drives the project's stand-in simulator
process over ai2thor's FIFO protocol. Every action on its success and failure paths, the same
world state as the symbolic backend for the same actions, images consistent with CameraInfo's
pinhole model, and a dead or silent simulator reported as such."""
from __future__ import annotations

import math

import numpy as np
import pytest

from task_learning.errors import TaskLearningError
from task_learning.world.floorplans import floorplan_source
from task_learning.world.scene import load_scene
from task_learning.world.symbolic import SymbolicWorld
from task_learning.world.thor.bridge import Ai2ThorWorld, SimulatorError
from task_learning.world.thor.camera import back_project, project

from ..thor_helpers import settings, state_of, thor_env  # noqa: F401  (thor_env: a fixture)

pytest.importorskip("ai2thor")
pytestmark = [pytest.mark.usefixtures("thor_env"), pytest.mark.slow, pytest.mark.timeout(300)]

FRIDGE = "Fridge|-02.10|+00.00|+01.07"
APPLE = "Apple|-00.47|+01.15|+00.48"
BREAD = "Bread|-00.52|+01.17|-00.03"
ISLAND = "CounterTop|-00.08|+01.15|00.00"
FAUCET = "Faucet|-02.15|+00.91|-01.50"
KNIFE = "Knife|-01.70|+00.79|-00.22"
DRAWER = "Drawer|-01.56|+00.84|-00.20"
EGG = "Egg|-02.04|+00.81|+01.24"

# (action, params, should it succeed?) in order: each action's failure and success paths.
SEQUENCE = [
    ("PickupObject", {"objectId": APPLE}, False),            # too far: navigate first
    ("NavigateToObject", {"objectId": "Nope|1"}, False),     # no such object
    ("NavigateToObject", {"objectId": APPLE}, True),
    ("PutObject", {"objectId": ISLAND}, False),              # holding nothing
    ("DropHandObject", {}, False),                           # holding nothing
    ("PickupObject", {"objectId": ISLAND}, False),           # not pickupable
    ("PickupObject", {"objectId": APPLE}, True),
    ("PickupObject", {"objectId": BREAD}, False),            # hand full
    ("NavigateToObject", {"objectId": FRIDGE}, True),
    ("PutObject", {"objectId": FRIDGE}, False),              # closed
    ("CloseObject", {"objectId": FRIDGE}, False),            # already closed
    ("OpenObject", {"objectId": APPLE}, False),              # not openable
    ("OpenObject", {"objectId": FRIDGE}, True),
    ("PutObject", {"objectId": FRIDGE}, True),
    ("PickupObject", {"objectId": APPLE}, True),             # out of the open fridge again
    ("VisualSearch", {"objectId": FRIDGE}, True),
    ("RotateLeft", {"degrees": 90}, True),
    ("LookUp", {"degrees": 30}, True),
    ("LookUp", {"degrees": 90}, False),                      # beyond the horizon limit
    ("LookDown", {"degrees": 30}, True),
    ("RotateRight", {"degrees": 90}, True),
    ("DropHandObject", {}, True),
    ("CloseObject", {"objectId": FRIDGE}, True),
    ("ToggleObjectOn", {"objectId": APPLE}, False),          # not toggleable
    ("NavigateToObject", {"objectId": FAUCET}, True),
    ("ToggleObjectOff", {"objectId": FAUCET}, False),        # already off
    ("ToggleObjectOn", {"objectId": FAUCET}, True),
    ("ToggleObjectOff", {"objectId": FAUCET}, True),
    ("SliceObject", {"objectId": FRIDGE}, False),            # not sliceable
    ("NavigateToObject", {"objectId": BREAD}, True),
    ("SliceObject", {"objectId": BREAD}, True),
    ("SliceObject", {"objectId": BREAD}, False),             # already sliced
]
# Not robot actions: the bridge refuses them before the Controller (which would obey a Reset).
REFUSED = [
    ("Fly", {}),                                             # no such action
    ("PickupObject", {"objectId": APPLE, "speed": 3}),       # an argument a robot action does not take
    ("Reset", {"sceneName": "FloorPlan306"}),                # simulator control
]


@pytest.fixture(scope="module")
def scene():
    return load_scene("tidy_floorplan1")


def test_every_action_both_paths_and_the_same_world_as_the_symbolic_backend(scene):
    symbolic = SymbolicWorld(scene)
    with Ai2ThorWorld(scene, settings()) as world:
        assert world.metadata["sceneName"] == "FloorPlan1_physics"
        assert state_of(world.metadata)["objects"] == state_of(symbolic.metadata)["objects"]
        for action, params, expected in SEQUENCE:
            thor = world.step(action, **params)
            mine = symbolic.step(action, **params)
            assert thor["lastActionSuccess"] is expected, (action, params, thor["errorMessage"])
            assert mine["lastActionSuccess"] is expected, (action, params, mine["errorMessage"])
            # AI2-THOR's errorMessage passes through unchanged, and the world is the same
            assert thor["errorMessage"] == mine["errorMessage"], (action, params)
            assert state_of(thor) == state_of(mine), (action, params)
            if not expected:
                assert thor["errorMessage"]
        for action, params in REFUSED:
            before = state_of(world.metadata)
            thor = world.step(action, **params)
            assert not thor["lastActionSuccess"] and "not executed" in thor["errorMessage"], (action, params)
            assert not symbolic.step(action, **params)["lastActionSuccess"], (action, params)
            assert state_of(thor)["objects"] == before["objects"] and thor["sceneName"] == "FloorPlan1_physics"
        # the bridge really moved the agent: it stands where GetReachablePositions allowed,
        # facing the bread, within reach
        agent = world.metadata["agent"]
        bread = next(o for o in world.metadata["objects"] if o["objectId"] == BREAD)
        assert agent["location"] == BREAD
        assert math.hypot(bread["position"]["x"] - agent["position"]["x"],
                          bread["position"]["z"] - agent["position"]["z"]) < 1.0
        assert world.frame.shape == (300, 300, 3) and world.depth_frame.shape == (300, 300)


def test_start_placements_go_through_set_object_poses(scene):
    with Ai2ThorWorld(scene, settings(render_image=False)) as world:
        by_id = {o["objectId"]: o for o in world.metadata["objects"]}
        for object_id, place in scene.start_moves.items():
            assert by_id[object_id]["parentReceptacles"] == [place]
            assert object_id in by_id[place]["receptacleObjectIds"]
        assert world.frame is not None  # the first frame still came (rendering is per step)


def test_depth_back_projected_through_camera_info_lands_on_the_object(scene):
    """After NavigateToObject, the depth at the pixel an object's metadata position projects to,
    back-projected through the intrinsics CameraInfo states, lands on the object's box (within
    1 cm of its surface), and for objects at most 7 cm thick, whose surface is that close to
    their position, within 5 cm of the metadata position. (Depth sees the surface: for an 11 cm
    apple seen from above the top face is 6 cm from its centre.)"""
    thin = ["CreditCard|-00.46|+01.10|+00.87", "ButterKnife|-00.41|+01.11|-00.46", EGG,
            "Spatula|+00.38|+00.91|-02.33", "PepperShaker|+00.30|+00.90|-02.47"]
    errors = {}
    recorded = load_scene(floorplan_source("FloorPlan1")).by_id()  # where the boxes were recorded
    with Ai2ThorWorld(scene, settings()) as world:
        for object_id in thin + [APPLE, "Tomato|-00.39|+01.14|-00.81", "Mug|-01.76|+00.90|-00.62"]:
            world.step("NavigateToObject", objectId=object_id)
            record = next(o for o in world.metadata["objects"] if o["objectId"] == object_id)
            intrinsics, pose = world.intrinsics(), world.camera_pose()
            position = tuple(record["position"][a] for a in "xyz")
            u, v, _ = project(position, intrinsics, pose)
            ui, vi = int(round(u)), int(round(v))
            point = back_project(ui, vi, float(world.depth_frame[vi, ui]), intrinsics, pose)
            box = record["axisAlignedBoundingBox"]
            # recorded boxes move with their objects (the egg was moved at reset)
            shift = {a: record["position"][a] - recorded[object_id]["position"][a] for a in "xyz"}
            for i, a in enumerate("xyz"):
                low = box["center"][a] + shift[a] - box["size"][a] / 2
                high = box["center"][a] + shift[a] + box["size"][a] / 2
                assert low - 0.01 <= point[i] <= high + 0.01, (object_id, a, point, low, high)
            errors[object_id] = math.dist(point, position)
    for object_id in thin:
        assert errors[object_id] < 0.05, (object_id, errors[object_id])


def test_frames_are_the_pinhole_model_of_camera_info(scene):
    with Ai2ThorWorld(scene, settings(width=640, height=480)) as world:
        world.step("NavigateToObject", objectId=APPLE)
        intrinsics = world.intrinsics()
        assert (intrinsics.width, intrinsics.height) == (640, 480)
        assert world.frame.shape == (480, 640, 3) and world.frame.dtype == np.uint8
        assert world.depth_frame.dtype == np.float32
        # vertical field of view 90 degrees: fy = (h / 2) / tan(45 degrees)
        assert intrinsics.fy == pytest.approx(240.0)
        apple = next(o for o in world.metadata["objects"] if o["objectId"] == APPLE)
        u, v, z = project(tuple(apple["axisAlignedBoundingBox"]["center"][a] for a in "xyz"), intrinsics,
                          world.camera_pose())
        assert abs(u - intrinsics.cx) < 2 and abs(v - intrinsics.cy) < 2  # facing it, centred
        assert 0 < world.depth_frame[int(v), int(u)] <= z


def test_unknown_floorplan_is_a_clear_error():
    bad = load_scene("tidy_floorplan1")
    bad.floorplan = "FloorPlan999"
    bad.recording = ""  # no recording the stand-in could be told to serve under that name
    with pytest.raises(SimulatorError) as info:
        Ai2ThorWorld(bad, settings())
    message = str(info.value)
    assert "no scene 'FloorPlan999'" in message and "FloorPlan1" in message and "\n" not in message


@pytest.mark.parametrize("fault,words", [("crash:4", "exited (exit code 70)"), ("hang:4", "no answer within 2 s")])
def test_a_simulator_that_dies_or_hangs_mid_task_fails_every_step_and_a_new_one_recovers(
        scene, monkeypatch, fault, words):
    monkeypatch.setenv("TASK_LEARNING_STANDIN_FAULT", fault)
    world = Ai2ThorWorld(scene, settings(server_timeout_s=2.0))
    try:
        world.step("NavigateToObject", objectId=APPLE)  # GetReachablePositions + TeleportFull
        world.step("PickupObject", objectId=APPLE)
        with pytest.raises(SimulatorError) as info:
            world.step("NavigateToObject", objectId=FRIDGE)
        assert "AI2-THOR simulator" in str(info.value) and words in str(info.value)
        assert isinstance(info.value, TaskLearningError)
        with pytest.raises(SimulatorError):  # never mistaken for a live one afterwards
            world.step("Pass")
    finally:
        world.close()
    monkeypatch.delenv("TASK_LEARNING_STANDIN_FAULT")
    with Ai2ThorWorld(scene, settings()) as again:  # a restart serves the scene afresh
        assert again.step("NavigateToObject", objectId=APPLE)["lastActionSuccess"]


def test_instance_segmentation_names_the_object_at_each_pixel(scene):
    with Ai2ThorWorld(scene, settings(render_instance_segmentation=True)) as world:
        world.step("NavigateToObject", objectId=APPLE)
        event = world._event  # the Controller's own Event: ai2thor decoded the frame itself
        mask = event.instance_masks[APPLE]
        intrinsics = world.intrinsics()
        assert mask[int(intrinsics.cy), int(intrinsics.cx)]  # facing it: the apple at the centre
        assert 0 < mask.sum() < mask.size
        assert event.instance_detections2D[APPLE] is not None


def test_a_project_scene_is_served_by_name():
    with Ai2ThorWorld(load_scene("tidy_kitchen"), settings(render_image=False)) as world:
        assert world.metadata["sceneName"] == "tidy_kitchen"
        assert world.step("NavigateToObject", objectId="Mug|2")["lastActionSuccess"]
        assert world.step("PickupObject", objectId="Mug|2")["lastActionSuccess"]
