"""sensor_msgs/Image <-> NumPy without cv_bridge (not available for ROS 2 from PyPI).

Works on the message's plain fields (encoding, height, width, step, is_bigendian, data), so it
is pure Python: the node passes them in, tests need no ROS. Colour comes out as BGR uint8
(OpenCV's order), depth as float32 metres with 0 where unknown (16UC1 is millimetres, 32FC1
metres; NaN and inf become 0).
"""
from __future__ import annotations

import sys
from typing import Any

import cv2
import numpy as np

_LAYOUT = {  # encoding -> (dtype, channels)
    "rgb8": (np.uint8, 3), "bgr8": (np.uint8, 3), "rgba8": (np.uint8, 4), "bgra8": (np.uint8, 4),
    "mono8": (np.uint8, 1), "8UC1": (np.uint8, 1), "8UC3": (np.uint8, 3),
    "mono16": (np.uint16, 1), "16UC1": (np.uint16, 1), "32FC1": (np.float32, 1),
}
COLOR_ENCODINGS = ("rgb8", "bgr8", "rgba8", "bgra8", "mono8", "8UC3")
DEPTH_ENCODINGS = ("16UC1", "mono16", "32FC1")


def image_to_array(encoding: str, height: int, width: int, step: int, data: Any,
                   is_bigendian: int = 0) -> np.ndarray:
    """The pixels as an H x W (x C) array; ValueError naming the problem if the fields disagree."""
    if encoding not in _LAYOUT:
        raise ValueError(f"unsupported image encoding {encoding!r} (supported: {', '.join(_LAYOUT)})")
    dtype, channels = _LAYOUT[encoding]
    itemsize = np.dtype(dtype).itemsize
    if height <= 0 or width <= 0:
        raise ValueError(f"image has no pixels ({width}x{height})")
    if step < width * channels * itemsize:
        raise ValueError(f"image step {step} is smaller than a row ({width} x {channels} x {itemsize} bytes)")
    buffer = bytes(data) if not isinstance(data, (bytes, bytearray, memoryview, np.ndarray)) else data
    raw = np.frombuffer(buffer, dtype=np.uint8)
    if raw.size < step * height:
        raise ValueError(f"image data has {raw.size} bytes, expected step x height = {step * height}")
    rows = raw[:step * height].reshape(height, step)[:, :width * channels * itemsize]
    dt = np.dtype(dtype).newbyteorder(">" if is_bigendian else "<")
    arr = np.ascontiguousarray(rows).view(dt).reshape(height, width, channels) if channels > 1 \
        else np.ascontiguousarray(rows).view(dt).reshape(height, width)
    return arr.astype(dtype, copy=False)


def to_bgr(arr: np.ndarray, encoding: str) -> np.ndarray:
    if encoding not in COLOR_ENCODINGS:
        raise ValueError(f"colour image has encoding {encoding!r}, expected one of {', '.join(COLOR_ENCODINGS)}")
    if encoding == "rgb8":
        return cv2.cvtColor(arr, cv2.COLOR_RGB2BGR)
    if encoding == "rgba8":
        return cv2.cvtColor(arr, cv2.COLOR_RGBA2BGR)
    if encoding == "bgra8":
        return cv2.cvtColor(arr, cv2.COLOR_BGRA2BGR)
    if encoding == "mono8":
        return cv2.cvtColor(arr, cv2.COLOR_GRAY2BGR)
    return arr


def to_metres(arr: np.ndarray, encoding: str) -> np.ndarray:
    if encoding not in DEPTH_ENCODINGS:
        raise ValueError(f"depth image has encoding {encoding!r}, expected one of {', '.join(DEPTH_ENCODINGS)}")
    if encoding == "32FC1":
        out = arr.astype(np.float32, copy=True)
        out[~np.isfinite(out)] = 0.0
        return out
    return arr.astype(np.float32) / 1000.0


def image_fields(arr: np.ndarray, encoding: str) -> dict[str, Any]:
    """Fields of a sensor_msgs/Image holding `arr` (bgr8 / 32FC1 / 16UC1 / mono8)."""
    arr = np.ascontiguousarray(arr)
    height, width = arr.shape[:2]
    big = arr.dtype.byteorder == ">" or (arr.dtype.byteorder == "=" and sys.byteorder == "big")
    return {"height": int(height), "width": int(width), "encoding": encoding, "is_bigendian": int(big),
            "step": int(arr.strides[0]), "data": arr.tobytes()}
