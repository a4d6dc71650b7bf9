"""The detector interface beside the markers: a stub detector's boxes on synthetic RGB-D frames
become 3D centres from depth; bad boxes and missing depth are refused with a reason; weights are
local files only."""
from __future__ import annotations

import numpy as np
import pytest

from task_learning.errors import TaskLearningError
from task_learning.perception import geometry as g
from task_learning.perception.bridge import FetchWorld
from task_learning.perception.frames import RGBDFrame
from task_learning.perception.objects import Detection2D, ObjectDetector, load_onnx_detector, locate
from task_learning.perception.synthetic import SimulatedRobot
from task_learning.world.camera_model import CameraModel
from task_learning.world.scene import load_scene


class StubDetector:
    """Returns the boxes it was given: the stand-in for a learned model."""

    def __init__(self, detections: list[Detection2D]) -> None:
        self.detections = detections
        self.calls = 0

    def detect(self, bgr: np.ndarray) -> list[Detection2D]:
        self.calls += 1
        return list(self.detections)


def frame_with_box(box: tuple[int, int, int, int], near: float = 1.5, far: float = 3.0) -> RGBDFrame:
    """A 640x480 frame: a wall at `far` metres, an object at `near` metres filling `box`."""
    camera = CameraModel.fetch_head(640, 480)
    depth = np.full((480, 640), far, dtype=np.float32)
    x0, y0, x1, y1 = box
    depth[y0:y1, x0:x1] = near
    color = np.zeros((480, 640, 3), dtype=np.uint8)
    return RGBDFrame(color, depth, camera, 10.0, g.head_camera())


def test_a_box_becomes_a_centre_from_depth() -> None:
    frame = frame_with_box((300, 200, 380, 260))
    detector: ObjectDetector = StubDetector([Detection2D("mug", 0.9, (300.0, 200.0, 380.0, 260.0))])
    located = locate(detector.detect(frame.color), frame)
    assert located.rejected == [] and len(located.observations) == 1
    obs = located.observations[0]
    camera = frame.camera
    assert camera is not None
    expected = np.array([(340 - camera.cx) / camera.fx * 1.5, (230 - camera.cy) / camera.fy * 1.5, 1.5])
    assert np.allclose(obs.centre_camera, expected, atol=1e-6)
    assert obs.centre_world is not None and np.allclose(obs.centre_world, g.apply(g.head_camera(), expected))


def test_low_scores_bad_boxes_and_missing_depth_are_not_placed() -> None:
    frame = frame_with_box((300, 200, 380, 260))
    frame.depth[200:260, 300:380] = 0.0  # no depth on the object
    located = locate([Detection2D("mug", 0.9, (300.0, 200.0, 380.0, 260.0)),
                      Detection2D("cup", 0.2, (10.0, 10.0, 50.0, 50.0)),
                      Detection2D("bowl", 0.8, (600.0, 400.0, 700.0, 500.0))], frame)
    assert located.observations == []
    assert any("mug (0.90): 0 valid depth pixels" in r for r in located.rejected)
    assert any("bowl (0.80): box" in r and "not inside the 640x480 image" in r for r in located.rejected)
    assert not any("cup" in r for r in located.rejected)  # below min_score: not a detection at all


def test_a_stub_detector_runs_beside_the_markers_on_the_simulated_robots_frames() -> None:
    scene = load_scene("store_groceries")
    robot = SimulatedRobot(scene)
    pose = robot.look_around_poses()[0]
    view = robot.render(5.0, pose)
    camera = view.frame.camera
    assert camera is not None
    box = (camera.width * 0.4, camera.height * 0.4, camera.width * 0.6, camera.height * 0.6)
    stub = StubDetector([Detection2D("thing", 0.95, box)])
    world = FetchWorld(robot.registry, None, scene=scene, clock=lambda: 5.0, object_detector=stub)
    assert world.process(view.frame, T_world_base=pose) == ""
    assert stub.calls == 1 and world.frames == 1
    assert len(world.belief.tracks) > 0  # the markers still make the world state
    located = world.last_located
    assert located is not None and len(located.observations) == 1
    centre = located.observations[0].centre_world
    assert centre is not None and np.isfinite(centre).all()


def test_weights_are_local_files_with_clear_errors(tmp_path) -> None:
    labels = tmp_path / "labels.txt"
    labels.write_text("mug\nbowl\n")
    with pytest.raises(TaskLearningError, match="detector weights not found"):
        load_onnx_detector(tmp_path / "model.onnx", labels)
    (tmp_path / "model.onnx").write_bytes(b"not a model")
    with pytest.raises(TaskLearningError, match="cannot load the ONNX model"):
        load_onnx_detector(tmp_path / "model.onnx", labels)
    (tmp_path / "empty.txt").write_text("\n")
    with pytest.raises(TaskLearningError, match="no labels"):
        load_onnx_detector(tmp_path / "model.onnx", tmp_path / "empty.txt")
