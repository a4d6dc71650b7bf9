"""The tf buffer: interpolation, refused extrapolation, chains, static transforms, time 0."""
from __future__ import annotations

import math
import re

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from task_learning.transforms import NS_PER_S, TransformBuffer, TransformUnavailable

S = NS_PER_S
IDENTITY = (0.0, 0.0, 0.0, 1.0)


def yaw(deg: float) -> tuple[float, float, float, float]:
    x, y, z, w = Rotation.from_euler("z", deg, degrees=True).as_quat()
    return (float(x), float(y), float(z), float(w))


def yaw_of(quaternion: tuple[float, float, float, float]) -> float:
    return float(Rotation.from_quat(quaternion).as_euler("zyx", degrees=True)[0])


def test_translation_is_interpolated_linearly_and_rotation_by_slerp() -> None:
    buffer = TransformBuffer()
    buffer.set_transform("map", "base_link", 10 * S, (0.0, 0.0, 0.0), yaw(0.0))
    buffer.set_transform("map", "base_link", 12 * S, (2.0, -4.0, 0.0), yaw(90.0))
    found = buffer.lookup("map", "base_link", 10 * S + S // 2)  # a quarter of the way
    assert found.translation == pytest.approx((0.5, -1.0, 0.0))
    assert yaw_of(found.quaternion) == pytest.approx(22.5)
    assert found.stamp_ns == 10 * S + S // 2
    # an exact stamp gives the sample itself
    assert buffer.lookup("map", "base_link", 12 * S).translation == pytest.approx((2.0, -4.0, 0.0))


def test_extrapolation_is_refused_naming_frames_time_and_range() -> None:
    buffer = TransformBuffer()
    buffer.set_transform("map", "base_link", 10 * S, (0, 0, 0), IDENTITY)
    buffer.set_transform("map", "base_link", 11 * S, (1, 0, 0), IDENTITY)
    with pytest.raises(TransformUnavailable) as future:
        buffer.lookup("map", "base_link", 12 * S)
    message = str(future.value)
    assert "extrapolation into the future" in message
    assert "map -> base_link" in message and "12.000 s" in message
    assert "from 10.000 s to 11.000 s" in message
    with pytest.raises(TransformUnavailable, match="into the past"):
        buffer.lookup("map", "base_link", 9 * S)


def test_cache_keeps_ten_seconds_back_from_the_newest() -> None:
    buffer = TransformBuffer()
    for second in range(0, 31):
        buffer.set_transform("odom", "base_link", second * S, (second, 0, 0), IDENTITY)
    assert buffer.lookup("odom", "base_link", 20 * S).translation[0] == pytest.approx(20.0)
    with pytest.raises(TransformUnavailable, match=re.escape("from 20.000 s to 30.000 s")):
        buffer.lookup("odom", "base_link", 19 * S)
    # a late sample for an older stamp slots in order
    buffer.set_transform("odom", "base_link", 25 * S + S // 2, (100, 0, 0), IDENTITY)
    assert buffer.lookup("odom", "base_link", 25 * S + S // 2).translation[0] == pytest.approx(100.0)


def test_chain_through_the_tree_and_inverse_direction() -> None:
    buffer = TransformBuffer()
    buffer.set_transform("map", "odom", 1 * S, (1.0, 0.0, 0.0), IDENTITY)
    buffer.set_transform("map", "odom", 3 * S, (1.0, 0.0, 0.0), IDENTITY)
    buffer.set_transform("odom", "base_link", 1 * S, (0.0, 2.0, 0.0), yaw(90.0))
    buffer.set_transform("odom", "base_link", 3 * S, (0.0, 2.0, 0.0), yaw(90.0))
    buffer.set_transform("base_link", "head_camera", 0, (0.5, 0.0, 1.0), IDENTITY, static=True)
    T_map_camera = buffer.lookup("map", "head_camera", 2 * S)
    # the camera is 0.5 m ahead of a base that faces +y: at (1, 2.5, 1) in the map
    assert T_map_camera.translation == pytest.approx((1.0, 2.5, 1.0))
    assert yaw_of(T_map_camera.quaternion) == pytest.approx(90.0)
    T_camera_map = buffer.lookup("head_camera", "map", 2 * S)
    assert np.allclose(T_camera_map.matrix @ T_map_camera.matrix, np.eye(4))
    # between two branches of one tree: up to the common ancestor and down again
    buffer.set_transform("odom", "charger", 0, (5.0, 0.0, 0.0), IDENTITY, static=True)
    T_charger_camera = buffer.lookup("charger", "head_camera", 2 * S)
    assert T_charger_camera.translation == pytest.approx((-5.0, 2.5, 1.0))


def test_static_transforms_hold_at_every_time_and_are_kept() -> None:
    buffer = TransformBuffer(cache_s=1.0)
    buffer.set_transform("/base_link", "/head_camera_rgb_optical_frame", 5 * S, (0.1, 0.0, 1.2), IDENTITY,
                         static=True)
    for when in (0, 1, 10_000 * S):
        assert buffer.lookup("base_link", "head_camera_rgb_optical_frame", when).translation[2] == pytest.approx(1.2)


def test_time_zero_is_the_latest_common_time() -> None:
    buffer = TransformBuffer()
    for second, x in ((1, 0.0), (2, 1.0), (3, 2.0)):
        buffer.set_transform("map", "odom", second * S, (x, 0, 0), IDENTITY)
    for second, y in ((1, 0.0), (2, 1.0)):  # the base's newest is older than the map's
        buffer.set_transform("odom", "base_link", second * S, (0, y, 0), IDENTITY)
    buffer.set_transform("base_link", "camera", 0, (0, 0, 1.0), IDENTITY, static=True)
    latest = buffer.lookup("map", "camera", 0)
    assert latest.stamp_ns == 2 * S
    assert latest.translation == pytest.approx((1.0, 1.0, 1.0))
    # only static frames between the two: any time, reported as 0
    assert buffer.lookup("base_link", "camera", 0).stamp_ns == 0


def test_unknown_and_unconnected_frames_are_named() -> None:
    buffer = TransformBuffer()
    buffer.set_transform("map", "base_link", S, (0, 0, 0), IDENTITY)
    buffer.set_transform("world", "table", S, (0, 0, 0), IDENTITY)
    with pytest.raises(TransformUnavailable, match="frame 'camera' does not exist"):
        buffer.lookup("map", "camera", S)
    with pytest.raises(TransformUnavailable, match="not connected"):
        buffer.lookup("map", "table", S)
    assert "does not exist" in buffer.can_transform("map", "camera")
    assert buffer.can_transform("map", "base_link", S) == ""


@pytest.mark.parametrize("translation, rotation", [
    ((math.nan, 0, 0), IDENTITY), ((0, 0, 0), (0.0, 0.0, 0.0, 0.0)), ((0, 0), IDENTITY)])
def test_bad_transforms_are_refused(translation: tuple[float, ...], rotation: tuple[float, ...]) -> None:
    with pytest.raises(ValueError):
        TransformBuffer().set_transform("map", "base_link", 0, translation, rotation)
    with pytest.raises(ValueError, match="itself"):
        TransformBuffer().set_transform("map", "/map", 0, (0, 0, 0), IDENTITY)
