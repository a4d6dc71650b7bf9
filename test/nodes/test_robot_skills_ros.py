"""Contract tests of the robot-skills layer against the fake standard servers (nodes/mock):
every abstract action produces the expected standard goals on the wire; every injected failure
code comes back as its blocking condition; cancel, the run-stop topic and the stop service stop
motion within 1 s and refuse new motion until cleared; use_sim_time stamps goals with /clock's time.

The fakes run in their own process (`python -m task_learning_nodes.mock.fake_robot`); the
executor, its action clients (RosGoalRunner) and the stop inputs (RobotSafety) run on this test's
node, with a believed world (test/robot/helpers.FakeView) in place of perception.
"""
from __future__ import annotations

import json
import sys
import threading
import time

import pytest
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import Bool, String
from std_srvs.srv import Trigger

from task_learning.perception.skills import SkillRequest
from task_learning.robot import failures as f
from task_learning.robot.executor import RobotSkillExecutor
from task_learning.robot.gate import MotionGate
from task_learning.robot.ik import ArmKinematics
from task_learning.robot.profile import load_profile
from task_learning.robot.sequences import SkillSequencer
from task_learning.world.backend import WORLD_UNAVAILABLE
from task_learning_nodes.robot.runner import RosGoalRunner
from task_learning_nodes.robot.safety import RobotSafety
from test.robot.helpers import TEST_URDF, FakeView
from test.ros_testing import wait_until

pytestmark = pytest.mark.timeout(240)
EVENTS = QoSProfile(depth=200, reliability=ReliabilityPolicy.RELIABLE)
LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
OBJECTS = {"Mug|1": (1.5, 0.5, 0.8), "Fridge|1": (2.0, -1.0, 0.9)}
NEAR = {"Mug|1": (0.8, 0.0, 0.8)}


def ik_fetch():
    """The fetch profile with the test arm's joints (no Fetch URDF here): the same servers."""
    fetch = load_profile("fetch")
    arm = fetch.arm.model_copy(update={"joints": ("lift_joint", "shoulder_joint", "elbow_joint"),
                                       "tip_link": "tool_link", "reach_m": 0.9})
    return fetch.model_copy(update={"arm": arm})


class Rig:
    """A fake robot process and the executor on the test's node."""

    def __init__(self, ros, profile, *fake_params: str, objects=None, client_params=()) -> None:
        self.profile = profile
        args = [sys.executable, "-m", "task_learning_nodes.mock.fake_robot", "--ros-args",
                "-p", f"robot:={profile.name}", *[a for p in fake_params for a in ("-p", p)]]
        self.fake = ros.start(args, name="fake_robot")
        self.fake.wait_for_line(r"fake \w+: \d+ servers", timeout=60)
        self.client = ros.client()
        for name, value in client_params:
            self.client.node.set_parameters([Parameter(name, value=value)])
        self.events = self.client.subscribe_collect(String, "fake_robot/events", EVENTS)
        self.gate = MotionGate()
        self.runner = RosGoalRunner(self.client.node, profile, self.gate)
        self.safety = RobotSafety(self.client.node, profile, self.gate)
        kin = None
        if profile.arm.mode == "ik":
            kin = ArmKinematics.from_urdf(TEST_URDF, "base_link", "tool_link", profile.arm.joints, 0.01)
        self.view = FakeView(objects=dict(objects if objects is not None else NEAR))
        self.executor = RobotSkillExecutor(SkillSequencer(profile, kin), self.runner, self.view, self.gate)

    def received(self, event: str = "goal") -> list[dict]:
        return [d for d in (json.loads(m.data) for m in list(self.events.messages)) if d["event"] == event]

    def set_failures(self, text: str) -> None:
        from rcl_interfaces.msg import Parameter as P
        from rcl_interfaces.msg import ParameterType, ParameterValue
        from rcl_interfaces.srv import SetParameters

        value = ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=text)
        response = self.client.call(SetParameters, "fake_robot/set_parameters",
                                    SetParameters.Request(parameters=[P(name="fail", value=value)]))
        assert response.results[0].successful, response.results[0].reason


@pytest.mark.parametrize("robot", ["fetch", "tiago", "stretch"])
def test_every_abstract_action_sends_its_standard_goals(ros_graph, robot):
    profile = ik_fetch() if robot == "fetch" else load_profile(robot)
    if robot == "stretch":
        arm = profile.arm.model_copy(update={"joints": ("lift_joint", "shoulder_joint", "elbow_joint"),
                                             "tip_link": "tool_link", "reach_m": 0.9})
        profile = profile.model_copy(update={"arm": arm, "base": profile.base.model_copy(update={"facing_rad": 0.0})})
    rig = Rig(ros_graph, profile)
    requests = [SkillRequest("navigate", "Mug|1"), SkillRequest("pick", "Mug|1")]
    for request in requests:
        result = rig.executor.execute(request)
        assert result.success, result.error_message
    rig.view.holding = "Mug|1"
    for request in (SkillRequest("place", "Mug|1", "Mug|1"), SkillRequest("open", "Mug|1"),
                    SkillRequest("close", "Mug|1"), SkillRequest("toggle_on", "Mug|1")):
        result = rig.executor.execute(request)
        assert result.success, f"{request.skill}: {result.error_message}"
        rig.view.holding = None  # put down: a door takes the hand
    sent = [(s.goal.server.lstrip("/"), s.goal.kind) for s in rig.executor.log.steps]
    wait_until(lambda: len(rig.received()) >= len(sent), 10, "every goal at the fakes")
    got = [(d["server"].lstrip("/"), d["kind"]) for d in rig.received()]
    assert got == sent
    nav = rig.received()[0]
    assert nav["frame"] == "map" and nav["kind"] == "navigate"


def test_visual_search_sweeps_the_head_on_the_wire(ros_graph):
    rig = Rig(ros_graph, ik_fetch(), objects={})
    result = rig.executor.execute(SkillRequest("search", "Mug|1"))
    assert result.error_code == f.NOT_VISIBLE
    heads = [d for d in rig.received() if d["part"] == "head"]
    assert [round(d["final"][0], 3) for d in heads] == list(rig.profile.head.look_around_pans)


def test_injected_failures_come_back_as_blocking_conditions(ros_graph):
    # TIAGo's interfaces on this machine's build (kilted's layouts: NavigateToPose carries a code)
    rig = Rig(ros_graph, load_profile("tiago").model_copy(update={"distribution": "kilted"}))
    cases = [("navigate:206", SkillRequest("navigate", "Mug|1"), f.NOT_REACHABLE, "GOAL_OCCUPIED"),
             ("navigate:abort", SkillRequest("navigate", "Mug|1"), f.NOT_NEAR, "aborted"),
             ("move_group:-31", SkillRequest("pick", "Mug|1"), f.NOT_NEAR, "NO_IK_SOLUTION"),
             ("move_group:-12", SkillRequest("pick", "Mug|1"), f.NOT_REACHABLE, "GOAL_IN_COLLISION"),
             ("head:reject", SkillRequest("pick", "Mug|1"), f.NOT_VISIBLE, "rejected"),
             ("gripper:-5", SkillRequest("pick", "Mug|1"), f.NOT_REACHABLE, "GOAL_TOLERANCE_VIOLATED")]
    for injected, request, condition, words in cases:
        rig.set_failures(injected)
        result = rig.executor.execute(request)
        assert (result.error_code, words in result.error_message) == (condition, True), result.error_message


def test_fetch_gripper_and_point_head_failures(ros_graph):
    rig = Rig(ros_graph, ik_fetch())
    rig.set_failures("gripper:miss")
    result = rig.executor.execute(SkillRequest("pick", "Mug|1"))
    assert result.error_code == f.NOT_REACHABLE and "closed on nothing" in result.error_message
    rig.set_failures("point_head:abort")
    assert rig.executor.execute(SkillRequest("pick", "Mug|1")).error_code == f.NOT_VISIBLE
    rig.set_failures("arm:-4")
    result = rig.executor.execute(SkillRequest("pick", "Mug|1"))
    assert result.error_code == f.NOT_REACHABLE and "PATH_TOLERANCE_VIOLATED" in result.error_message
    rig.set_failures("")
    assert rig.executor.execute(SkillRequest("pick", "Mug|1")).success


def test_a_missing_server_is_named(ros_graph):
    profile = ik_fetch()
    profile = profile.model_copy(update={
        "base": profile.base.model_copy(update={"navigate_action": "no_such_nav"}),
        "timeouts": profile.timeouts.model_copy(update={"server_wait_s": 0.5})})
    rig = Rig(ros_graph, profile)
    result = rig.executor.execute(SkillRequest("navigate", "Mug|1"))
    assert result.error_code == WORLD_UNAVAILABLE and "no action server no_such_nav (NavigateToPose)" in result.error_message


def _start_long_navigation(rig):
    box: dict = {}
    thread = threading.Thread(target=lambda: box.setdefault("result", rig.executor.execute(
        SkillRequest("navigate", "Fridge|1"))), daemon=True)
    thread.start()
    wait_until(lambda: any(d["kind"] == "navigate" for d in rig.received()), 15, "the navigation goal")
    return thread, box


def _stopped_within(rig, thread, box, t0, limit=1.0):
    canceled = rig.events.wait_for(lambda m: json.loads(m.data)["event"] == "canceled", timeout=10)
    thread.join(10)
    returned = time.monotonic() - t0
    assert json.loads(canceled.data)["t"] - t0 < limit
    assert returned < limit + 0.5 and box["result"].error_code == WORLD_UNAVAILABLE
    return box["result"]


def test_cancel_stops_the_base_within_a_second(ros_graph):
    rig = Rig(ros_graph, ik_fetch(), "base_speed_mps:=0.02", objects=OBJECTS)
    thread, box = _start_long_navigation(rig)
    t0 = time.monotonic()
    rig.client.call(Trigger, "robot_skills/cancel", Trigger.Request())
    _stopped_within(rig, thread, box, t0)
    assert rig.executor.execute(SkillRequest("pick", "Mug|1")).error_code != WORLD_UNAVAILABLE  # not latched


def test_runstop_topic_stops_and_refuses_until_released(ros_graph):
    rig = Rig(ros_graph, ik_fetch(), "base_speed_mps:=0.02", objects=OBJECTS)
    runstop = rig.client.publisher_matched(Bool, rig.profile.safety.runstop_topic, LATCHED)
    thread, box = _start_long_navigation(rig)
    t0 = time.monotonic()
    runstop.publish(Bool(data=True))
    result = _stopped_within(rig, thread, box, t0)
    assert "run-stop engaged" in result.error_message
    refused = rig.executor.execute(SkillRequest("navigate", "Mug|1"))
    assert refused.error_code == WORLD_UNAVAILABLE and "run-stop engaged (runstop is true)" in refused.error_message
    runstop.publish(Bool(data=False))
    wait_until(lambda: not rig.gate.refusal(), 5, "the run-stop released")
    assert rig.executor.execute(SkillRequest("navigate", "Mug|1")).success


def test_stop_service_stops_and_refuses_until_resumed(ros_graph):
    rig = Rig(ros_graph, ik_fetch(), "base_speed_mps:=0.02", objects=OBJECTS)
    thread, box = _start_long_navigation(rig)
    t0 = time.monotonic()
    assert rig.client.call(Trigger, "robot_skills/stop", Trigger.Request()).success
    result = _stopped_within(rig, thread, box, t0)
    assert "stopped by the stop service" in result.error_message
    assert rig.executor.execute(SkillRequest("navigate", "Mug|1")).error_code == WORLD_UNAVAILABLE
    assert rig.client.call(Trigger, "robot_skills/resume", Trigger.Request()).success
    assert rig.executor.execute(SkillRequest("navigate", "Mug|1")).success


def test_use_sim_time_stamps_goals_with_clock_time(ros_graph):
    rig = Rig(ros_graph, ik_fetch(), "publish_clock:=true", "use_sim_time:=true", "real_time_factor:=2.0",
              client_params=[("use_sim_time", True)])
    wait_until(lambda: rig.client.node.get_clock().now().nanoseconds > 0, 10, "/clock on the test node")
    assert rig.executor.execute(SkillRequest("navigate", "Mug|1")).success
    nav = next(d for d in rig.received() if d["kind"] == "navigate")
    assert 0 < nav["stamp"] < 3600  # simulated seconds since the fake started, not the wall clock
