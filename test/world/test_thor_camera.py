"""The pinhole model shared by the stand-in's renderer, CameraInfo and the tests; the look-around
every backend runs (VisualSearch); the symbolic world's camera moves."""
from __future__ import annotations

import math

import pytest

from task_learning.world.camera_model import CameraModel
from task_learning.world.look import look_around_plan
from task_learning.world.scene import load_scene
from task_learning.world.symbolic import SymbolicWorld
from task_learning.world.thor.camera import CameraPose, back_project, project


def test_intrinsics_follow_the_vertical_field_of_view():
    k = CameraModel.from_fov(640, 480, 90.0)
    assert (k.fx, k.fy, k.cx, k.cy) == (pytest.approx(240.0), pytest.approx(240.0), 319.5, 239.5)
    assert k.k() == [k.fx, 0.0, 319.5, 0.0, k.fy, 239.5, 0.0, 0.0, 1.0]
    with pytest.raises(ValueError):
        CameraModel.from_fov(0, 480, 90.0)


@pytest.mark.parametrize("yaw,horizon", [(0, 0), (90, 30), (225, -20), (317.5, 60)])
def test_projection_and_back_projection_are_inverse(yaw, horizon):
    k = CameraModel.from_fov(300, 300, 90.0)
    pose = CameraPose.at((1.0, 1.5, -2.0), yaw, horizon)
    point = (pose.position[0] + 2 * pose.forward[0] + 0.3 * pose.right[0],
             pose.position[1] + 2 * pose.forward[1] + 0.3 * pose.right[1] - 0.2,
             pose.position[2] + 2 * pose.forward[2] + 0.3 * pose.right[2])
    u, v, depth = project(point, k, pose)
    assert math.dist(back_project(u, v, depth, k, pose), point) < 1e-9
    x, y, z, w = pose.quaternion_xyzw()
    assert x * x + y * y + z * z + w * w == pytest.approx(1.0)
    assert _rotate((x, y, z, w), (0.0, 0.0, 1.0)) == pytest.approx(pose.forward)
    assert _rotate((x, y, z, w), (1.0, 0.0, 0.0)) == pytest.approx(pose.right)
    assert _rotate((x, y, z, w), (0.0, -1.0, 0.0)) == pytest.approx(pose.down)
    assert project(tuple(pose.position[i] - pose.forward[i] for i in range(3)), k, pose) is None


def _rotate(q, v):
    x, y, z, w = q
    # v' = v + 2w (q x v) + 2 q x (q x v)
    cx = (y * v[2] - z * v[1], z * v[0] - x * v[2], x * v[1] - y * v[0])
    cc = (y * cx[2] - z * cx[1], z * cx[0] - x * cx[2], x * cx[1] - y * cx[0])
    return tuple(v[i] + 2 * w * cx[i] + 2 * cc[i] for i in range(3))


def test_camera_faces_plus_z_at_yaw_0_and_looks_down_with_positive_horizon():
    pose = CameraPose.at((0.0, 1.5, 0.0), 0.0, 30.0)
    assert pose.forward[2] > 0 and pose.forward[1] < 0
    assert pose.right == pytest.approx((1.0, 0.0, 0.0))  # Unity: +x is to the right of +z


def test_look_around_is_a_full_turn_then_the_target_in_the_image_centre():
    agent = {"position": {"x": 0.0, "y": 0.9, "z": 0.0}, "rotation": {"y": 0.0}, "cameraHorizon": 0.0}
    plan = look_around_plan(agent, {"x": -1.0, "y": 0.9, "z": 0.0})
    assert plan[:4] == [("RotateRight", 90.0)] * 4
    assert ("RotateLeft", 90.0) in plan and plan[-1][0] == "LookDown"


def test_symbolic_world_looks_around_rotates_teleports_and_keeps_limits():
    world = SymbolicWorld(load_scene("tidy_kitchen"))
    before = world.metadata
    fridge = next(o for o in before["objects"] if o["objectType"] == "Fridge")
    after = world.step("VisualSearch", objectId=fridge["objectId"])
    assert after["lastActionSuccess"] and after["lastAction"] == "VisualSearch"
    pose = CameraPose.from_metadata(after)
    u, v, _ = project(tuple(fridge["position"][a] for a in "xyz"), CameraModel.from_fov(300, 300, 90.0), pose)
    assert abs(u - 149.5) < 1e-3  # facing it (the horizon is clamped at 60 degrees down)
    objects = {o["objectId"]: {k: v for k, v in o.items() if k != "distance"} for o in after["objects"]}
    assert objects == {o["objectId"]: {k: v for k, v in o.items() if k != "distance"} for o in before["objects"]}
    assert world.step("LookUp", degrees=120)["errorCode"] == "horizon_limit"
    assert world.step("RotateLeft", degrees=45)["agent"]["rotation"]["y"] == pytest.approx(
        (after["agent"]["rotation"]["y"] - 45) % 360)
    moved = world.step("TeleportFull", position={"x": 1.0, "y": 0.9, "z": 2.0}, rotation={"x": 0, "y": 90, "z": 0},
                       horizon=10, standing=True)
    assert moved["agent"]["position"] == {"x": 1.0, "y": 0.9, "z": 2.0} and moved["agent"]["cameraHorizon"] == 10
    assert not world.step("Teleport", position="here")["lastActionSuccess"]
