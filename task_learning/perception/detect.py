"""Fiducial markers in an RGB-D frame: ids and corners with cv2.aruco, pose from the corners with
solvePnP (IPPE_SQUARE, the marker's registered size), range refined with the depth image.

Depth refinement: solvePnP's range is the weak direction (a 20 px marker at 2 m is off by
centimetres for a tenth of a pixel), depth is good at range but noisy per pixel. The pose from the
corners fixes the plane's orientation and the ray to the marker; the median ratio of measured
depth to the depth the plane predicts, over the pixels inside the marker, rescales the translation
along that ray (scaling keeps the reprojection unchanged); a plane fitted to those depth pixels
corrects the tilt, and decides between the two poses IPPE finds for a square.

Outliers rejected (each with a reason): an id seen twice in one frame, reprojection error above
`max_reprojection_px`, depth disagreeing with the corners by more than `max_depth_disagreement`
(an occluded or reflective marker), markers smaller than `min_side_px`. Unregistered ids are
reported, never guessed.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import cv2
import numpy as np

from task_learning.perception.frames import RGBDFrame
from task_learning.perception.registry import MarkerRegistry, aruco_dictionary
from task_learning.world.camera_model import CameraModel


@dataclass
class MarkerObservation:
    marker_id: int
    object_id: str
    role: str                    # "body" (the object's marker) or "door" (its door's marker)
    T_camera_marker: np.ndarray  # 4x4, metres
    corners: np.ndarray          # 4 x 2 pixels
    reprojection_px: float
    depth_ratio: float           # measured depth / corner depth (1.0: agree; nan: no depth)

    @property
    def distance(self) -> float:
        return float(np.linalg.norm(self.T_camera_marker[:3, 3]))


@dataclass
class Detections:
    observations: list[MarkerObservation] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)
    unregistered: list[int] = field(default_factory=list)


COS_20_DEG = float(np.cos(np.radians(20.0)))


def square_points(size: float) -> np.ndarray:
    h = size / 2.0
    return np.array([[-h, h, 0.0], [h, h, 0.0], [h, -h, 0.0], [-h, -h, 0.0]])


class MarkerDetector:
    def __init__(self, registry: MarkerRegistry, *, dictionary: str | None = None,
                 max_reprojection_px: float = 2.0, max_depth_disagreement: float = 0.15,
                 min_side_px: float = 8.0, min_depth_pixels: int = 12, min_plane_pixels: int = 60) -> None:
        self.registry = registry
        params = cv2.aruco.DetectorParameters()
        params.cornerRefinementMethod = cv2.aruco.CORNER_REFINE_SUBPIX
        params.cornerRefinementWinSize = 3
        # 8 samples per bit instead of 4: reads markers of 15-20 px (8 cm at 2.5-3 m) reliably
        params.perspectiveRemovePixelPerCell = 8
        self._detector = cv2.aruco.ArucoDetector(aruco_dictionary(dictionary or registry.dictionary), params)
        self.max_reprojection_px = max_reprojection_px
        self.max_depth_disagreement = max_depth_disagreement
        self.min_side_px = min_side_px
        self.min_depth_pixels = min_depth_pixels
        self.min_plane_pixels = min_plane_pixels

    def detect(self, frame: RGBDFrame) -> Detections:
        out = Detections()
        camera = frame.camera
        if camera is None:
            return out
        gray = cv2.cvtColor(frame.color, cv2.COLOR_BGR2GRAY)
        corners, ids, _ = self._detector.detectMarkers(gray)
        if ids is None:  # no marker seen (cv2's stubs say ids is always an array; it is None here)
            return out  # type: ignore[unreachable]
        flat = [int(i) for i in np.asarray(ids).ravel()]
        counts = {i: flat.count(i) for i in flat}
        for marker_id, quad in zip(flat, corners):
            pts = np.asarray(quad, dtype=np.float64).reshape(4, 2)
            size = self.registry.size_of(marker_id)
            if size is None:
                out.unregistered.append(marker_id)
                continue
            spec = self.registry.markers.get(marker_id) or self.registry.doors[marker_id]
            role = "body" if marker_id in self.registry.markers else "door"
            label = f"marker {marker_id} ({spec.object_id}{' door' if role == 'door' else ''})"
            if counts[marker_id] > 1:
                out.rejected.append(f"{label}: seen {counts[marker_id]} times in one frame")
                continue
            side = float(np.mean(np.linalg.norm(pts - np.roll(pts, 1, axis=0), axis=1)))
            if side < self.min_side_px:
                out.rejected.append(f"{label}: too small ({side:.1f} px)")
                continue
            observation = self._pose(marker_id, spec.object_id, role, size, pts, frame, camera)
            if isinstance(observation, str):
                out.rejected.append(f"{label}: {observation}")
            else:
                out.observations.append(observation)
        return out

    def _pose(self, marker_id: int, object_id: str, role: str, size: float, pts: np.ndarray,
              frame: RGBDFrame, camera: CameraModel) -> MarkerObservation | str:
        obj = square_points(size)
        K, D = camera.K, camera.D
        try:
            count, rvecs, tvecs, errors = cv2.solvePnPGeneric(obj, pts, K, D, flags=cv2.SOLVEPNP_IPPE_SQUARE)
        except cv2.error:
            count = 0
        if not count:
            return "no pose from the corners"
        # IPPE gives both poses of a square (a small marker's tilt is ambiguous); depth decides.
        samples = self._depth_samples(pts, frame.depth, camera)
        candidates: list[tuple[float, np.ndarray, np.ndarray, tuple[float, float]]] = []
        for rvec, tvec, err in zip(rvecs, tvecs, np.asarray(errors).ravel()):
            R, _ = cv2.Rodrigues(rvec)
            t = np.asarray(tvec, dtype=float).reshape(3)
            if t[2] > 0:
                candidates.append((float(err), np.asarray(R), t, self._depth_fit(R, t, samples)))
        if not candidates:
            return "pose behind the camera"
        with_depth = [c for c in candidates if np.isfinite(c[3][1])]
        chosen = min(with_depth, key=lambda c: c[3][1]) if with_depth else min(candidates, key=lambda c: c[0])
        error, R, t, (ratio, _spread) = chosen
        if error > self.max_reprojection_px:
            return f"reprojection error {error:.1f} px > {self.max_reprojection_px:g} px"
        if np.isfinite(ratio):
            if abs(ratio - 1.0) > self.max_depth_disagreement:
                return (f"depth and corners disagree by {100 * abs(ratio - 1):.0f} % "
                        "(occluded, reflective or wrong size in the registry)")
            t = t * ratio
            normal = self._depth_normal(R, samples)
            if normal is not None:
                R = align_normal(R, normal)
        T = np.eye(4)
        T[:3, :3] = R
        T[:3, 3] = t
        return MarkerObservation(marker_id, object_id, role, T, pts, error, ratio)

    def _depth_samples(self, pts: np.ndarray, depth: np.ndarray,
                       camera: CameraModel) -> tuple[np.ndarray, np.ndarray] | None:
        """(rays with z = 1, measured depths) of the valid depth pixels inside the inner 80 % of
        the marker; None if there are too few."""
        centre = pts.mean(axis=0)
        inner = centre + 0.8 * (pts - centre)
        x0, y0 = np.floor(inner.min(axis=0)).astype(int)
        x1, y1 = np.ceil(inner.max(axis=0)).astype(int) + 1
        h, w = depth.shape[:2]
        x0, y0, x1, y1 = max(x0, 0), max(y0, 0), min(x1, w), min(y1, h)
        if x1 <= x0 or y1 <= y0:
            return None
        mask = np.zeros((y1 - y0, x1 - x0), np.uint8)
        cv2.fillConvexPoly(mask, np.round(inner - [x0, y0]).astype(np.int32), 1)
        patch = depth[y0:y1, x0:x1]
        valid = (mask > 0) & (patch > 0) & np.isfinite(patch)
        vs, us = np.nonzero(valid)
        if len(vs) < self.min_depth_pixels:
            return None
        rays = np.empty((len(us), 3))
        rays[:, 0] = (us + (x0 - camera.cx)) / camera.fx
        rays[:, 1] = (vs + (y0 - camera.cy)) / camera.fy
        rays[:, 2] = 1.0
        return rays, patch[vs, us].astype(float)

    @staticmethod
    def _depth_fit(R: np.ndarray, t: np.ndarray, samples: tuple[np.ndarray, np.ndarray] | None) -> tuple[float, float]:
        """(median of measured / predicted depth, median absolute residual after rescaling, m);
        (nan, nan) without samples. A wrong tilt leaves a depth gradient across the marker, so
        its residual is larger than the right pose's."""
        if samples is None:
            return float("nan"), float("nan")
        rays, measured = samples
        normal = R[:, 2]
        predicted = float(normal @ t) / (rays @ normal)
        ratio = float(np.median(measured / predicted))
        return ratio, float(np.median(np.abs(measured - ratio * predicted)))

    def _depth_normal(self, R: np.ndarray, samples: tuple[np.ndarray, np.ndarray] | None) -> np.ndarray | None:
        """The marker plane's normal from a least-squares plane through its depth pixels (better
        than the corners' tilt, which is weak for small markers); None if too few pixels or it
        disagrees with the corners by more than 20 degrees."""
        if samples is None or len(samples[1]) < self.min_plane_pixels:
            return None
        rays, measured = samples
        points = rays * measured[:, None]
        points -= points.mean(axis=0)
        normal = np.linalg.eigh(points.T @ points)[1][:, 0]  # smallest eigenvalue's vector
        if normal @ R[:, 2] < 0:
            normal = -normal
        if float(normal @ R[:, 2]) < COS_20_DEG:
            return None
        return normal


def align_normal(R: np.ndarray, normal: np.ndarray) -> np.ndarray:
    """R rotated by the smallest rotation that takes its z axis onto `normal` (Rodrigues)."""
    z = R[:, 2]
    axis = np.cross(z, normal)
    s = float(np.linalg.norm(axis))
    if s < 1e-12:
        return R
    rot, _ = cv2.Rodrigues(axis / s * np.arctan2(s, float(z @ normal)))
    rotated: np.ndarray = rot @ R
    return rotated
