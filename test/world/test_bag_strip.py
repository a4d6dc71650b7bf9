"""`task-learning bag strip`: a PNG of a bag's colour frames, evenly spaced in time."""
from __future__ import annotations

import cv2
import numpy as np

from task_learning.apps.cli import main
from task_learning.apps.cli.bag_cmd import CAMERA_DEFAULTS
from task_learning.perception.bag import BagWriter, _typestore
from task_learning.perception.images import image_fields


def _bag(path, shades):
    ts = _typestore()
    Image, Header, Time = (ts.types[t] for t in ("sensor_msgs/msg/Image", "std_msgs/msg/Header",
                                                 "builtin_interfaces/msg/Time"))
    writer = BagWriter(path, "mcap")
    for i, shade in enumerate(shades):
        fields = image_fields(np.full((120, 160, 3), shade, np.uint8), "rgb8")
        msg = Image(header=Header(stamp=Time(sec=i, nanosec=0), frame_id="cam"), height=fields["height"],
                    width=fields["width"], encoding="rgb8", is_bigendian=0, step=fields["step"],
                    data=np.frombuffer(fields["data"], np.uint8))
        writer.write(CAMERA_DEFAULTS["color"], "sensor_msgs/msg/Image", (i + 1) * 10**9,
                     ts.serialize_cdr(msg, "sensor_msgs/msg/Image"))
    writer.close()


def test_the_strip_holds_frames_evenly_spaced_from_first_to_last(tmp_path, capsys):
    shades = [10 * i for i in range(11)]  # frame i is grey 10 i
    _bag(tmp_path / "bag", shades)
    out = tmp_path / "strip.png"
    assert main(["bag", "strip", "--bag", str(tmp_path / "bag"), "--out", str(out), "--count", "6"]) == 0
    strip = cv2.imread(str(out))
    assert strip.shape == (480, 960, 3)
    picked = [int(strip[row * 240 + 200, col * 320 + 160, 0]) for row in (0, 1) for col in (0, 1, 2)]
    assert picked == [0, 20, 40, 60, 80, 100]  # frames 0, 2, 4, 6, 8, 10
    assert "6 of 11 frames" in capsys.readouterr().out


def test_a_bag_without_images_is_one_line(tmp_path, capsys):
    _bag(tmp_path / "bag", [])
    assert main(["bag", "strip", "--bag", str(tmp_path / "bag"), "--out", str(tmp_path / "s.png")]) != 0
    err = capsys.readouterr().err
    assert "no images on /head_camera/rgb/image_raw" in err and "Traceback" not in err
