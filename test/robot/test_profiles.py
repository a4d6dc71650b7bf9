"""Robot profiles: every shipped profile loads; bad ones are one line naming file and key."""
from __future__ import annotations

import pytest

from task_learning.errors import ConfigError
from task_learning.robot.profile import known_profiles, load_profile


def test_the_three_robots_are_profiled():
    assert {"fetch", "tiago", "stretch"} <= set(known_profiles())
    fetch = load_profile("fetch")
    assert fetch.base.navigate_action == "navigate_to_pose"
    assert fetch.arm.trajectory_action == "arm_with_torso_controller/follow_joint_trajectory"
    assert fetch.head.point_head_action == "head_controller/point_head"
    assert fetch.gripper.action == "gripper_controller/gripper_action" and fetch.gripper.mode == "command"
    tiago = load_profile("tiago")
    assert tiago.arm.mode == "moveit" and tiago.arm.move_group_action == "move_action"
    assert tiago.head.point_head_action == "" and tiago.distribution == "humble"
    stretch = load_profile("stretch")
    assert stretch.arm.trajectory_action == "/stretch_controller/follow_joint_trajectory"
    assert stretch.safety.runstop_topic == "/is_runstopped"


def test_unknown_profile_lists_the_known_ones():
    with pytest.raises(ConfigError) as err:
        load_profile("pr2")
    assert "unknown robot profile 'pr2'" in str(err.value)
    assert "fetch, stretch, tiago" in str(err.value) and "\n" not in str(err.value)


def test_a_bad_profile_names_file_and_key(tmp_path):
    text = (load_profile.__globals__["profiles_dir"]() / "fetch.yaml").read_text()
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace("standoff_m:", "standof_m:"))
    with pytest.raises(ConfigError) as err:
        load_profile(str(bad))
    assert "bad.yaml: base.standof_m: unknown key (did you mean 'standoff_m'?)" in str(err.value)
    bad.write_text(text.replace("mode: ik", "mode: moveit").replace("planning_group: arm_with_torso", ""))
    with pytest.raises(ConfigError, match="arm: mode moveit needs move_group_action and planning_group"):
        load_profile(str(bad))


def test_the_longest_action_covers_every_goal_of_it():
    for name in known_profiles():
        p = load_profile(name)
        t = p.timeouts
        assert p.longest_action_s() >= t.navigate_s + len(p.head.look_around_pans) * t.head_s
        assert p.longest_action_s() >= t.head_s + 3 * t.arm_s + 2 * t.gripper_s
