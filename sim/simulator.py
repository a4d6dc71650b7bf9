"""The simulated Fetch's engine: MuJoCo stepping the world, with the robot's controllers ticking at
100 Hz of simulated time between physics steps (2 ms). ROS-free: the ROS node (sim/ros_node.py)
and the tests drive it through these methods, all of which are to be called from one thread at a
time (the node holds a lock).

Goals are counted per interface (`goal_counts`), as the run's JSON reports them.
"""
from __future__ import annotations

import math
from collections import Counter

import mujoco
import numpy as np

from task_learning_sim.assists import Assists, add_grasp_welds
from task_learning_sim.base_controller import BaseController, BaseGoal, Contact, back_out
from task_learning_sim.base_planner import build_costmap, plan_approach
from task_learning_sim.fetch_model import ARM_JOINTS, BASE_JOINTS, FINGER_JOINTS, HEAD_JOINTS, ROOT_LINK, TORSO_JOINT
from task_learning_sim.gripper_controller import DEFAULT_EFFORT_N, GripperRun
from task_learning_sim.head import pan_tilt_toward
from task_learning_sim.scene_world import SceneWorld
from task_learning_sim.trajectory_controller import Trajectory, TrajectoryRun, check, validate
from task_learning_sim.urdf import robot_bodies

CONTROL_EVERY = 5  # physics steps a control tick: 100 Hz at the model's 2 ms step
CONTROLLERS = {
    "arm_with_torso_controller": (TORSO_JOINT, *ARM_JOINTS),
    "arm_controller": ARM_JOINTS,
    "torso_controller": (TORSO_JOINT,),
    "head_controller": HEAD_JOINTS,
}
# The Fetch's tuck pose (its arm folded over the base): how the robot starts and drives.
TUCKED = {TORSO_JOINT: 0.05, "shoulder_pan_joint": 1.32, "shoulder_lift_joint": 1.40, "upperarm_roll_joint": -0.2,
          "elbow_flex_joint": 1.72, "forearm_roll_joint": 0.0, "wrist_flex_joint": 1.66, "wrist_roll_joint": 0.0,
          "head_pan_joint": 0.0, "head_tilt_joint": 0.3, "l_gripper_finger_joint": 0.04, "r_gripper_finger_joint": 0.04}
POINT_HEAD_SPEED_RAD_S = 1.0
STATE_JOINTS = (TORSO_JOINT, *HEAD_JOINTS, *ARM_JOINTS, *FINGER_JOINTS)
# A loose object whose lowest point is this near the floor stands on it (a dropped can): the
# planner goes round it; one on or in a piece is within the piece's footprint anyway.
ON_FLOOR_M = 0.05
# the eight corners of a geom's bounding box, as signs of its half sizes
CORNERS = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], dtype=float)


class Simulator:
    """One world in physics and the robot's controllers."""

    def __init__(self, world: SceneWorld, *, grasp_weld: bool = False):
        """`grasp_weld`: weld what the fingers pinch to the gripper (an assist, sim/assists.py);
        the door handle assist is always on."""
        self.world = world
        if grasp_weld:
            add_grasp_welds(world.spec, list(world.items))
        self.model = world.spec.compile()
        self.data = mujoco.MjData(self.model)
        self.robot = set(robot_bodies(self.model))
        self._loose = {self.model.body(item).id for item in world.items}
        self.hand = {self.model.body(name).id for name in
                     ("gripper_link", "l_gripper_finger_link", "r_gripper_finger_link")}
        self.limits = {name: tuple(self.model.joint(name).range) for name in STATE_JOINTS
                       if self.model.joint(name).limited}
        for joint, value in TUCKED.items():
            self.data.joint(joint).qpos[0] = value
            self.data.actuator(joint).ctrl[0] = value
        mujoco.mj_forward(self.model, self.data)
        self.base = BaseController(self.base_pose())
        self.runs: dict[str, TrajectoryRun] = {}
        self.gripper_run: GripperRun | None = None
        self.goal_counts: Counter[str] = Counter()
        self.assists = Assists(self.model, self.data, world.receptacles, list(world.items), grasp_weld=grasp_weld)
        self._steps = 0
        self._closing = False

    # ---- state -------------------------------------------------------------------------------
    @property
    def time(self) -> float:
        return float(self.data.time)

    def base_pose(self) -> tuple[float, float, float]:
        """x, y, yaw of base_link in odom (the base's planar joints)."""
        x, y, yaw = (float(self.data.joint(name).qpos[0]) for name in BASE_JOINTS)
        return x, y, yaw

    def positions(self, joints: tuple[str, ...] | list[str]) -> np.ndarray:
        return np.array([self.data.joint(j).qpos[0] for j in joints])

    def joint_state(self) -> tuple[tuple[str, ...], np.ndarray, np.ndarray, np.ndarray]:
        """Names, positions, velocities and actuator efforts of the Fetch's joints."""
        return (STATE_JOINTS, self.positions(STATE_JOINTS),
                np.array([self.data.joint(j).qvel[0] for j in STATE_JOINTS]),
                np.array([self.data.actuator(j).force[0] for j in STATE_JOINTS]))

    def link_transforms(self) -> list[tuple[str, str, np.ndarray, np.ndarray]]:
        """(parent, child, translation, quaternion x y z w) of every robot link below base_link,
        relative to its parent: what a robot_state_publisher puts on /tf."""
        out = []
        for body in sorted(self.robot):
            parent = int(self.model.body_parentid[body])
            if body == self.model.body(ROOT_LINK).id:
                continue
            rotation = self.data.xmat[parent].reshape(3, 3)
            translation = rotation.T @ (self.data.xpos[body] - self.data.xpos[parent])
            relative = np.zeros(4)
            mujoco.mju_mulQuat(relative, _conjugate(self.data.xquat[parent]), self.data.xquat[body])
            out.append((self.model.body(parent).name, self.model.body(body).name, translation,
                        np.array([relative[1], relative[2], relative[3], relative[0]])))
        return out

    def robot_touches(self) -> list[str]:
        """Names of the bodies (not the floor, not the robot, not a loose object) a robot link
        or the object welded in the hand touches, outside what the hand holds: what stops the
        base. A loose object (one the scene's items, dropped on the floor or carried) is pushed,
        as a real base's bumper would not notice a can; furniture stops it, also where the
        carried object meets it (driven on, the weld pressed it into the piece, and the solver
        threw it across the room when the gripper let go)."""
        return [name for name, _ in self._touches()]

    def robot_contacts(self) -> list[Contact]:
        """The touches of robot_touches as the base controller weighs them: each contact's point
        and its horizontal normal from the robot toward what it touches (odom)."""
        return [contact for _, contact in self._touches()]

    def _touches(self) -> list[tuple[str, Contact]]:
        touched = []
        carried = {self.model.body(self.assists.welded).id} if self.assists.welded else set()
        for contact in self.data.contact[:self.data.ncon]:
            a, b = int(self.model.geom_bodyid[contact.geom1]), int(self.model.geom_bodyid[contact.geom2])
            for mine, other, sign in ((a, b, 1.0), (b, a, -1.0)):  # the frame's normal points from geom1 to geom2
                if ((mine in self.robot and mine not in self.hand) or mine in carried) and other not in self.robot \
                        and other != 0 and other not in self._loose:
                    normal = sign * contact.frame[:2]
                    touched.append((self.model.body(other).name, (float(contact.pos[0]), float(contact.pos[1]),
                                                                 float(normal[0]), float(normal[1]))))
        return touched

    def finger_touches(self) -> bool:
        """Whether a finger touches something that is not the robot."""
        fingers = {self.model.joint(j).bodyid[0] for j in FINGER_JOINTS}
        for contact in self.data.contact[:self.data.ncon]:
            a, b = int(self.model.geom_bodyid[contact.geom1]), int(self.model.geom_bodyid[contact.geom2])
            if (a in fingers and b not in self.robot) or (b in fingers and a not in self.robot):
                return True
        return False

    def _corners(self, geom: int) -> np.ndarray:
        """The world coordinates of the corners of a geom's bounding box (in its own frame)."""
        centre, half = self.model.geom_aabb[geom, :3], self.model.geom_aabb[geom, 3:]
        local = centre + CORNERS * half
        corners: np.ndarray = self.data.geom_xpos[geom] + local @ self.data.geom_xmat[geom].reshape(3, 3).T
        return corners

    def obstacle_outlines(self) -> list[np.ndarray]:
        """What the base must go round, now: the footprint on the floor (the corners of each
        geom's bounding box, projected) of every geom of furniture, doors and drawers where their
        joints stand, and of loose objects standing on the floor that the robot does not touch
        (not what it carries or pushes); not the robot, not the floor. A geom whose lowest point
        is above the robot's highest point (at goal time) is left out: it passes over the robot."""
        robot_geoms = [g for g in range(self.model.ngeom) if int(self.model.geom_bodyid[g]) in self.robot]
        top = max(float(self._corners(g)[:, 2].max()) for g in robot_geoms)
        touched = set()
        for contact in self.data.contact[:self.data.ncon]:
            pair = {int(self.model.geom_bodyid[contact.geom1]), int(self.model.geom_bodyid[contact.geom2])}
            if pair & self.robot:
                touched |= pair - self.robot
        outlines = []
        for geom in range(self.model.ngeom):
            body = int(self.model.geom_bodyid[geom])
            if body in self.robot or self.model.geom_type[geom] == mujoco.mjtGeom.mjGEOM_PLANE:
                continue
            corners = self._corners(geom)
            bottom = float(corners[:, 2].min())
            if bottom > top or (body in self._loose and (bottom > ON_FLOOR_M or body in touched)):
                continue
            outlines.append(corners[:, :2])
        return outlines

    # ---- goals ---------------------------------------------------------------------------------
    def navigate(self, x: float, y: float, yaw: float) -> BaseGoal:
        """Start a base goal in odom (the map frame: the simulated odometry does not drift),
        along a path planned now round what stands on the floor, arriving along the goal's heading
        where there is room (sim/base_planner.py), after backing out of whatever the robot touches
        (base_controller.back_out); a goal without a path ends at once (NavOutcome.NO_PATH)."""
        self.goal_counts["navigate_to_pose"] += 1
        pose = self.base_pose()
        costmap = build_costmap(self.obstacle_outlines(), [pose[:2], (x, y)])
        out = back_out(pose, self.robot_contacts())
        path = plan_approach(costmap, out or pose[:2], (x, y), yaw)
        if out is not None and path is not None:
            path = [pose[:2], *path]
        return self.base.start(x, y, yaw, pose, self.time, path)

    def follow(self, controller: str, trajectory: Trajectory) -> TrajectoryRun:
        """Start a trajectory on `controller`'s joints (TrajectoryRefused if it cannot run); a run
        in flight that shares a joint ends canceled, as a preempted goal does."""
        validate(trajectory, CONTROLLERS[controller], self.limits)
        self.goal_counts["follow_joint_trajectory"] += 1
        for name, run in list(self.runs.items()):
            if set(run.trajectory.joints) & set(trajectory.joints) and not run.done:
                self.cancel_trajectory(run)
            if run.done:
                del self.runs[name]
        run = TrajectoryRun(trajectory, self.positions(trajectory.joints), self.time)
        run.desired = run.start_positions.copy()
        self.runs[f"{controller}#{self.goal_counts['follow_joint_trajectory']}"] = run
        return run

    def cancel_trajectory(self, run: TrajectoryRun) -> None:
        """Stop the run's joints where they are."""
        if not run.done:
            run.canceled = True
            for joint, value in zip(run.trajectory.joints, self.positions(run.trajectory.joints)):
                self.data.actuator(joint).ctrl[0] = value

    def point_head(self, target: np.ndarray, min_duration: float = 0.0,
                   max_velocity: float = POINT_HEAD_SPEED_RAD_S) -> TrajectoryRun:
        """Turn the head toward `target` (world/odom coordinates) as a head_controller trajectory."""
        pan, tilt = pan_tilt_toward(target, self.data.body("head_pan_link").xpos,
                                    self.data.body("torso_lift_link").xmat.reshape(3, 3))
        goal = np.array([np.clip(pan, *self.limits["head_pan_joint"]), np.clip(tilt, *self.limits["head_tilt_joint"])])
        travel = float(np.max(np.abs(goal - self.positions(HEAD_JOINTS))))
        duration = max(min_duration, travel / max(max_velocity, 1e-3), 0.1)
        self.goal_counts["point_head"] += 1
        self.goal_counts["follow_joint_trajectory"] -= 1  # counted as point_head, not as a trajectory goal
        return self.follow("head_controller", Trajectory(list(HEAD_JOINTS), np.array([duration]), goal[None, :]))

    def grip(self, gap: float, max_effort: float) -> GripperRun:
        """Start a gripper goal: the fingers' gap (m) and force limit (N a finger; 0: the default)."""
        self.goal_counts["gripper_command"] += 1
        if self.gripper_run is not None and not self.gripper_run.done:
            self.gripper_run.done = self.gripper_run.canceled = True
        effort = max_effort if max_effort > 0 else DEFAULT_EFFORT_N
        run = GripperRun(gap, effort, self.time)
        self._closing = gap < float(sum(self.data.joint(j).qpos[0] for j in FINGER_JOINTS))
        if not self._closing:
            self.assists.gripper_opening()
        for joint in FINGER_JOINTS:
            actuator = self.model.actuator(joint)
            actuator.forcerange[:] = [-effort, effort]
            self.data.actuator(joint).ctrl[0] = run.finger_target()
        self.gripper_run = run
        return run

    # ---- stepping ------------------------------------------------------------------------------
    def step(self, count: int = 1) -> None:
        """`count` physics steps, the controllers ticking every CONTROL_EVERY of them."""
        for _ in range(count):
            if self._steps % CONTROL_EVERY == 0:
                self._control(CONTROL_EVERY * self.model.opt.timestep)
            mujoco.mj_step(self.model, self.data)
            self._steps += 1

    def run_for(self, seconds: float) -> None:
        self.step(int(math.ceil(seconds / self.model.opt.timestep)))

    def _control(self, dt: float) -> None:
        now = self.time
        self.base.tick(self.base_pose(), self.robot_contacts(), now, dt)
        for joint, value in zip(BASE_JOINTS, self.base.setpoint):
            self.data.actuator(joint).ctrl[0] = value
        for run in self.runs.values():
            if run.done:
                continue
            check(run, self.positions(run.trajectory.joints), now - run.started_at)
            for joint, value in zip(run.trajectory.joints, run.desired):
                self.data.actuator(joint).ctrl[0] = value
        if self.gripper_run is not None and not self.gripper_run.done:
            gap = float(sum(self.data.joint(j).qpos[0] for j in FINGER_JOINTS))
            speed = float(sum(self.data.joint(j).qvel[0] for j in FINGER_JOINTS))
            force = float(np.mean([abs(self.data.actuator(j).force[0]) for j in FINGER_JOINTS]))
            self.gripper_run.tick(gap, speed, force, self.finger_touches(), now)
            if self.gripper_run.done and self._closing:
                self._closing = False
                self.assists.gripper_closed()
        self.assists.tick(dt)


def _conjugate(quat: np.ndarray) -> np.ndarray:
    return np.array([quat[0], -quat[1], -quat[2], -quat[3]])


FOOTPRINT_RADIUS_M = 0.3  # the Fetch's base, a circle of ~0.56 m diameter


def occupied_by(world: SceneWorld, x: float, y: float, radius: float = FOOTPRINT_RADIUS_M) -> str:
    """The piece of furniture a base at (x, y) would stand in ('' if none): the base's circle
    against each piece's footprint rectangle."""
    for receptacle in world.receptacles.values():
        px, py, yaw = receptacle.pose
        c, s = math.cos(yaw), math.sin(yaw)
        lx, ly = c * (x - px) + s * (y - py), -s * (x - px) + c * (y - py)
        nearest = (min(max(lx, -receptacle.depth / 2), receptacle.depth / 2),
                   min(max(ly, -receptacle.width / 2), receptacle.width / 2))
        if math.hypot(lx - nearest[0], ly - nearest[1]) < radius:
            return receptacle.id
    return ""
