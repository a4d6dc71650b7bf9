"""The robot's day through the ROS graph (task anticipation, seed 002): confirmed tasks are performed
by the planner node (ReachGoal) on the perception node's world.

`task-learning anticipate --day D --robot --oversight ros --graph` runs
task_learning.anticipation.robot_day with the two ports of this module:
- `GraphWorld`: the perception node's world (query_world / execute_action), where the simulated
  human does its routine (its moves are not checked, as in the traces) and where a task's
  literals are checked; read afresh after the planner acted;
- `PlannerPerformer`: a task the operator confirmed through the oversight node is sent to the
  planner's ReachGoal with its goal literals (config/anticipation/robot_goals.yaml). The planner
  (require_confirmation on, its default) reaches only literals a confirmed goal of its knowledge
  base covers: the operator's yes is written there as the task's confirmed goal just before the
  goal is sent and withdrawn right after (one yes, one execution), so the planner's own check
  stands as a second gate. A task nobody confirmed is never sent; were it sent, the planner would
  refuse it.

A client of the graph, not a node: it has its own rclpy node and executor thread.
"""
from __future__ import annotations

import logging
import re
import threading
import uuid
from typing import Any

import rclpy
from rclpy.action import ActionClient
from rclpy.executors import MultiThreadedExecutor

from task_learning.anticipation.proposals import proposal_question
from task_learning.errors import TaskLearningError
from task_learning.kb.store import Confirmation, KnowledgeBase, LearnedGoal, lift_literals
from task_learning.planning.executor import type_index
from task_learning.types import GoalLiteral
from task_learning_interfaces.action import ReachGoal
from task_learning_interfaces.srv import ExecuteAction, QueryWorld
from task_learning_nodes import convert
from task_learning_nodes.node_base import wait_for_future
from task_learning_nodes.planner import RosWorld

log = logging.getLogger(__name__)
KB_TASK = "task anticipation"  # the planner's knowledge base: the task of an anticipated task's goal


class GraphWorld(RosWorld):
    """Perception's world; `refresh()` forgets the last state read (another node acted since)."""

    def refresh(self) -> None:
        self._metadata = None


class AnticipationGraph:
    """One rclpy node (spun by its own thread) with clients of perception and the planner."""

    def __init__(self, *, wait_s: float = 10.0, reach_timeout_s: float = 300.0, name: str = "anticipation") -> None:
        if not rclpy.ok():
            rclpy.init()
        self.wait_s = wait_s
        self.reach_timeout_s = reach_timeout_s
        safe = re.sub(r"\W", "_", name) or "anticipation"
        self.node = rclpy.create_node(f"{safe}_{uuid.uuid4().hex[:6]}")
        self._executor = MultiThreadedExecutor(num_threads=2)
        self._executor.add_node(self.node)
        self._thread = threading.Thread(target=self._executor.spin, name="anticipation-graph", daemon=True)
        self._thread.start()
        self.query = self.node.create_client(QueryWorld, "query_world")
        execute = self.node.create_client(ExecuteAction, "execute_action")
        self.reach = ActionClient(self.node, ReachGoal, "reach_goal")
        self.world = GraphWorld(self.node, self.query, execute, wait_s)

    def require(self) -> "AnticipationGraph":
        """Fails with one clear line when the perception or the planner node is not there."""
        if not self.query.wait_for_service(timeout_sec=self.wait_s):
            raise TaskLearningError(f"the perception node is not running (no query_world service after "
                                    f"{self.wait_s:g} s); start it with `task-learning bringup --nodes perception "
                                    f"planner --param perception.scene:=config/anticipation/home_scene.yaml`")
        if not self.reach.wait_for_server(timeout_sec=self.wait_s):
            raise TaskLearningError(f"the planner node is not running (no reach_goal action after {self.wait_s:g} s)")
        return self

    def close(self) -> None:
        self._executor.shutdown()
        self._thread.join(timeout=5.0)
        try:
            self.node.destroy_node()
        except Exception:  # the context may already be shut down by a signal
            pass


class PlannerPerformer:
    """Performs a confirmed task through the planner's ReachGoal (see the module's docstring).
    `kb` must be the planner's knowledge base (its db_path); `tag` says which day the yes was for."""

    def __init__(self, graph: AnticipationGraph, kb: KnowledgeBase, tag: str = "") -> None:
        self.graph = graph
        self.kb = kb
        self.tag = tag

    def __call__(self, task: str, literals: list[GoalLiteral]) -> dict[str, Any]:
        type_of, _ = type_index(self.graph.world.metadata)
        obj = literals[0].args[0]
        context = f"{task}{self.tag}"
        self.kb.learn_goal(LearnedGoal(
            task=KB_TASK, context=context, object_type=type_of.get(obj, obj), text=task,
            literals=lift_literals(literals, obj, type_of), condition="anticipation",
            confirmation=Confirmation.OPERATOR_YES,
            provenance={"source": "anticipation", "question": proposal_question(task) + self.tag}))
        try:
            success, actions, message = self._reach(literals)
        finally:
            self.kb.set_confirmation(KB_TASK, context, Confirmation.NONE)  # one yes, one execution
            self.graph.world.refresh()
        return {"task": task, "success": success, "actions": actions, "policy_reused": False,
                "message": message, "via": "planner"}

    def _reach(self, literals: list[GoalLiteral]) -> tuple[bool, int, str]:
        goal = ReachGoal.Goal(goal=[convert.goal_literal_to_msg(lit) for lit in literals])
        client = self.graph.reach
        future = client.send_goal_async(goal)
        if wait_for_future(future, self.graph.wait_s, alive=client.server_is_ready) != "done":
            future.cancel()
            return False, 0, "the planner did not take the goal"
        handle = future.result()
        if not handle.accepted:
            return False, 0, "the planner rejected the goal"
        waited = handle.get_result_async()
        if wait_for_future(waited, self.graph.reach_timeout_s, alive=client.server_is_ready) != "done":
            handle.cancel_goal_async()
            return False, 0, f"the planner did not finish within {self.graph.reach_timeout_s:g} s"
        result = waited.result().result
        return bool(result.success), len(result.outcomes), str(result.message)
