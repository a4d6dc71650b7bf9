"""The stack on a robot, by robot profile (config/robots/<robot>.yaml):

    ros2 launch task_learning robot.launch.py robot:=fetch [world:=camera] [marker_registry:=FILE]
        [scene:=store_groceries] [use_sim_time:=true] [namespace:=NAME] [fakes:=true]
        [action_timeout_s:=S] [llm:=offline] [db:=kb.sqlite] [sim:=mujoco]

Starts the nodes of config/bringup.yaml (as task_learning.launch.py does) with:
- perception acting through the profile's standard interfaces (`robot:=`): Nav2's
  NavigateToPose, the controllers' FollowJointTrajectory, PointHead and GripperCommand, MoveIt's
  MoveGroup (docs/fetch.md lists every topic, action and frame); `world:=camera` (default) builds
  the world from the head camera and its fiducial markers (`marker_registry:=`, required;
  `marker_dictionary:=` optional), `world:=stand_in` from the scene's layout (no camera: for the
  fake servers and tests, never a measurement of perception; `scene:=` required);
- `use_sim_time` on every node, every node in `namespace`;
- the planner's `action_timeout_s` derived from the profile (its longest action, plus a fifth):
  never shorter; a shorter `action_timeout_s:=` is refused;
- `sim:=mujoco`: the MuJoCo-simulated Fetch too (the `task-learning-sim` program, robot-side, run and
  never imported; docs/sim.md) in `scene:=`, with `use_sim_time` on every node; before anything
  starts, the simulator writes the registry of the markers it textures on its world
  (`marker_registry:=`, default beside the knowledge base), which perception then reads;
- `fakes:=true`: the stand-in servers of the profile (nodes/mock/fake_robot.py) too, publishing
  /clock when use_sim_time is true and `robot_description_file:=` on /robot_description.

An unknown profile, a missing required input or a timeout shorter than the robot's actions ends the
launch at once with one line naming it (exit code 1); nothing is started.
"""
import os
import subprocess
import sys

from ament_index_python.packages import get_package_share_directory
from launch.actions import DeclareLaunchArgument, EmitEvent, ExecuteProcess, LogInfo, OpaqueFunction
from launch.events import Shutdown
from launch.substitutions import LaunchConfiguration

from launch import LaunchDescription
from task_learning.apps.bringup import launch_node_actions, llm_wiring, load_bringup_config
from task_learning.errors import TaskLearningError
from task_learning.robot.profile import known_profiles, load_profile
from task_learning_nodes.plumbing.launch_support import PACKAGE, default_db

WORLDS = {"camera": "fetch", "stand_in": "robot_stand_in"}  # world:= -> perception's backend
NODES_WITH_TIME = ("perception", "grounding", "oversight", "goal_elicitation", "action_selector", "planner")
TIMEOUT_MARGIN = 1.2


def _arg(context, name):
    return LaunchConfiguration(name).perform(context).strip()


def derived_action_timeout(profile, given: str) -> float:
    """The planner's wait for one action: the robot's longest action plus a fifth, or `given`
    when it is not shorter than that."""
    floor = round(profile.longest_action_s() * TIMEOUT_MARGIN, 1)
    if not given:
        return floor
    try:
        value = float(given)
    except ValueError:
        raise TaskLearningError(f"action_timeout_s:={given!r} is not a number of seconds") from None
    if value < floor:
        raise TaskLearningError(f"action_timeout_s:={given} is shorter than the {profile.name} profile's longest "
                                f"action ({profile.longest_action_s():g} s, {floor:g} s with the margin): the "
                                "planner would give up while the robot still moves")
    return value


SIM_PROGRAM = "task-learning-sim"


def _sim_program() -> str:
    beside = os.path.join(os.path.dirname(sys.executable), SIM_PROGRAM)
    return beside if os.path.isfile(beside) else SIM_PROGRAM


def simulator_registry(scene: str, path: str) -> str:
    """Run the simulator's check of `scene`, which writes its marker registry to `path`; one line
    (the simulator's own) when the scene cannot be simulated."""
    if not scene:
        raise TaskLearningError("sim:=mujoco needs scene:=NAME (the world it builds)")
    try:
        done = subprocess.run([_sim_program(), "--scene", scene, "--check", "--write-marker-registry", path],
                              capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise TaskLearningError(f"sim:=mujoco: cannot run {SIM_PROGRAM}: {exc}") from None
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()
        raise TaskLearningError(lines[-1] if lines else f"{SIM_PROGRAM} exited with {done.returncode}")
    return path


def _simulator(scene: str, namespace: str):
    cmd = [_sim_program(), "--robot", "fetch", "--scene", scene]
    if namespace:
        cmd += ["--ros-args", "-r", f"__ns:=/{namespace.strip('/')}"]
    return ExecuteProcess(cmd=cmd, name="fetch_sim", output="screen", emulate_tty=True,
                          # the robot gone is the launch over
                          on_exit=[EmitEvent(event=Shutdown(reason="the simulator exited"))])


def _stack(context, *args, **kwargs):
    robot = _arg(context, "robot")
    if not robot:
        raise TaskLearningError(f"robot:= is required (a profile: {', '.join(known_profiles())})")
    profile = load_profile(robot)  # unknown: one line listing the known ones
    world = _arg(context, "world")
    scene = _arg(context, "scene")
    registry = _arg(context, "marker_registry")
    db_path = os.path.abspath(os.path.expanduser(_arg(context, "db") or default_db()))
    sim = _arg(context, "sim")
    if sim == "mujoco":
        if profile.name != "fetch" or world != "camera":
            raise TaskLearningError("sim:=mujoco simulates a Fetch seen through its camera: robot:=fetch world:=camera")
        os.makedirs(os.path.dirname(db_path), exist_ok=True)
        registry = simulator_registry(scene, os.path.abspath(registry) if registry else os.path.join(
            os.path.dirname(db_path), f"markers_{os.path.splitext(os.path.basename(scene))[0]}.yaml"))
    if world == "camera" and not registry:
        raise TaskLearningError("world:=camera needs marker_registry:=FILE (the YAML mapping marker ids to objects)")
    if world == "stand_in" and not scene:
        raise TaskLearningError("world:=stand_in needs scene:=NAME (the layout it takes object positions from)")
    sim_time = _arg(context, "use_sim_time").lower() == "true" or sim == "mujoco"
    namespace = _arg(context, "namespace")
    timeout = derived_action_timeout(profile, _arg(context, "action_timeout_s"))
    config = load_bringup_config(os.path.join(get_package_share_directory(PACKAGE), "config", "bringup.yaml"))
    wanted, wiring = llm_wiring(config, [], _arg(context, "llm"))
    overrides = {"scene": scene, "backend": WORLDS[world], "perception.robot": profile.name,
                 "perception.marker_registry": registry, "perception.marker_dictionary": _arg(context, "marker_dictionary"),
                 "planner.action_timeout_s": timeout, **wiring,
                 "db_path": db_path}
    if sim_time:
        overrides.update({f"{name}.use_sim_time": True for name in NODES_WITH_TIME})
    actions = [LogInfo(msg=f"robot {profile.name} ({world} world), planner action timeout {timeout:g} s, "
                           f"use_sim_time {sim_time}, namespace '{namespace or '/'}', knowledge base {overrides['db_path']}")]
    if _arg(context, "fakes").lower() == "true":
        actions.append(_fakes(context, profile.name, sim_time, namespace))
    if sim == "mujoco":
        actions.append(_simulator(scene, namespace))
    return actions + launch_node_actions(config, wanted or [], overrides, context.environment, namespace=namespace)


def _fakes(context, robot: str, sim_time: bool, namespace: str):
    cmd = [sys.executable, "-m", "task_learning_nodes.mock.fake_robot", "--ros-args", "-p", f"robot:={robot}",
           "-p", f"publish_clock:={'true' if sim_time else 'false'}", "-p", f"use_sim_time:={'true' if sim_time else 'false'}"]
    description = _arg(context, "robot_description_file")
    if description:
        cmd += ["-p", f"robot_description_file:={os.path.abspath(description)}"]
    if namespace:
        cmd += ["-r", f"__ns:=/{namespace.strip('/')}"]
    return ExecuteProcess(cmd=cmd, name="fake_robot", output="screen", emulate_tty=True)


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("robot", default_value="", description="robot profile under config/robots/ "
                              "(fetch, tiago, stretch, or a path to a profile YAML)"),
        DeclareLaunchArgument("world", default_value="camera", choices=list(WORLDS),
                              description="camera: the head camera and its markers; stand_in: the scene's layout "
                                          "(fakes and tests)"),
        DeclareLaunchArgument("scene", default_value="", description="scene of every node that takes one"),
        DeclareLaunchArgument("marker_registry", default_value="", description="YAML marker registry (world camera)"),
        DeclareLaunchArgument("marker_dictionary", default_value="", description="cv2.aruco dictionary overriding the "
                              "registry's"),
        DeclareLaunchArgument("use_sim_time", default_value="false", choices=["true", "false"],
                              description="every node on /clock"),
        DeclareLaunchArgument("namespace", default_value="", description="ROS namespace of every node"),
        DeclareLaunchArgument("action_timeout_s", default_value="", description="the planner's wait for one action; "
                              "empty: derived from the profile (never shorter)"),
        DeclareLaunchArgument("fakes", default_value="false", choices=["true", "false"],
                              description="true: start the profile's stand-in servers (nodes/mock/fake_robot.py)"),
        DeclareLaunchArgument("sim", default_value="", choices=["", "mujoco"],
                              description="mujoco: start the MuJoCo-simulated Fetch in scene:= (task-learning-sim) "
                                          "and run against it with use_sim_time, its marker registry"),
        DeclareLaunchArgument("robot_description_file", default_value="", description="with fakes: a URDF the fakes "
                              "publish on the profile's robot description topic"),
        DeclareLaunchArgument("llm", default_value="", description="offline | openai | local | replay:FILE; empty: "
                              "as in config/nodes/"),
        DeclareLaunchArgument("db", default_value="", description="knowledge base; empty: "
                              "$ROS_HOME/task_learning/task_learning.sqlite"),
        OpaqueFunction(function=_stack),
    ])
