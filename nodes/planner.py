"""planner_node: performs tasks (PerformTask action) and reaches goal literals (ReachGoal action).

It runs the same task-learning loop as `task-learning run` (task_learning.planning.loop), with ROS
ports instead of in-process ones:
- the world is the perception node: `query_world` for the state, `execute_action` for each
  primitive action (RosWorld below implements the WorldBackend protocol over those services);
- goals come from the goal elicitation node's `learn_goal` action (which asks the oversight node
  in the +O conditions);
- actions are selected with BCR in this process against that world, and learned goals and
  policies go to this node's SQLite knowledge base (`db_path`), so the next PerformTask of the
  same task is Trial #2: no LLM call, no question.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Mapping

from rclpy.action import ActionClient, ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node

from task_learning.bcr.domain import load_domain
from task_learning.bcr.engines import ENGINES, make_engine
from task_learning.errors import TaskLearningError
from task_learning.kb import KnowledgeBase
from task_learning.oversight.flow import OversightCounts
from task_learning.planning.executor import GoalExecutor
from task_learning.planning.loop import TaskLearner
from task_learning.planning.session import CONDITIONS, check_task
from task_learning.types import ActionCall, LLMUsage
from task_learning.world.scene import load_scene
from task_learning_interfaces.action import LearnGoal, PerformTask, ReachGoal
from task_learning_interfaces.msg import TaskObjectOutcome
from task_learning_interfaces.srv import ExecuteAction, QueryWorld
from task_learning_nodes import convert
from task_learning_nodes.node_base import run_node
from task_learning_nodes.params import Param, declare_parameters

PARAMETERS = (
    Param("scene", "tidy_kitchen", "Scene used for the subtasks and the completion measure when a "
          "PerformTask goal names none (the world itself is perception's: give both the same scene)"),
    Param("condition", "STARS+O", "Condition used when a goal leaves it empty",
          choices=CONDITIONS),
    Param("db_path", "artifacts/task_learning.sqlite", "SQLite knowledge base of learned goals and "
          "policies (the same task again on the same file is Trial #2); relative to the node's "
          "working directory"),
    Param("engine", "heuristic", "BCR engine used to reach goals: heuristic (no LLM) or llm",
          choices=ENGINES),
    Param("llm", "offline", "LLM of the llm engine: offline (not a language model), openai or "
          "replay:FILE"),
    Param("query_world_service", "query_world", "Perception's QueryWorld service"),
    Param("execute_action_service", "execute_action", "Perception's ExecuteAction service"),
    Param("learn_goal_action", "learn_goal", "Goal elicitation's LearnGoal action"),
    Param("service_timeout_s", 10.0, "Seconds to wait for a service call", min=0.1, max=3600.0),
    Param("learn_goal_timeout_s", 900.0, "Seconds for one object's goal elicitation (with oversight "
          "this includes the operator's time)", min=1.0, max=86400.0),
    Param("max_actions", 100, "Actions per goal before reaching it counts as failed", min=1,
          max=100000),
)


class RosCallError(TaskLearningError):
    """A service or action of another node did not answer in time."""


def wait_future(future: Any, timeout_s: float, what: str) -> Any:
    """Block this (worker) thread until a future completes; the executor spins elsewhere."""
    done = threading.Event()
    future.add_done_callback(lambda _f: done.set())
    if not done.wait(timeout_s):
        future.cancel()
        raise RosCallError(f"{what} did not answer within {timeout_s:.0f} s")
    return future.result()


class RosWorld:
    """WorldBackend over the perception node's services."""

    name = "ros"

    def __init__(self, node: Node, query: Any, execute: Any, timeout_s: float) -> None:
        self._node = node
        self._query = query
        self._execute = execute
        self._timeout_s = timeout_s
        self._metadata: dict[str, Any] | None = None

    @property
    def metadata(self) -> dict[str, Any]:
        if self._metadata is None:
            self._require(self._query, "query_world")
            request = QueryWorld.Request(query="", include_world=True)
            response = wait_future(self._query.call_async(request), self._timeout_s, "query_world")
            self._metadata = convert.metadata_from_world_state_msg(response.world)
        return self._metadata

    def step(self, action: str, **params: Any) -> dict[str, Any]:
        self._require(self._execute, "execute_action")
        object_id = str(params.pop("objectId", ""))
        call = ActionCall(action, object_id, tuple(sorted(params.items())))
        request = ExecuteAction.Request(call=convert.action_call_to_msg(call), return_world=True)
        response = wait_future(self._execute.call_async(request), self._timeout_s, "execute_action")
        outcome = convert.action_outcome_from_msg(response.outcome)
        metadata = convert.metadata_from_world_state_msg(response.world)
        metadata.update(lastAction=action, lastActionSuccess=outcome.success,
                        errorMessage=outcome.error_message, errorCode=outcome.blocking_condition)
        self._metadata = metadata
        return metadata

    def _require(self, client: Any, what: str) -> None:
        if not client.wait_for_service(timeout_sec=self._timeout_s):
            raise RosCallError(f"{what}: the perception node is not running")


@dataclass
class RemoteOversight:
    """What the loop reads of an oversight outcome, rebuilt from a LearnGoal result."""

    counts: OversightCounts
    confirmed: bool


@dataclass
class RemoteElicitation:
    """A LearnGoal result in the shape the loop reads from ElicitationResult."""

    chosen: Any
    candidates: list
    usage: LLMUsage
    oversight: RemoteOversight | None
    outcome: str
    errors: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"outcome": self.outcome, "chosen": self.chosen.to_dict() if self.chosen else None,
                "candidates": [c.to_dict() for c in self.candidates], "usage": self.usage.to_dict(),
                "counts": dict(self.counts), "errors": list(self.errors), "via": "ros"}


class PlannerNode(Node):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__("planner", **kwargs)
        declare_parameters(self, PARAMETERS)
        self.group = ReentrantCallbackGroup()
        self._query = self.create_client(QueryWorld, self._p("query_world_service"), callback_group=self.group)
        self._execute = self.create_client(ExecuteAction, self._p("execute_action_service"),
                                           callback_group=self.group)
        self._learn = ActionClient(self, LearnGoal, self._p("learn_goal_action"), callback_group=self.group)
        condition = str(self._p("condition"))
        self.domain = load_domain("household")
        self._busy = threading.Lock()
        self._perform = ActionServer(self, PerformTask, "perform_task", self._perform_task,
                                     goal_callback=self._accept, cancel_callback=lambda _g: CancelResponse.ACCEPT,
                                     callback_group=self.group)
        self._reach = ActionServer(self, ReachGoal, "reach_goal", self._reach_goal,
                                   callback_group=self.group)
        self.get_logger().info(f"planner ready (db {self._p('db_path')}, condition {condition})")

    def _p(self, name: str) -> Any:
        return self.get_parameter(name).value

    def _accept(self, _goal: Any) -> GoalResponse:
        # One task at a time: the robot has one body.
        return GoalResponse.REJECT if self._busy.locked() else GoalResponse.ACCEPT

    def _world(self) -> RosWorld:
        return RosWorld(self, self._query, self._execute, float(self._p("service_timeout_s")))

    def _executor(self, kb: KnowledgeBase | None) -> GoalExecutor:
        engine = str(self._p("engine"))
        client = None
        if engine == "llm":
            from task_learning.llm.client import make_client

            client = make_client(str(self._p("llm")))
        return GoalExecutor(self.domain, lambda: make_engine(engine, client), kb,
                            max_actions=int(self._p("max_actions")))

    # --- PerformTask ---------------------------------------------------------------------------
    def _perform_task(self, goal_handle: Any) -> PerformTask.Result:
        result = PerformTask.Result()
        with self._busy:
            request = goal_handle.request
            try:
                scene = load_scene(request.scene or str(self._p("scene")))
                check_task(scene, request.task or scene.task)
                if request.subtasks:
                    wanted = set(request.subtasks)
                    unknown = wanted - {s.name for s in scene.subtasks}
                    if unknown:
                        raise TaskLearningError(f"unknown subtask(s) {sorted(unknown)} of {scene.task!r}")
                    scene.subtasks = [s for s in scene.subtasks if s.name in wanted]
                condition = (request.condition or str(self._p("condition"))).upper()
                if condition not in CONDITIONS:
                    raise TaskLearningError(f"unknown condition {condition!r}")
                usage = LLMUsage()

                def elicit(*, task: str, object_id: str, metadata: Mapping[str, Any]) -> RemoteElicitation:
                    remote = self._learn_goal(task, object_id, condition, list(scene.context))
                    usage.merge(remote.usage)
                    return remote

                def progress(done: int, total: int, message: str) -> None:
                    feedback = PerformTask.Feedback(current_object=message, stage="done",
                                                    objects_done=done, objects_total=total,
                                                    progress=float(done) / max(total, 1))
                    goal_handle.publish_feedback(feedback)

                with KnowledgeBase(str(self._p("db_path"))) as kb:
                    learner = TaskLearner(scene=scene, world=self._world(), kb=kb, elicit=elicit,
                                          executor=self._executor(kb), condition=condition,
                                          progress=progress, usage_source=lambda: usage)
                    metrics = learner.run()
            except TaskLearningError as exc:
                self.get_logger().error(f"perform task failed: {exc}")
                goal_handle.abort()
                result.success = False
                result.message = str(exc)
                return result
        result.success = True
        result.message = f"completion {metrics.completion:.1f}%"
        result.satisfied = metrics.satisfied
        result.total = metrics.assertions
        result.completion = metrics.completion / 100.0
        result.counts = convert.elicitation_counts_to_msg({
            "retrieved": metrics.retrieved, "proposed": metrics.proposed, "sourced": metrics.sourced,
            "instructions": metrics.instructions, "yes_no": metrics.yes_no, "words": metrics.words})
        result.usage = convert.llm_usage_to_msg(metrics.usage)
        result.objects = [self._object_msg(r) for r in learner.reports]
        goal_handle.succeed()
        return result

    @staticmethod
    def _object_msg(report: Any) -> TaskObjectOutcome:
        from task_learning_interfaces.msg import GoalCandidate as GoalCandidateMsg

        msg = TaskObjectOutcome()
        msg.object_id = report.object_id
        msg.success = report.outcome == "done"
        detail = f" ({report.message})" if report.message else ""
        msg.message = f"{report.context}: {report.outcome}, goal from {report.goal_source or '-'}{detail}"
        msg.goal = GoalCandidateMsg(text=report.goal)
        return msg

    def _learn_goal(self, task: str, object_id: str, condition: str, context: list[str]) -> RemoteElicitation:
        if not self._learn.wait_for_server(timeout_sec=float(self._p("service_timeout_s"))):
            raise RosCallError("learn_goal: the goal elicitation node is not running")
        goal = LearnGoal.Goal(task=task, object_id=object_id, condition=condition,
                              context=context if "*" in condition else [])
        timeout = float(self._p("learn_goal_timeout_s"))
        handle = wait_future(self._learn.send_goal_async(goal), 30.0, "learn_goal (goal)")
        if not handle.accepted:
            raise RosCallError(f"learn_goal rejected the goal for {object_id}")
        wrapped = wait_future(handle.get_result_async(), timeout, "learn_goal (result)")
        res = wrapped.result
        counts = convert.elicitation_counts_from_msg(res.counts)
        chosen = convert.goal_candidate_from_msg(res.chosen) if res.success and res.chosen.text else None
        oversight = None
        if condition.endswith("+O"):
            oversight = RemoteOversight(
                OversightCounts(instructions=counts.get("instructions", 0), yes_no=counts.get("yes_no", 0),
                                words=counts.get("words", 0), proposed=counts.get("proposed", 0),
                                sourced=counts.get("sourced", 0)),
                confirmed=chosen is not None)
        return RemoteElicitation(
            chosen=chosen,
            candidates=[convert.goal_candidate_from_msg(c) for c in res.candidates],
            usage=convert.llm_usage_from_msg(res.usage),
            oversight=oversight,
            outcome="ok" if chosen else (res.message or "no goal"),
            errors=[] if res.success else [res.message],
            counts=counts,
        )

    # --- ReachGoal -----------------------------------------------------------------------------
    def _reach_goal(self, goal_handle: Any) -> ReachGoal.Result:
        literals = [convert.goal_literal_from_msg(m) for m in goal_handle.request.goal]
        result = ReachGoal.Result()
        try:
            executor = self._executor(None)
            if goal_handle.request.max_steps:
                executor.max_actions = int(goal_handle.request.max_steps)
            reached = executor.reach(
                self._world(), literals,
                on_outcome=lambda o: goal_handle.publish_feedback(
                    ReachGoal.Feedback(outcome=convert.action_outcome_to_msg(o))))
            if not literals:
                raise TaskLearningError("ReachGoal needs at least one goal literal")
        except TaskLearningError as exc:
            goal_handle.abort()
            result.success = False
            result.message = str(exc)
            return result
        result.success = reached.success
        result.message = reached.message
        result.outcomes = [convert.action_outcome_to_msg(o) for o in reached.outcomes]
        goal_handle.succeed()
        return result


def main(args: list[str] | None = None) -> int:
    return run_node(PlannerNode, args, name="planner")


if __name__ == "__main__":
    raise SystemExit(main())
