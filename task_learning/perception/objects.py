"""Object detection beyond fiducial markers: a learned detector's boxes placed in 3D with depth.

Markers stay the default (detect.MarkerDetector): they name the object and give its pose. A
learned detector (any model behind `ObjectDetector`) gives a label, a score and a 2D box per
object in the colour image; `locate` turns each box into a 3D centre in the camera's optical
frame, and in the world when the frame's camera pose is known, from the depth pixels inside the
box. What a detector is loaded from is a local file (`load_onnx_detector`: OpenCV's DNN module
reads an ONNX model): no model hub is reachable from a robot's network in general.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, Sequence

import numpy as np

from task_learning.errors import TaskLearningError
from task_learning.perception import geometry as g
from task_learning.perception.frames import RGBDFrame

INNER_FRACTION = 0.5  # the depth of an object is read in the middle half of its box (edges see past it)
MIN_DEPTH_PIXELS = 12


@dataclass(frozen=True)
class Detection2D:
    """One object a detector found: label, score in [0, 1], box (x_min, y_min, x_max, y_max) in
    pixels of the colour image."""

    label: str
    score: float
    box: tuple[float, float, float, float]


class ObjectDetector(Protocol):
    """A detector of labelled boxes in a BGR image (H x W x 3, uint8)."""

    def detect(self, bgr: np.ndarray) -> list[Detection2D]: ...


@dataclass(frozen=True)
class ObjectObservation:
    """A detection placed in 3D: the centre in the camera's optical frame and in the world (None
    where the frame has no camera pose), from the median depth inside the box."""

    detection: Detection2D
    centre_camera: np.ndarray
    centre_world: np.ndarray | None
    depth_pixels: int


@dataclass
class LocatedObjects:
    observations: list[ObjectObservation]
    rejected: list[str]  # one line each: which detection and why it has no 3D centre


def locate(detections: Sequence[Detection2D], frame: RGBDFrame, *, min_score: float = 0.5,
           min_depth_pixels: int = MIN_DEPTH_PIXELS) -> LocatedObjects:
    """3D centres of the detections scoring at least `min_score` (the ray through the box centre,
    at the median valid depth of the box's middle half)."""
    out = LocatedObjects([], [])
    camera = frame.camera
    if camera is None:
        out.rejected.append("no camera info: detections cannot be placed in 3D")
        return out
    height, width = frame.depth.shape[:2]
    for detection in detections:
        name = f"{detection.label} ({detection.score:.2f})"
        if detection.score < min_score:
            continue
        x0, y0, x1, y1 = detection.box
        if not (0 <= x0 < x1 <= width and 0 <= y0 < y1 <= height):
            out.rejected.append(f"{name}: box {detection.box} is not inside the {width}x{height} image")
            continue
        u, v = (x0 + x1) / 2.0, (y0 + y1) / 2.0
        half_w, half_h = (x1 - x0) * INNER_FRACTION / 2.0, (y1 - y0) * INNER_FRACTION / 2.0
        window = frame.depth[int(v - half_h):int(np.ceil(v + half_h)), int(u - half_w):int(np.ceil(u + half_w))]
        valid = window[np.isfinite(window) & (window > 0)]
        if valid.size < min_depth_pixels:
            out.rejected.append(f"{name}: {valid.size} valid depth pixels in its box (at least {min_depth_pixels})")
            continue
        z = float(np.median(valid))
        centre = np.array([(u - camera.cx) / camera.fx * z, (v - camera.cy) / camera.fy * z, z])
        world = g.apply(frame.T_world_camera, centre) if frame.T_world_camera is not None else None
        out.observations.append(ObjectObservation(detection, centre, world, int(valid.size)))
    return out


class OnnxDetector:
    """An SSD-style ONNX detector through OpenCV's DNN module: one output of rows
    [image_id, class_id, score, x_min, y_min, x_max, y_max] with coordinates in [0, 1] (the layout
    of OpenCV's detection-output layer), labels from a text file (one per line, class id = line)."""

    def __init__(self, weights: str | Path, labels: Sequence[str], *, input_size: tuple[int, int] = (300, 300)) -> None:
        import cv2

        self._net = cv2.dnn.readNetFromONNX(str(weights))
        self.labels = list(labels)
        self.input_size = input_size

    def detect(self, bgr: np.ndarray) -> list[Detection2D]:
        import cv2

        height, width = bgr.shape[:2]
        self._net.setInput(cv2.dnn.blobFromImage(bgr, 1.0 / 255.0, self.input_size, swapRB=True))
        rows = np.asarray(self._net.forward()).reshape(-1, 7)
        found = []
        for _image, class_id, score, x0, y0, x1, y1 in rows:
            index = int(class_id)
            label = self.labels[index] if 0 <= index < len(self.labels) else f"class_{index}"
            box = (float(np.clip(x0, 0, 1) * width), float(np.clip(y0, 0, 1) * height),
                   float(np.clip(x1, 0, 1) * width), float(np.clip(y1, 0, 1) * height))
            found.append(Detection2D(label, float(score), box))
        return found


def load_onnx_detector(weights: str | Path, labels: str | Path) -> OnnxDetector:
    """The detector of a local ONNX file and its labels file; TaskLearningError naming the file
    that is missing or unreadable (nothing is downloaded)."""
    weights, labels = Path(weights), Path(labels)
    for path, what in ((weights, "detector weights"), (labels, "detector labels")):
        if not path.is_file():
            raise TaskLearningError(f"{path}: {what} not found (a local file; nothing is downloaded)")
    names = [line.strip() for line in labels.read_text(encoding="utf-8").splitlines() if line.strip()]
    if not names:
        raise TaskLearningError(f"{labels}: no labels (one per line, the class id is the line number)")
    try:
        return OnnxDetector(weights, names)
    except Exception as exc:  # noqa: BLE001 - cv2.error for a file that is not an ONNX model
        raise TaskLearningError(f"{weights}: cannot load the ONNX model: {str(exc).strip().splitlines()[-1]}") from None
