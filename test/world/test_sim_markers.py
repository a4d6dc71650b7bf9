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
    receptacle = sim.world.receptacles[piece]
    px, py, yaw = receptacle.pose
    reach = receptacle.depth / 2 + standoff
    base = (px + reach * math.cos(yaw), py + reach * math.sin(yaw), yaw + math.pi)
    place = sim.data.body(receptacle.place.body)
    floor = place.xpos + place.xmat.reshape(3, 3) @ np.array([0.0, 0.0, receptacle.place.low[2]])
    if look_at:
        floor = np.mean([sim.data.body(name).xpos for name in look_at], axis=0)
    return _frame_from(sim, base, 0.35, floor)


def _frame_from(sim: Simulator, base: tuple[float, float, float], torso: float, target: np.ndarray) -> RGBDFrame:
    """The head camera's frame with the base at `base` (x, y, yaw), the torso lifted `torso` m and
    the head pointed at `target` (world)."""
    from task_learning_sim.head import pan_tilt_toward

    for joint, value in (("base_x_joint", base[0]), ("base_y_joint", base[1]), ("base_yaw_joint", base[2]),
                         ("torso_lift_joint", torso)):
        sim.data.joint(joint).qpos[0] = value
    mujoco.mj_forward(sim.model, sim.data)
    pan, tilt = pan_tilt_toward(np.asarray(target, dtype=float), sim.data.body("head_pan_link").xpos,
                                sim.data.body("torso_lift_link").xmat.reshape(3, 3))
    sim.data.joint("head_pan_joint").qpos[0], sim.data.joint("head_tilt_joint").qpos[0] = pan, min(tilt, 1.45)
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


BOX_SCENE = """
name: box_on_table
task: store groceries
location: kitchen
description: A box of granola turned on the table, a can of beans beside it.
subtasks:
  - name: clear the table
    instruction: Store an object that is on the dining table.
    places: [DiningTable|1]
closable: []
assertions: 2
objects:
  - {type: DiningTable}
  - {type: CounterTop}
  - {type: Granola, at: DiningTable|1, preferred: CounterTop|1}
  - {type: CanOfBeans, at: DiningTable|1, preferred: CounterTop|1}
"""


def test_the_survey_views_of_a_table_give_a_turned_box_its_place_piece_and_narrow_side(tmp_path):
    """The survey's views of a table (task_learning.perception.survey, from where perception puts
    the table) read a box of granola turned 35 degrees on it: the belief has it within 2 cm, on
    the table, and its `rotation` y is the box's narrow horizontal axis (the physics' body x,
    its 6 cm side) within 5 degrees, modulo a half turn."""
    from task_learning.perception.belief import BeliefWorld, narrow_width
    from task_learning.perception.survey import piece_views

    path = tmp_path / "box_on_table.yaml"
    path.write_text(BOX_SCENE, encoding="utf-8")
    scene = load_scene(str(path))
    world = build_world(scene)
    registry = registry_from_dict(yaml.safe_load(registry_yaml(add_markers(world))), source="sim")
    assert registry.by_object["Granola|1"].extent == (0.06, 0.15, 0.2)
    sim = Simulator(world)
    box = sim.data.joint(sim.model.body("Granola|1").jntadr[0])
    turn = np.zeros(4)
    mujoco.mju_mulQuat(turn, np.array([math.cos(math.radians(17.5)), 0.0, 0.0, math.sin(math.radians(17.5))]),
                       box.qpos[3:7].copy())
    box.qpos[3:7] = turn
    mujoco.mj_forward(sim.model, sim.data)
    belief = BeliefWorld(registry, scene.types)
    detector = MarkerDetector(registry)
    table = sim.world.receptacles["DiningTable|1"]
    first = _frame_from_front(sim, "DiningTable|1", 1.0)
    belief.update(detector.detect(first), first.T_world_camera, 0.0, first.depth, first.camera)
    track = belief.tracks["DiningTable|1"]
    for view in piece_views(track.position, track.T_world_marker[:3, 2], 0.386):
        frame = _frame_from(sim, view.base, view.torso, np.asarray(view.target))
        belief.update(detector.detect(frame), frame.T_world_camera, 0.0, frame.depth, frame.camera)
    granola = {o["objectId"]: o for o in belief.metadata()["objects"]}["Granola|1"]
    p = granola["position"]
    assert np.linalg.norm(np.array([p["x"], p["z"], p["y"]]) - sim.data.body("Granola|1").xpos) < 0.02
    assert granola["parentReceptacles"] == [table.id]
    axis = sim.data.body("Granola|1").xmat.reshape(3, 3)[:, 0]
    truth = math.degrees(math.atan2(axis[1], axis[0]))
    assert abs((granola["rotation"]["y"] - truth + 90.0) % 180.0 - 90.0) < 5.0, (granola["rotation"], truth)
    track = belief.tracks["Granola|1"]
    assert narrow_width(track.T_world_marker[:3, :3], track.spec) == 0.06


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


def test_a_known_object_whose_marker_is_hidden_is_in_view_where_it_is_and_not_where_it_is_not(marked):
    """The belief's `visible`: a known object that projects into the frame counts as in view
    though no marker of it was read (hidden behind a bag's wall from where the arm stands);
    believed in mid-air, where the camera sees the table and the floor behind, it does not."""
    from task_learning.perception.belief import BeliefWorld, Track
    from task_learning.perception.detect import Detections

    world, _, registry = marked
    sim = Simulator(world)
    frame = _frame_from_front(sim, "DiningTable|1", 0.5, ("CanOfBeans|1",))
    belief = BeliefWorld(registry, load_scene(str(SHORT)).types)
    spec = registry.by_object["CanOfBeans|1"]
    T = np.eye(4)
    T[:3, 3] = sim.data.body("CanOfBeans|1").xpos - np.asarray(spec.offset)
    belief.tracks["CanOfBeans|1"] = Track(spec, T, 0.0)
    belief.update(Detections(), frame.T_world_camera, 1.0, frame.depth, frame.camera)
    assert "CanOfBeans|1" in belief.visible
    floating = T.copy()
    floating[2, 3] += 0.25
    belief.tracks["CanOfBeans|1"] = Track(spec, floating, 0.0)
    where = np.linalg.inv(frame.T_world_camera) @ np.append(belief.tracks["CanOfBeans|1"].position, 1.0)
    (u, v), = frame.camera.project(where[None, :3])[0]
    assert 0 <= u < frame.camera.width and 0 <= v < frame.camera.height  # in the image: the depth decides
    belief.update(Detections(), frame.T_world_camera, 2.0, frame.depth, frame.camera)
    assert "CanOfBeans|1" not in belief.visible


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


def test_the_registry_says_where_each_handle_is_closed_and_open(marked):
    """`door.handle` (in the door marker's frame) puts the hand on the handle the physics has:
    on the closed door from the body's marker alone, on an open door from the door's marker."""
    from task_learning.perception.belief import Track

    world, _, registry = marked
    sim = Simulator(world)
    assert registry.doors
    for door_id, spec in registry.doors.items():
        assert spec.door is not None and spec.door.handle is not None

        def pose(geom: str) -> np.ndarray:
            T = np.eye(4)
            T[:3, :3] = sim.data.geom(geom).xmat.reshape(3, 3)
            T[:3, 3] = sim.data.geom(geom).xpos
            return T

        track = Track(spec, pose(f"marker{spec.marker_id}"), 0.0)
        handle = sim.data.geom(f"{spec.object_id}/handle").xpos.copy()
        assert np.linalg.norm(track.handle() - handle) < 0.01, spec.object_id
        joint = world.receptacles[spec.object_id].joint
        sim.data.joint(joint).qpos[0] = 0.6 * float(sim.model.joint(joint).range[1])
        mujoco.mj_forward(sim.model, sim.data)
        track.is_open, track.T_world_door = True, pose(f"marker{door_id}")
        moved = sim.data.geom(f"{spec.object_id}/handle").xpos
        assert np.linalg.norm(moved - handle) > 0.05  # the handle did move with its door
        assert np.linalg.norm(track.handle() - moved) < 0.01, spec.object_id


def test_an_opened_door_is_believed_at_its_stop_though_its_marker_faces_away(marked):
    """After the robot opened a hinged door (the assist swings it to its stop), the belief puts
    its handle where the physics has it from the registry's `door.swing` alone: the door's own
    marker then faces away from a camera in front of the piece."""
    from task_learning.perception.belief import BeliefWorld, Track
    from task_learning_sim.assists import DOOR_OPEN_RAD

    world, _, registry = marked
    sim = Simulator(world)
    spec = registry.by_object["Cupboard|1"]
    assert spec.door is not None and spec.door.swing is not None and spec.door.swing.angle == DOOR_OPEN_RAD
    T = np.eye(4)
    T[:3, :3] = sim.data.geom(f"marker{spec.marker_id}").xmat.reshape(3, 3)
    T[:3, 3] = sim.data.geom(f"marker{spec.marker_id}").xpos
    belief = BeliefWorld(registry, load_scene(str(SHORT)).types)
    belief.tracks["Cupboard|1"] = Track(spec, T, 0.0)
    joint = world.receptacles["Cupboard|1"].joint
    sim.data.joint(joint).qpos[0] = DOOR_OPEN_RAD
    mujoco.mj_forward(sim.model, sim.data)
    belief.robot_did("open", "Cupboard|1")
    handle = belief.tracks["Cupboard|1"].handle()
    assert handle is not None
    assert np.linalg.norm(handle - sim.data.geom("Cupboard|1/handle").xpos) < 0.02
