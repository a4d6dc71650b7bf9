"""anticipation_node: the robot's day of task anticipation as a node of the graph.

An `anticipate_day` action (AnticipateDay) runs one simulated day of
config/anticipation/household.yaml with task_learning.anticipation.robot_day, with ROS ports:
- the world is the perception node's (query_world / execute_action): the simulated human does its
  routine there (its moves are not checked, as in the traces) and a task's literals are checked
  there, read afresh after the planner acted;
- after each finished task the robot anticipates the rest of the day and every kept task is put to
  the operator through the oversight node (`oversight/confirm`: "Shall I prepare coffee next?");
  a "no", a timeout or an unreachable oversight node confirm nothing;
- a confirmed task is sent to the planner's ReachGoal with its goal literals
  (config/anticipation/robot_goals.yaml) and the confirmation id the oversight node issued for the
  operator's yes to that question, whose candidate goal carried those literals. A task nobody
  confirmed is never sent.

Confirmations carry their question: the planner checks the id with the oversight node
and uses it up (one yes, one execution; it expires with its question). This node writes no
confirmation anywhere, so a kill of it (or of the planner) at any moment leaves nothing that a
later ReachGoal could use. (Earlier versions wrote the yes into the planner's knowledge base for
the duration of the task; such a leftover is withdrawn when this node starts.)

Not started by a plain `task-learning bringup` or the default launch (config/bringup.yaml,
`default: false`): name it, e.g. `task-learning bringup --nodes oversight perception planner
anticipation --db kb.sqlite --param perception.scene:=config/anticipation/home_scene.yaml`, then
`task-learning anticipate --day trace_01 --robot --oversight ros --graph`.
"""
from __future__ import annotations

import datetime
import json
import threading
from typing import Any

from rclpy.action.client import ClientGoalHandle
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.client import Client
from rclpy.node import Node

from task_learning.anticipation.proposals import KB_TASK
from task_learning.errors import TaskLearningError
from task_learning.inputs.safe_text import printable
from task_learning.kb.store import DEFAULT_DB, Confirmation, KnowledgeBase, resolve_db_path
from task_learning.lifecycle.signals import StopSignals
from task_learning.types import GoalLiteral
from task_learning_interfaces.action import AnticipateDay, ReachGoal
from task_learning_interfaces.srv import ExecuteAction, QueryWorld
from task_learning_nodes.clients.ros_world import RosWorld
from task_learning_nodes.plumbing import convert
from task_learning_nodes.plumbing.node_base import ActionClient, result_of, run_node, wait_for_future
from task_learning_nodes.plumbing.params import LLMEndpointParameters, declare_parameters, llm_client_options, param
from task_learning_nodes.plumbing.qos import action_client_qos, service_qos
from task_learning_nodes.plumbing.simple_action_server import (
    ActiveGoal,
    BusyPolicy,
    Finish,
    Refusal,
    SingleGoalServer,
    Status,
)


class Parameters(LLMEndpointParameters):
    """The anticipation node's parameters (config/nodes/anticipation.yaml)."""

    db_path: str = param(DEFAULT_DB, "The planner's knowledge base (its db_path): the "
                         "routines of experience and the questions asked; default "
                         "$ROS_HOME/task_learning/task_learning.sqlite, the same as the planner's; relative paths "
                         "are relative to the node's working directory")
    llm: str = param("offline", "LLM that anticipates: offline (not a language model), openai, local or replay:FILE")
    query_world_service: str = param("query_world", "Perception's QueryWorld service")
    execute_action_service: str = param("execute_action", "Perception's ExecuteAction service")
    reach_goal_action: str = param("reach_goal", "The planner's ReachGoal action")
    service_timeout_s: float = param(10.0, "Seconds to wait for a service, the planner or the oversight node",
                                     min=0.1, max=3600.0)
    reach_timeout_s: float = param(300.0, "Seconds the planner may take for one confirmed task", min=1.0,
                                   max=86400.0)
    stack_key_file: str = param("", "Key file the stack's nodes sign their questions with (the oversight "
                                "node's stack_key_file); empty: $ROS_HOME/task_learning/stack.key")


class GraphWorld(RosWorld):
    """Perception's world; `refresh()` forgets the last state read (another node acted since)."""

    def refresh(self) -> None:
        self._metadata = None


def withdraw_anticipated_confirmations(kb: KnowledgeBase) -> int:
    """Withdraw every confirmation of an anticipated task's goal (left by a kill mid-task of a
    version of this node that still wrote them)."""
    left = [g for g in kb.goals() if g.task == KB_TASK and g.confirmed]
    for goal in left:
        kb.set_confirmation(KB_TASK, goal.context, Confirmation.NONE)
    return len(left)


class AnticipationNode(Node):
    executor_threads = 4  # the day's goal, its service and action replies, a cancel

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("anticipation", **kwargs)
        self.params = declare_parameters(self, Parameters)
        self.group = ReentrantCallbackGroup()
        self.wait_s = self.params.service_timeout_s
        self.reach_timeout_s = self.params.reach_timeout_s
        qos = service_qos()
        self.query: Client = self.create_client(QueryWorld, self.params.query_world_service, qos_profile=qos,
                                        callback_group=self.group)
        execute: Client = self.create_client(ExecuteAction, self.params.execute_action_service, qos_profile=qos,
                                     callback_group=self.group)
        self.reach = ActionClient(self, ReachGoal, self.params.reach_goal_action, callback_group=self.group,
                                  **action_client_qos())
        self.world = GraphWorld(self, self.query, execute, self.wait_s)
        self._reaching: ClientGoalHandle | None = None  # the planner's ReachGoal goal handle while it performs a task
        # One day at a time (a second one is rejected); a cancel or a stop also cancels the
        # planner's goal in flight.
        self._actions = SingleGoalServer(self, policy=BusyPolicy.REJECT, callback_group=self.group,
                                         on_stop=lambda _day: self._cancel_reach())
        from task_learning.oversight.pairing import StackKey
        from task_learning_nodes.clients.oversight_client import OversightClient

        self.oversight = OversightClient(self, name="anticipation", service_wait_s=self.wait_s,
                                         should_stop=self.stopping, asker="anticipation",
                                         stack_key=StackKey.load_or_create(
                                             self.params.stack_key_file or None))
        self._withdraw_left_confirmations("start")
        self._server = self._actions.serve(AnticipateDay, "anticipate_day", self._run_day, self._refusal)
        from task_learning.llm.constraints import resolve_decoding

        _, notice = resolve_decoding(self.params.decoding, self.params.llm, None, supported=False, what="anticipation")
        if notice:  # `decoding` auto with llm local, or grounded: said once, never silently free
            self.get_logger().warning(notice)
        self.get_logger().info(f"anticipation ready (db {resolve_db_path(self.params.db_path)}, llm {self.params.llm})")

    def _withdraw_left_confirmations(self, when: str) -> None:
        with KnowledgeBase(resolve_db_path(self.params.db_path)) as kb:
            count = withdraw_anticipated_confirmations(kb)
        if count:
            self.get_logger().warning(f"{when}: withdrew {count} confirmation(s) of anticipated tasks left by an "
                                      f"interrupted day")

    def stopping(self) -> bool:
        """True once the day was cancelled or the node stops: questions still waiting end
        unconfirmed and no further task is sent to the planner."""
        return self._actions.stop_requested()

    def _cancel_reach(self) -> None:
        """Cancel the planner's goal in flight, and wait until the planner took the cancel (it
        then refuses its next primitive action): so once this node answers a cancel, the robot
        starts no further action for the day."""
        handle = self._reaching
        if handle is not None:
            wait_for_future(handle.cancel_goal_async(), self.wait_s)

    def _refusal(self, refusal: Refusal) -> AnticipateDay.Result:
        """A day that came while another ran (accepted at the same moment) or as the node stops."""
        return AnticipateDay.Result(message="refused: the anticipation node is stopping" if refusal.shutting_down
                                    else "busy with another day")

    def stop_work(self) -> None:
        """A signal: questions waiting end unconfirmed (and are withdrawn), the planner's goal
        in flight is cancelled before its next action, and the day ends aborted with its result."""
        self._actions.shutdown("the anticipation node is stopping")

    def require(self) -> None:
        """Fails with one clear line when the perception, planner or oversight node is not there."""
        if not self.query.wait_for_service(timeout_sec=self.wait_s):
            raise TaskLearningError(f"the perception node is not running (no query_world service after "
                                    f"{self.wait_s:g} s); start it with --param "
                                    f"perception.scene:=config/anticipation/home_scene.yaml")
        if not self.reach.wait_for_server(timeout_sec=self.wait_s):
            raise TaskLearningError(f"the planner node is not running (no reach_goal action after {self.wait_s:g} s)")
        if not self.oversight.available(self.wait_s):
            raise TaskLearningError(f"the oversight node is not running (no oversight/confirm service after "
                                    f"{self.wait_s:g} s)")

    def _run_day(self, goal: ActiveGoal) -> Finish:
        result = AnticipateDay.Result()
        try:
            day = self._day(goal)
        except (TaskLearningError, ValueError) as exc:
            result.message = printable(str(exc))
            self.get_logger().warning(f"anticipate_day: {result.message}")
            return Finish(result, Status.ABORTED)
        result.result_json = json.dumps(day.to_dict())
        result.success = not self.stopping()
        result.message = f"day {day.day}: confirmed {len(day.confirmed)}, performed {len(day.performed)}"
        if goal.handle.is_cancel_requested:
            result.message += " (canceled: later questions unconfirmed, no further task performed)"
            return Finish(result, Status.CANCELED)
        return Finish(result, Status.ABORTED if self._actions.shutting_down else Status.SUCCEEDED)

    def _day(self, goal: ActiveGoal) -> Any:
        from task_learning.anticipation.config import load_anticipation_config
        from task_learning.anticipation.experience import Experience, seed_experience
        from task_learning.anticipation.household import load_household
        from task_learning.anticipation.robot_day import run_robot_day
        from task_learning.llm.client import make_client

        request = goal.handle.request
        cfg = load_anticipation_config()
        spec = load_household(tasks=cfg.tasks)
        days = {str(d["name"]): d for d in spec.days}
        if request.day not in days:
            raise TaskLearningError(f"day: unknown day {request.day!r} (days of {spec.source}: {', '.join(days)})")
        self.require()
        tag = request.question_tag or f" ({request.day}, {datetime.date.today().isoformat()})"
        client = make_client(self.params.llm, **llm_client_options(self.params))

        def event(text: str) -> None:
            goal.handle.publish_feedback(AnticipateDay.Feedback(event=text))

        with KnowledgeBase(resolve_db_path(self.params.db_path)) as kb:
            seed_experience(kb, cfg)
            perform = PlannerPerformer(self, on_event=event)
            day = run_robot_day(cfg, Experience.from_kb(kb), days[request.day], client=client,
                                operator=self.oversight, kb=kb, seed=int(request.seed), question_suffix=tag,
                                world=self.world, perform=perform, stop=goal.stop)
        client.raise_if_unavailable()
        return day


class PlannerPerformer:
    """Performs a confirmed task through the planner's ReachGoal, with the oversight node's
    confirmation id of the operator's yes (see the module's docstring)."""

    def __init__(self, node: AnticipationNode, on_event: Any = None) -> None:
        self.node = node
        self.on_event = on_event or (lambda _text: None)

    def __call__(self, task: str, literals: list[GoalLiteral], confirmation_id: str) -> dict[str, Any]:
        if self.node.stopping():
            return {"task": task, "success": False, "actions": 0, "policy_reused": False,
                    "message": "not sent to the planner: the day was stopped", "via": "planner"}
        try:
            success, actions, message = self._reach(literals, confirmation_id)
        finally:
            self.node.world.refresh()
        self.on_event(f"performed {task}: {'done' if success else message}")
        return {"task": task, "success": success, "actions": actions, "policy_reused": False,
                "message": message, "via": "planner"}

    def _reach(self, literals: list[GoalLiteral], confirmation_id: str) -> tuple[bool, int, str]:
        goal = ReachGoal.Goal(goal=[convert.goal_literal_to_msg(lit) for lit in literals],
                              confirmation_id=confirmation_id)
        client = self.node.reach
        future = client.send_goal_async(goal)
        if wait_for_future(future, self.node.wait_s, alive=client.server_is_ready) != "done":
            future.cancel()
            return False, 0, "the planner did not take the goal"
        handle = future.result()
        if handle is None or not handle.accepted:
            return False, 0, "the planner rejected the goal"
        self.node._reaching = handle
        try:
            return self._result(handle)
        finally:
            self.node._reaching = None

    def _result(self, handle: ClientGoalHandle) -> tuple[bool, int, str]:
        client = self.node.reach
        if self.node.stopping():  # cancelled while the goal was being sent
            handle.cancel_goal_async()
        waited = handle.get_result_async()
        how = wait_for_future(waited, self.node.reach_timeout_s, alive=client.server_is_ready,
                              stop=self.node.stopping)
        if how == "stopped":  # the day was cancelled: so is the planner's goal, before its next action
            handle.cancel_goal_async()
            if wait_for_future(waited, self.node.wait_s, alive=client.server_is_ready) != "done":
                return False, 0, "canceled; the planner gave no result"
        elif how != "done":
            handle.cancel_goal_async()
            return False, 0, f"the planner did not finish within {self.node.reach_timeout_s:g} s"
        result = result_of(waited).result
        return bool(result.success), len(result.outcomes), str(result.message)


DAY_TIMEOUT_S = 24 * 3600.0  # a day's questions wait for a person; the node itself gives up earlier


def request_day(day: str, question_tag: str, seed: int, wait_s: float) -> dict[str, Any]:
    """A client of the node (`task-learning anticipate --graph`): runs `day` through its
    AnticipateDay action and returns the day as RobotDayResult.to_dict(). One clear error when the
    node is not there, rejects the day or goes away; Ctrl-C cancels the day."""
    import uuid

    import rclpy
    from rclpy.executors import MultiThreadedExecutor

    if not rclpy.ok():
        rclpy.init()
    node = rclpy.create_node(f"anticipation_client_{uuid.uuid4().hex[:6]}")
    executor = MultiThreadedExecutor(num_threads=2)
    executor.add_node(node)
    spinner = threading.Thread(target=executor.spin, name="anticipation-client", daemon=True)
    spinner.start()
    client = ActionClient(node, AnticipateDay, "anticipate_day", **action_client_qos())
    handle = None
    try:
        if not client.wait_for_server(timeout_sec=wait_s):
            raise TaskLearningError(f"the anticipation node is not running (no anticipate_day action after {wait_s:g} s); "
                                    f"start it with `task-learning bringup --nodes oversight perception planner "
                                    f"anticipation --db KB --param perception.scene:=config/anticipation/home_scene.yaml`")
        future = client.send_goal_async(AnticipateDay.Goal(day=day, question_tag=question_tag, seed=seed))
        if wait_for_future(future, wait_s, alive=client.server_is_ready) != "done":
            raise TaskLearningError("the anticipation node did not take the day")
        handle = future.result()
        if handle is None or not handle.accepted:
            raise TaskLearningError("the anticipation node refused the day (it is running another one)")
        waited = handle.get_result_async()
        how = wait_for_future(waited, DAY_TIMEOUT_S, alive=client.server_is_ready)
        if how != "done":
            raise TaskLearningError(f"the anticipation node {'went away' if how == 'gone' else 'did not finish'} "
                                    f"before the day ended")
        handle = None
        result = result_of(waited).result
        if not result.result_json:
            raise TaskLearningError(f"the anticipation node: {result.message}")
        data: dict[str, Any] = json.loads(result.result_json)
        return data
    finally:
        if handle is not None:  # Ctrl-C or an error while the day ran: cancel it
            handle.cancel_goal_async()
        client.destroy()
        executor.shutdown()
        spinner.join(timeout=5.0)
        try:
            node.destroy_node()
        except Exception:  # noqa: BLE001 - the context may already be shut down by a signal
            pass


def main(args: list[str] | None = None, signals: StopSignals | None = None) -> int:
    return run_node(AnticipationNode, args, name="anticipation", signals=signals)


if __name__ == "__main__":
    raise SystemExit(main())
