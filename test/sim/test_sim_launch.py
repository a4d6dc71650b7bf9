"""sim.launch.py (docs/sim.md): the simulated Fetch started by `ros2 launch` serves its scene and
stops cleanly on Ctrl-C; a scene the simulator cannot build ends the launch with one line naming
the object, and exit code 1."""
from __future__ import annotations

import signal

import pytest

from test.ros_testing import VENV_BIN, RosGraph

ROS2 = VENV_BIN / "ros2"
START_S = 120.0  # building the world on a loaded 2-core machine


def sim_launch(*arguments: str) -> list[str]:
    return [str(ROS2), "launch", "task_learning", "sim.launch.py", *arguments]


@pytest.mark.timeout(300)
def test_the_launch_serves_the_scene_and_stops_on_ctrl_c(ros_graph: RosGraph) -> None:
    launch = ros_graph.start(sim_launch("scene:=store_groceries", "camera_rate:=0"), name="ros2 launch sim")
    launch.wait_for_line(r"simulated Fetch in scene store_groceries", timeout=START_S)
    code, text = launch.stop(signal.SIGINT, timeout=60)
    assert code == 0, text[-3000:]


@pytest.mark.timeout(300)
def test_a_scene_the_simulator_cannot_build_ends_the_launch_naming_it(ros_graph: RosGraph) -> None:
    launch = ros_graph.start(sim_launch("scene:=bcr_kitchen", "camera_rate:=0"), name="ros2 launch sim bad scene")
    launch.wait_for_line(r"Cup\|1 starts in CoffeeMachine\|1, which is not furniture the simulator builds",
                         timeout=START_S)
    assert launch.wait(timeout=60) == 1
    assert "Traceback" not in launch.output
