"""The fetch bridge's core without ROS: marker registry, detection accuracy on synthetic RGB-D
frames (issue 14's numbers), the belief world state, bad input, sync, image conversion, bags, and
the whole loop camera -> world state -> STARS+O/BCR -> skills -> new images in-process."""
from __future__ import annotations

import numpy as np
import pytest

from task_learning.errors import ConfigError
from task_learning.perception import geometry as g
from task_learning.perception.bridge import FetchWorld
from task_learning.perception.detect import MarkerDetector
from task_learning.perception.evaluate import SyntheticClock, look_around, perceive, synthetic_world
from task_learning.perception.frames import check_frame
from task_learning.perception.images import image_fields, image_to_array, to_bgr, to_metres
from task_learning.perception.registry import MarkerRegistry, MarkerSpec, registry_from_dict
from task_learning.perception.skills import SkillRequest, SkillResult
from task_learning.perception.sync import ApproximateSync
from task_learning.perception.synthetic import Quad, Renderer, SimulatedRobot
from task_learning.world.camera_model import CameraModel
from task_learning.world.catalog import load_object_types
from task_learning.world.scene import load_scene

# -- registry -----------------------------------------------------------------------------------

GOOD = {"dictionary": "DICT_4X4_50", "markers": [
    {"id": 0, "object": "Fridge|1", "type": "Fridge", "size": 0.14, "offset": [0, 0.2, -0.2],
     "receptacle": {"center": [0, 0.3, -0.2], "size": [0.6, 0.4, 0.4]},
     "door": {"marker": 1, "size": 0.12, "closed_at": [0, 0.3, 0.01]}},
    {"id": 2, "object": "Mug|1", "type": "Mug", "size": 0.05, "state": {"isDirty": True}},
]}


def test_registry_loads_a_valid_file():
    reg = registry_from_dict(GOOD, known_types=load_object_types())
    assert set(reg.markers) == {0, 2} and set(reg.doors) == {1}
    assert reg.markers[0].receptacle is not None and reg.markers[0].door.marker_id == 1
    assert dict(reg.markers[2].state) == {"isDirty": True}
    assert reg.size_of(1) == 0.12 and reg.size_of(7) is None


@pytest.mark.parametrize("change, key, words", [
    (lambda d: d.update(dictionary="DICT_5X5_5O"), "dictionary", "did you mean DICT_5X5_50"),
    (lambda d: d["markers"][1].update(id=0), "markers[1].id", "already used"),
    (lambda d: d["markers"][1].update(id=1), "markers[1].id", "already used"),
    (lambda d: d["markers"][1].update(type="Mugg"), "markers[1].type", "did you mean 'Mug'"),
    (lambda d: d["markers"][1].update(size=0), "markers[1].size", "must be a finite number in (0, 2]"),
    # issue 33: hostile registries
    (lambda d: d.update(markers=[]), "markers", "empty"),
    (lambda d: d["markers"][1].update(state={"isFilthy": True}), "markers[1].state.isFilthy", "unknown key"),
    (lambda d: d["markers"][1].update(state={"isDirty": "false"}), "markers[1].state.isDirty", "expected bool"),
    (lambda d: d["markers"][1].update(id=50), "markers[1].id", "between 0 and 49"),
    (lambda d: d["markers"][0]["door"].update(marker=4096), "markers[0].door.marker", "between 0 and 49"),
    (lambda d: d["markers"][1].update(size=5000.0), "markers[1].size", "must be a finite number in (0, 2]"),
    (lambda d: d["markers"][1].update(offset=[0, float("nan"), 0]), "markers[1].offset[1]", "finite"),
    (lambda d: d["markers"][0]["receptacle"].update(size=[1, float("inf"), 1]), "markers[0].receptacle.size[1]",
     "finite"),
    (lambda d: d["markers"][1].update(object="Mug|\x1b[2J1"), "markers[1].object", "control characters"),
    (lambda d: d["markers"][1].update(name="mug\x07"), "markers[1].name", "control characters"),
    (lambda d: d["markers"][1].update(sise=1), "markers[1].sise", "unknown key"),
    (lambda d: d["markers"][0]["receptacle"].update(size=[1, 2]), "markers[0].receptacle.size", "3 numbers"),
    (lambda d: d["markers"][1].update(object="Fridge|1"), "markers[1].object", "two markers"),
])
def test_registry_errors_name_the_key(change, key, words):
    import copy

    data = copy.deepcopy(GOOD)
    change(data)
    with pytest.raises(ConfigError) as err:
        registry_from_dict(data, source="markers.yaml", known_types=load_object_types())
    assert f"markers.yaml: {key}:" in str(err.value) and words in str(err.value)


# -- accuracy (issue 14, "Done when") -----------------------------------------------------------

def _check_report(report, scene):
    assert report["expected"] > 0 and report["detected"] == report["expected"], report
    assert report["missed_in_frames"] == 0
    assert report["position_error_m"]["median"] < 0.01
    assert report["position_error_m"]["max"] < 0.03
    assert report["containment_correct"] == report["task_objects"] == len(scene.task_objects)
    assert report["open_state_correct"] == report["openable_seen"] > 0
    assert report["status"] == "" and report["unregistered"] == []


@pytest.mark.parametrize("scene_name", ["store_groceries", "tidy_kitchen"])
@pytest.mark.parametrize("pose", ["centre", "offset"])
def test_synthetic_frames_meet_the_accuracy_targets(scene_name, pose):
    scene = load_scene(scene_name)
    report = perceive(scene, pose=pose)
    assert report["image_size"] == [640, 480] and report["frames"] == 12
    _check_report(report, scene)


def test_markers_in_view_are_between_half_a_metre_and_three_metres():
    robot = SimulatedRobot(load_scene("store_groceries"))
    distances = []
    for pose in robot.look_around_poses() + [robot.layout.standing_pose("Bag|1")]:
        distances += list(robot.render(0.0, pose).in_view.values())
    assert distances and min(distances) >= 0.5 and max(distances) <= 3.0
    assert min(distances) < 1.5 < 2.0 < max(distances)  # near and far both covered


@pytest.mark.parametrize("scene_name, moved", [("store_groceries", ("Yogurt|1", "CounterTop|1")),
                                               ("tidy_kitchen", ("Mug|2", "Sink|1"))])
def test_after_an_object_moved(scene_name, moved):
    scene = load_scene(scene_name)
    report = perceive(scene, moved=moved)
    _check_report(report, scene)
    row = next(r for r in report["objects"] if r["object_id"] == moved[0])
    assert row["parent"] == moved[1] == row["true_parent"]


def test_belief_follows_a_move_seen_later_and_keeps_objects_out_of_view():
    scene = load_scene("store_groceries")
    world, robot, clock = synthetic_world(scene)
    before = {o["objectId"]: o for o in world.metadata["objects"]}
    assert before["Yogurt|1"]["parentReceptacles"] == ["Bag|2"]
    # the robot faces the fridge: most objects are now out of view but stay known
    robot.T_world_base = robot.layout.standing_pose("Fridge|1")
    clock.now += 60.0
    world.process(robot.render(clock.tick()).frame, T_world_base=robot.T_world_base)
    after = {o["objectId"]: o for o in world.metadata["objects"]}
    assert set(after) == set(before)
    assert after["Fridge|1"]["visible"] and not after["Yogurt|1"]["visible"]
    assert after["Fridge|1"]["confidence"] == 1.0 and 0.6 < after["Yogurt|1"]["confidence"] < 0.8
    assert after["Yogurt|1"]["lastSeen"] < clock.now - 59
    # someone moves the yogurt to the counter; the robot sees it there after a look-around
    robot.move_object("Yogurt|1", "CounterTop|1")
    robot.T_world_base = g.base_pose(0.0, 0.0, 0.0)
    look_around(world, robot, clock)
    moved = {o["objectId"]: o for o in world.metadata["objects"]}["Yogurt|1"]
    assert moved["parentReceptacles"] == ["CounterTop|1"] and moved["confidence"] == pytest.approx(1.0, abs=0.01)


def test_doors_open_and_close_from_the_images():
    scene = load_scene("store_groceries")
    world, robot, clock = synthetic_world(scene)
    fridge = lambda: next(o for o in world.metadata["objects"] if o["objectId"] == "Fridge|1")  # noqa: E731
    assert not fridge()["isOpen"] and fridge()["openStateKnown"]
    robot.execute(SkillRequest("navigate", "Fridge|1"))
    robot.execute(SkillRequest("open", "Fridge|1"))  # behind the bridge's back: only images tell
    world.process(robot.render(clock.tick()).frame, T_world_base=robot.T_world_base)
    assert fridge()["isOpen"]
    robot.execute(SkillRequest("close", "Fridge|1"))
    world.process(robot.render(clock.tick()).frame, T_world_base=robot.T_world_base)
    assert not fridge()["isOpen"]


def test_apriltag_36h11_through_cv2_aruco():
    camera = CameraModel.fetch_head()
    renderer = Renderer(camera, "DICT_APRILTAG_36h11")
    T_marker = g.facing((1.5, 0.2, 1.0), (-1.0, 0.0, 0.0))
    view = renderer.render([Quad("tag", T_marker, 0.2, 0.2, 7, 0.16)], g.make(g.OPTICAL_IN_BODY, (0, 0, 1.0)),
                           depth_noise_m=0.005)
    registry = MarkerRegistry("DICT_APRILTAG_36h11", {7: MarkerSpec(7, "Mug|1", "Mug", 0.16)})
    found = MarkerDetector(registry).detect(view.frame)
    assert [o.marker_id for o in found.observations] == [7]
    position = g.apply(view.frame.T_world_camera @ found.observations[0].T_camera_marker, np.zeros(3))
    assert np.linalg.norm(position - T_marker[:3, 3]) < 0.01


# -- bad input ----------------------------------------------------------------------------------

def _frame(**changes):
    robot = SimulatedRobot(load_scene("store_groceries"))
    frame = robot.render(100.0).frame
    for key, value in changes.items():
        setattr(frame, key, value)
    return frame


@pytest.mark.parametrize("changes, words", [
    ({"camera": None}, "no camera info"),
    ({"depth": np.zeros((240, 320), np.float32)}, "differ in size"),
    ({"camera": CameraModel.fetch_head(320, 240)}, "camera info is for 320x240"),
    ({"stamp": 98.5}, "stale frames"),
    ({"T_world_camera": None}, "no camera pose"),
])
def test_bad_frames_are_refused_with_a_reason_and_actions_too(changes, words):
    frame = _frame(**changes)
    assert words in check_frame(frame, now=100.0, max_age_s=1.0)
    calls = []

    class Skills:
        def execute(self, request):
            calls.append(request)
            return SkillResult(True)

    world = FetchWorld(SimulatedRobot(load_scene("store_groceries")).registry, Skills(), clock=lambda: 100.0)
    assert words in world.process(frame)
    assert words in world.metadata["perceptionStatus"]
    result = world.step("NavigateToObject", objectId="Fridge|1")
    assert not result["lastActionSuccess"] and result["errorCode"] == "perception_unavailable"
    assert words in result["errorMessage"] and calls == []  # nothing was sent to the robot


def test_frames_that_stop_make_the_world_stale():
    scene = load_scene("store_groceries")
    world, robot, clock = synthetic_world(scene)
    world.max_age_s = 1.0
    assert world.status() == ""
    clock.now += 1.5
    assert "stale frames" in world.metadata["perceptionStatus"]


def test_an_unregistered_marker_is_reported_not_guessed():
    scene = load_scene("store_groceries")
    robot = SimulatedRobot(scene)
    robot.add_stray_marker(99)
    clock = SyntheticClock()
    world = FetchWorld(robot.registry, None, scene=scene, clock=clock)
    tally = look_around(world, robot, clock)
    assert 99 in tally.unregistered
    ids = {o["objectId"] for o in world.metadata["objects"]}
    assert len(ids) == len(scene.objects)  # nothing invented for marker 99
    world.process(robot.render(clock.tick(), robot.look_around_poses()[0]).frame,
                  T_world_base=robot.look_around_poses()[0])
    if 99 in world.last_detections.unregistered:
        assert "unregistered marker id(s) 99" in world.status()


@pytest.mark.parametrize("result, code", [
    (SkillResult(False, "skill server 'fetch_skills' is not available", "skill_server_down"), "skill_server_down"),
    (SkillResult(False, "skill pick(Yogurt|1) timed out after 2 s (goal cancelled)", "skill_timeout"), "skill_timeout"),
])
def test_a_skill_server_down_or_too_slow_fails_the_action(result, code):
    scene = load_scene("store_groceries")
    world, robot, clock = synthetic_world(scene)

    class Broken:
        def execute(self, request):
            return result

    world.skills = Broken()
    before = {o["objectId"]: o["parentReceptacles"] for o in world.metadata["objects"]}
    out = world.step("NavigateToObject", objectId="Yogurt|1")
    assert not out["lastActionSuccess"] and out["errorCode"] == code
    assert out["errorMessage"] == result.error_message and "skill server" in out["perceptionStatus"]
    assert world.belief.location != "Yogurt|1"  # no effect believed
    assert {o["objectId"]: o["parentReceptacles"] for o in out["objects"]} == before


def test_unsupported_actions_and_unseen_objects_fail_clearly():
    world, robot, clock = synthetic_world(load_scene("store_groceries"))
    out = world.step("SliceObject", objectId="Cheese|1")
    assert not out["lastActionSuccess"] and out["errorCode"] == "unsupported"
    out = world.step("PickupObject", objectId="Apple|9")
    assert not out["lastActionSuccess"] and "has not been seen" in out["errorMessage"]


# -- sync and images ----------------------------------------------------------------------------

def test_approximate_sync_matches_within_the_slop():
    sync = ApproximateSync(["color", "depth", "info"], slop_s=0.02)
    assert sync.add("color", 1.000, "c1") is None
    assert sync.add("depth", 1.013, "d1") is None
    assert sync.missing() == ["info"]
    matched = sync.add("info", 0.995, "i1")
    assert {k: v[1] for k, v in matched.items()} == {"color": "c1", "depth": "d1", "info": "i1"}
    # too far apart: no set; then a partner arrives out of order
    assert sync.add("color", 2.0, "c2") is None
    assert sync.add("depth", 2.5, "d2") is None
    assert sync.add("info", 2.0, "i2") is None
    matched = sync.add("depth", 2.01, "d2b")
    assert matched["depth"][1] == "d2b" and matched["color"][1] == "c2"


def test_image_conversion_round_trips_and_rejects_bad_fields():
    rng = np.random.default_rng(1)
    bgr = rng.integers(0, 255, (4, 6, 3), dtype=np.uint8)
    f = image_fields(bgr[:, :, ::-1], "rgb8")
    back = to_bgr(image_to_array(f["encoding"], f["height"], f["width"], f["step"], f["data"]), "rgb8")
    assert np.array_equal(back, bgr)
    mm = np.array([[0, 1000], [2500, 65535]], np.uint16)
    f = image_fields(mm, "16UC1")
    assert np.allclose(to_metres(image_to_array("16UC1", 2, 2, f["step"], f["data"]), "16UC1"),
                       [[0, 1.0], [2.5, 65.535]])
    padded = np.zeros((2, 16), np.uint8)  # a step larger than a row is honoured
    padded[:, :8] = np.frombuffer(np.array([[1.0, np.nan], [2.0, np.inf]], np.float32).tobytes(), np.uint8).reshape(2, 8)
    assert np.allclose(to_metres(image_to_array("32FC1", 2, 2, 16, padded.tobytes()), "32FC1"), [[1, 0], [2, 0]])
    with pytest.raises(ValueError, match="expected step x height"):
        image_to_array("bgr8", 4, 6, 18, b"\0" * 10)
    with pytest.raises(ValueError, match="unsupported image encoding"):
        image_to_array("yuv422", 4, 6, 12, b"\0" * 48)
    with pytest.raises(ValueError, match="expected one of"):
        to_bgr(np.zeros((2, 2), np.float32), "32FC1")


# -- the loop and bags --------------------------------------------------------------------------

@pytest.mark.slow
def test_stars_o_reaches_every_goal_on_the_belief_world():
    from task_learning.planning import session
    from task_learning.world.completion import completion

    scene = load_scene("store_groceries")
    box = {}

    def make(_name, _scene, _seed=None):
        box["world"], box["robot"], _ = synthetic_world(scene)
        return box["world"]

    original = session.make_backend
    session.make_backend = make
    try:
        metrics, _ = session.run_in_process(session.RunSpec(scene="store_groceries", condition="STARS+O"))
    finally:
        session.make_backend = original
    assert metrics.to_dict()["completion"] == 100.0
    truth = completion(scene, box["robot"].world.metadata)  # the simulated world agrees
    assert truth.satisfied == truth.total == 18
    assert box["world"].frames > 50  # every skill was followed by a new frame


def tf_message(ts, stamp, parent: str, child: str, T: np.ndarray):
    """A rosbags TFMessage holding T_parent_child."""
    x, y, z, qx, qy, qz, qw = g.to_xyz_quat(T)
    transform = ts.types["geometry_msgs/msg/Transform"](
        translation=ts.types["geometry_msgs/msg/Vector3"](x=x, y=y, z=z),
        rotation=ts.types["geometry_msgs/msg/Quaternion"](x=qx, y=qy, z=qz, w=qw))
    header = ts.types["std_msgs/msg/Header"](stamp=stamp, frame_id=parent)
    return ts.types["tf2_msgs/msg/TFMessage"](transforms=[ts.types["geometry_msgs/msg/TransformStamped"](
        header=header, child_frame_id=child, transform=transform)])


def test_a_bag_replays_into_the_bridge_with_the_same_world_state(tmp_path):
    from task_learning.apps.cli.bag_cmd import CAMERA_DEFAULTS, summarize
    from task_learning.perception.bag import BagWriter, _typestore, bag_info, replay_into_bridge

    scene = load_scene("tidy_kitchen")
    robot = SimulatedRobot(scene)
    clock = SyntheticClock()
    live = FetchWorld(robot.registry, None, scene=scene, clock=clock)
    ts = _typestore()
    Image, Info = ts.types["sensor_msgs/msg/Image"], ts.types["sensor_msgs/msg/CameraInfo"]
    Header, Time = ts.types["std_msgs/msg/Header"], ts.types["builtin_interfaces/msg/Time"]
    writer = BagWriter(tmp_path / "bag", "mcap")
    cam = robot.camera
    for pose in robot.look_around_poses():
        stamp = clock.tick()
        view = robot.render(stamp, pose)
        live.process(view.frame, T_world_base=pose)
        sec = int(stamp)
        header = Header(stamp=Time(sec=sec, nanosec=int(round((stamp - sec) * 1e9))), frame_id="cam")
        ns = int(stamp * 1e9)
        c = image_fields(view.frame.color, "bgr8")
        d = image_fields(view.frame.depth, "32FC1")
        for topic, fields in ((CAMERA_DEFAULTS["color"], c), (CAMERA_DEFAULTS["depth"], d)):
            msg = Image(header=header, height=fields["height"], width=fields["width"], encoding=fields["encoding"],
                        is_bigendian=0, step=fields["step"], data=np.frombuffer(fields["data"], np.uint8))
            writer.write(topic, "sensor_msgs/msg/Image", ns, ts.serialize_cdr(msg, "sensor_msgs/msg/Image"))
        info = Info(header=header, height=cam.height, width=cam.width, distortion_model="plumb_bob",
                    d=np.zeros(5), k=np.array(cam.k()), r=np.eye(3).ravel(), p=np.zeros(12),
                    binning_x=0, binning_y=0,
                    roi=ts.types["sensor_msgs/msg/RegionOfInterest"](x_offset=0, y_offset=0, height=0, width=0,
                                                                       do_rectify=False))
        writer.write(CAMERA_DEFAULTS["info"], "sensor_msgs/msg/CameraInfo", ns,
                     ts.serialize_cdr(info, "sensor_msgs/msg/CameraInfo"))
        writer.write(CAMERA_DEFAULTS["tf"], "tf2_msgs/msg/TFMessage", ns - 1000,
                     ts.serialize_cdr(tf_message(ts, header.stamp, "map", "base_link", pose), "tf2_msgs/msg/TFMessage"))
    writer.write(CAMERA_DEFAULTS["tf_static"], "tf2_msgs/msg/TFMessage", 1,
                 ts.serialize_cdr(tf_message(ts, Time(sec=0, nanosec=0), "base_link", "cam", robot.T_base_camera),
                                  "tf2_msgs/msg/TFMessage"))
    writer.close()
    info = bag_info(tmp_path / "bag")
    assert info["topics"][CAMERA_DEFAULTS["color"]]["count"] == 12
    replayed = FetchWorld(robot.registry, None, scene=scene, max_age_s=0.0, clock=lambda: replayed.last_frame_stamp)
    report = replay_into_bridge(tmp_path / "bag", replayed, color_topic=CAMERA_DEFAULTS["color"],
                                depth_topic=CAMERA_DEFAULTS["depth"], info_topic=CAMERA_DEFAULTS["info"],
                                map_frame="map", base_frame="base_link")
    assert report.frames_used == 12 and report.frames_refused == []
    assert summarize(replayed.metadata) == summarize(live.metadata)
