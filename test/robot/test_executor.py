"""The robot-skills executor: abstract actions to goals, failures to blocking conditions, stops."""
from __future__ import annotations

import threading

from task_learning.perception.skills import SkillRequest
from task_learning.robot import failures as f
from task_learning.robot.executor import RobotSkillExecutor
from task_learning.robot.gate import MotionGate
from task_learning.robot.goals import GoalOutcome
from task_learning.robot.profile import load_profile
from task_learning.robot.sequences import SkillSequencer
from task_learning.world.backend import WORLD_UNAVAILABLE
from test.robot.helpers import FakeView, ScriptedRunner

MUG = (0.8, 0.0, 0.8)


def executor(robot="tiago", runner=None, view=None, gate=None):
    runner = runner or ScriptedRunner()
    view = view or FakeView(objects={"Mug|1": MUG, "Fridge|1": (0.7, 0.3, 0.9)})
    gate = gate or MotionGate()
    return RobotSkillExecutor(SkillSequencer(load_profile(robot)), runner, view, gate), runner, view, gate


def test_navigate_and_pick_send_their_goals():
    ex, runner, _, _ = executor()
    assert ex.execute(SkillRequest("navigate", "Mug|1")).success
    # the base, then the head at the object: the robot arrives looking at it
    assert [getattr(g, "purpose", g.kind) for g in runner.goals] == ["navigate", "head"]
    assert ex.execute(SkillRequest("pick", "Mug|1")).success
    assert [g.kind for g in runner.goals[2:]] == ["trajectory", "trajectory", "move_group", "move_group",
                                                  "trajectory", "move_group"]


def test_belief_prechecks_send_nothing():
    ex, runner, view, _ = executor()
    view.holding = "Apple|1"
    assert ex.execute(SkillRequest("pick", "Mug|1")).error_code == f.HAND_FULL
    view.holding = None
    assert ex.execute(SkillRequest("place", "Fridge|1", "Mug|1")).error_code == f.NOT_HOLDING
    view.holding, view.closed = "Mug|1", {"Fridge|1"}
    result = ex.execute(SkillRequest("place", "Fridge|1", "Mug|1"))
    assert result.error_code == f.RECEPTACLE_CLOSED and "Fridge|1 is closed" in result.error_message
    assert ex.execute(SkillRequest("pick", "Bread|1")).error_code == f.NOT_VISIBLE
    assert runner.goals == []


def test_a_door_the_robot_saw_open_is_not_opened_again_nor_a_closed_one_closed():
    """AI2-THOR's refusals (already_open, already_closed), with no goal sent: on the Fetch in
    MuJoCo the hand that took an open door's handle and pulled swung it shut, "ok", and the
    next put found the fridge closed (a policy replayed after a goal had left it open)."""
    ex, runner, view, _ = executor()
    view.opened = {"Fridge|1"}
    opened = ex.execute(SkillRequest("open", "Fridge|1"))
    assert opened.error_code == f.ALREADY_OPEN and "Fridge|1 is already open" in opened.error_message
    view.opened, view.closed = set(), {"Fridge|1"}
    closed = ex.execute(SkillRequest("close", "Fridge|1"))
    assert closed.error_code == f.ALREADY_CLOSED and "Fridge|1 is already closed" in closed.error_message
    assert runner.goals == []
    # not known either way (never seen): the robot goes and does it
    view.closed = set()
    assert ex.execute(SkillRequest("open", "Fridge|1")).success and runner.goals


def test_the_first_failing_goal_ends_the_action_with_its_condition():
    def script(goal):
        if goal.kind == "move_group":
            return GoalOutcome("aborted", code=-31)
        return GoalOutcome("succeeded", code=0)

    ex, runner, _, _ = executor(runner=ScriptedRunner(script))
    result = ex.execute(SkillRequest("pick", "Mug|1"))
    assert not result.success and result.error_code == f.NOT_NEAR
    assert "NO_IK_SOLUTION" in result.error_message and "pre-grasp" in result.error_message
    assert [g.kind for g in runner.goals] == ["trajectory", "trajectory", "move_group"]


def test_visual_search_sweeps_the_head_until_the_object_is_seen():
    view = FakeView(hidden={"Mug|1": MUG}, appears_after_views={"Mug|1": 3})
    ex, runner, _, _ = executor("fetch", view=view)
    assert ex.execute(SkillRequest("search", "Mug|1")).success
    assert [getattr(g, "purpose", g.kind) for g in runner.goals] == ["head", "head", "head", "navigate",
                                                                            "point_head"]


def test_visual_search_gives_up_after_the_whole_sweep():
    ex, runner, _, _ = executor("fetch", view=FakeView())
    result = ex.execute(SkillRequest("search", "Mug|1"))
    assert result.error_code == f.NOT_VISIBLE and "look-around of 5 headings" in result.error_message
    assert len(runner.goals) == 5


def test_a_stop_refuses_motion_with_its_reason_until_cleared():
    ex, runner, _, gate = executor()
    gate.stop("runstop", "run-stop engaged (topic runstop)")
    result = ex.execute(SkillRequest("navigate", "Mug|1"))
    assert result.error_code == WORLD_UNAVAILABLE and "run-stop engaged" in result.error_message
    assert runner.goals == []
    assert gate.clear("runstop")
    assert ex.execute(SkillRequest("navigate", "Mug|1")).success


def test_an_interrupt_during_a_goal_ends_the_action_before_the_next_goal():
    gate = MotionGate()
    started = threading.Event()

    def script(goal):
        if goal.kind == "move_group":
            started.set()
            gate.interrupt("PerformTask cancelled")
            return GoalOutcome("stopped", message="cancelled: PerformTask cancelled")
        return GoalOutcome("succeeded", code=0)

    ex, runner, _, _ = executor(runner=ScriptedRunner(script), gate=gate)
    result = ex.execute(SkillRequest("pick", "Mug|1"))
    assert started.is_set() and result.error_code == WORLD_UNAVAILABLE
    assert [g.kind for g in runner.goals][-1] == "move_group" and len(runner.goals) == 3
    assert ex.execute(SkillRequest("navigate", "Mug|1")).success  # an interrupt does not latch


def test_no_base_pose_is_a_fault_not_a_guess():
    ex, runner, view, _ = executor()
    view.base = None
    result = ex.execute(SkillRequest("pick", "Mug|1"))
    assert result.error_code == f.ROBOT_FAULT and "map -> base_footprint" not in result.error_message
    assert "no transform map -> base_link" in result.error_message and runner.goals == []


def test_a_blocked_arm_backs_out_the_way_it_came_and_the_failure_stands():
    """The arm goal that fails (blocked in a piece) is followed by one trajectory retracing the
    joint path sent in that action, so that the next action does not start inside the furniture."""
    from task_learning.robot.ik import ArmKinematics
    from test.robot.helpers import DATA

    profile = load_profile("fetch")
    kin = ArmKinematics.from_urdf((DATA / "fetch.urdf").read_text(), profile.arm.root_link, profile.arm.tip_link,
                                  profile.arm.joints, profile.arm.tolerance_m)
    arm_goals = []

    def script(goal):
        if goal.kind == "trajectory" and goal.purpose == "arm":
            arm_goals.append(goal)
            if len(arm_goals) == 3:  # the grasp: blocked
                return GoalOutcome("aborted", code=-5, message="blocked")
        if goal.kind == "gripper":
            return GoalOutcome("succeeded", gripper=(0.1, False, True))
        return GoalOutcome("succeeded", code=0)

    runner = ScriptedRunner(script)
    view = FakeView(objects={"Mug|1": (0.7, 0.0, 0.8)})
    ex = RobotSkillExecutor(SkillSequencer(profile, kin), runner, view, MotionGate())
    result = ex.execute(SkillRequest("pick", "Mug|1"))
    assert not result.success and "GOAL_TOLERANCE_VIOLATED" in result.error_message
    assert len(arm_goals) == 4 and runner.goals[-1] is arm_goals[3]
    back = [p for p, _ in arm_goals[3].points]
    sent = [p for g in arm_goals[:2] for p, _ in g.points]
    assert back == sent[::-1]  # the failed goal's own points skipped: it stopped short of them
