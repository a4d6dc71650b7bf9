"""The simulated world's fiducial markers (sim/markers.py) as the stack's perception reads them:
the registry the simulator writes loads with the stack's loader, and a frame rendered from a
stand-off pose is detected by the stack's detector where the registry says the objects are."""
from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

os.environ.setdefault("MUJOCO_GL", "egl")  # offscreen, before mujoco is imported (as sim/ does)
mujoco = pytest.importorskip("mujoco")
from task_learning.perception.detect import MarkerDetector  # noqa: E402
from task_learning.perception.frames import RGBDFrame  # noqa: E402
from task_learning.perception.registry import load_registry, registry_from_dict  # noqa: E402
from task_learning.world.camera_model import CameraModel  # noqa: E402
from task_learning.world.scene import load_scene  # noqa: E402
from task_learning_sim.markers import add_markers, registry_yaml  # noqa: E402
from task_learning_sim.scene_world import build_world  # noqa: E402
from task_learning_sim.simulator import Simulator  # noqa: E402

SHORT = Path(__file__).resolve().parents[1] / "data" / "scenes" / "sim_short.yaml"


@pytest.fixture(scope="module")
def marked():
    world = build_world(load_scene(str(SHORT)))
    plan = add_markers(world)
    registry = registry_from_dict(yaml.safe_load(registry_yaml(plan)), source="sim")
    return world, plan, registry


def test_every_object_and_piece_has_a_marker_and_every_door_one(marked):
    world, _, registry = marked
    assert set(registry.by_object) == set(world.items) | set(world.receptacles)
    doors = {spec.object_id for spec in registry.doors.values()}
    assert doors == {r.id for r in world.receptacles.values() if r.joint}
    for spec in registry.markers.values():
        assert (spec.receptacle is not None) == (spec.object_id in world.receptacles)


def _frame_from_front(sim: Simulator, piece: str, standoff: float, look_at: tuple[str, ...] = ()) -> RGBDFrame:
    """The head camera's frame with the base `standoff` m before the piece's front, the head
    pointed at the middle of the bodies `look_at` (default: the piece's place volume's floor)."""
    from task_learning_sim.head import pan_tilt_toward

    receptacle = sim.world.receptacles[piece]
    px, py, yaw = receptacle.pose
    reach = receptacle.depth / 2 + standoff
    for joint, value in (("base_x_joint", px + reach * math.cos(yaw)), ("base_y_joint", py + reach * math.sin(yaw)),
                         ("base_yaw_joint", yaw + math.pi), ("torso_lift_joint", 0.35)):
        sim.data.joint(joint).qpos[0] = value
    mujoco.mj_forward(sim.model, sim.data)
    place = sim.data.body(receptacle.place.body)
    floor = place.xpos + place.xmat.reshape(3, 3) @ np.array([0.0, 0.0, receptacle.place.low[2]])
    if look_at:
        floor = np.mean([sim.data.body(name).xpos for name in look_at], axis=0)
    pan, tilt = pan_tilt_toward(floor, sim.data.body("head_pan_link").xpos,
                                sim.data.body("torso_lift_link").xmat.reshape(3, 3))
    sim.data.joint("head_pan_joint").qpos[0], sim.data.joint("head_tilt_joint").qpos[0] = pan, tilt
    mujoco.mj_forward(sim.model, sim.data)
    renderer = mujoco.Renderer(sim.model, 480, 640)
    try:
        renderer.update_scene(sim.data, "head_camera_rgb")
        rgb = renderer.render()
        renderer.enable_depth_rendering()
        renderer.update_scene(sim.data, "head_camera_rgb")
        depth = renderer.render().astype(np.float32)
    finally:
        renderer.close()
    camera = sim.data.camera("head_camera_rgb")
    T = np.eye(4)
    T[:3, :3] = camera.xmat.reshape(3, 3) @ np.diag([1.0, -1.0, -1.0])  # MuJoCo's camera -> optical frame
    T[:3, 3] = camera.xpos
    return RGBDFrame(color=np.ascontiguousarray(rgb[:, :, ::-1]), depth=depth,
                     camera=CameraModel.from_fov(640, 480, 50.0), stamp=0.0, T_world_camera=T)


def test_the_stacks_detector_finds_the_groceries_on_the_table_where_they_are(marked):
    world, _, registry = marked
    sim = Simulator(world)
    frame = _frame_from_front(sim, "DiningTable|1", 0.5, ("CanOfBeans|1", "Yogurt|1"))
    found = MarkerDetector(registry).detect(frame)
    seen = {obs.object_id: obs for obs in found.observations}
    assert {"CanOfBeans|1", "Yogurt|1"} <= set(seen), found.rejected
    for object_id in ("CanOfBeans|1", "Yogurt|1"):
        spec = registry.by_object[object_id]
        T_world_marker = frame.T_world_camera @ seen[object_id].T_camera_marker
        centre = T_world_marker[:3, :3] @ np.asarray(spec.offset) + T_world_marker[:3, 3]
        truth = sim.data.body(object_id).xpos
        assert np.linalg.norm(centre - truth) < 0.02, (object_id, centre, truth)


def test_the_cupboards_door_closed_then_swung_open_as_the_belief_reads_it(marked):
    """Closed: both markers seen, the door's where the registry puts it. Swung wide open: the door
    marker is out of sight, and the depth where the closed door would be shows the cupboard's
    inside (what the belief's depth check reads)."""
    from task_learning.perception import geometry as g
    from task_learning.perception.belief import door_is_open

    world, _, registry = marked
    sim = Simulator(world)
    spec = registry.by_object["Cupboard|1"]
    assert spec.door is not None

    def seen(frame: RGBDFrame) -> dict[str, np.ndarray]:
        return {obs.role: frame.T_world_camera @ obs.T_camera_marker
                for obs in MarkerDetector(registry).detect(frame).observations if obs.object_id == "Cupboard|1"}

    class Track:  # what door_is_open reads of a belief track
        pass

    frame = _frame_from_front(sim, "Cupboard|1", 1.0)
    markers = seen(frame)
    Track.spec, Track.T_world_marker = spec, markers["body"]  # type: ignore[attr-defined]
    assert not door_is_open(Track, markers["door"])  # type: ignore[arg-type]
    sim.data.joint("Cupboard|1/hinge").qpos[0] = 1.2
    frame = _frame_from_front(sim, "Cupboard|1", 1.0)
    markers = seen(frame)
    assert set(markers) == {"body"}
    where = g.apply(g.invert(frame.T_world_camera) @ markers["body"], np.asarray(spec.door.closed_at))
    (u, v), = frame.camera.project(where[None, :])[0]  # type: ignore[union-attr]
    assert frame.depth[int(round(v)), int(round(u))] > where[2] + 0.1


def test_the_simulator_writes_the_registry_the_stack_loads(tmp_path):
    out = tmp_path / "markers.yaml"
    done = subprocess.run([sys.executable, "-m", "task_learning_sim.cli", "--scene", str(SHORT), "--check",
                           "--write-marker-registry", str(out)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    registry = load_registry(out)
    assert len(registry.markers) == 5 and len(registry.doors) == 1
    bad = subprocess.run([sys.executable, "-m", "task_learning_sim.cli", "--scene", str(SHORT), "--check",
                          "--write-marker-registry", str(tmp_path / "missing" / "m.yaml")],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "--write-marker-registry" in bad.stderr and "Traceback" not in bad.stderr
