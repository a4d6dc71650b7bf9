"""The other OS process of the interface tests: a node that echoes every message type, answers
every service type and serves every action type of task_learning_interfaces.

- topic `echo_in/<Msg>` -> republished unchanged on `echo_out/<Msg>`;
- service `echo/<Srv>`: a response computed from the request (so the test can check that the
  request arrived intact and the response came back intact);
- action `echo/<Action>`: three feedback messages, then a result computed from the goal.

Started by test/nodes/test_ros_interfaces.py as `python test/ros_echo_helper.py`; stops on SIGINT/SIGTERM
through task_learning_nodes.plumbing.node_base.run_node.
"""
from __future__ import annotations

import sys
import time

from rclpy.action import ActionServer
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from task_learning_interfaces import action as a
from task_learning_interfaces import msg as m
from task_learning_interfaces import srv as s
from task_learning_nodes.plumbing.node_base import run_node

MESSAGE_TYPES = (
    m.ActionCall, m.ActionOutcome, m.CandidateTree, m.ConfirmationAnswer, m.ConfirmationRequest,
    m.ElicitationCounts, m.GoalCandidate, m.GoalLiteral, m.KeyValue, m.LLMState, m.LLMStateObject,
    m.LLMUsage, m.Mismatch, m.ObjectProgress,
    m.ObjectState, m.PendingConfirmations, m.PromptTypeUsage, m.TaskObjectOutcome, m.TreeEdge, m.TreeNode,
    m.WorldState,
)
ECHO_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.TRANSIENT_LOCAL)


def _usage(calls: int) -> m.LLMUsage:
    return m.LLMUsage(calls=calls, prompt_tokens=10 * calls, by_type=[
        m.PromptTypeUsage(prompt_type="selection", calls=calls, prompt_tokens=10 * calls)])


class EchoNode(Node):
    def __init__(self) -> None:
        super().__init__("interface_echo")
        self._keep = []
        for msg_type in MESSAGE_TYPES:
            name = msg_type.__name__
            pub = self.create_publisher(msg_type, f"echo_out/{name}", ECHO_QOS)
            self._keep.append(self.create_subscription(
                msg_type, f"echo_in/{name}", lambda msg, pub=pub: pub.publish(msg), ECHO_QOS))
        for srv_type, handler in (
            (s.AnalyzeGoal, self.analyze_goal), (s.Confirm, self.confirm),
            (s.AnswerConfirmation, self.answer_confirmation),
            (s.ListPendingConfirmations, self.list_pending), (s.ExecuteAction, self.execute_action),
            (s.SelectNextAction, self.select_next_action), (s.QueryWorld, self.query_world),
            (s.GetCompletion, self.get_completion),
        ):
            self._keep.append(self.create_service(srv_type, f"echo/{srv_type.__name__}", handler))
        for action_type, execute in ((a.LearnGoal, self.learn_goal), (a.LearnGoals, self.learn_goals),
                                     (a.PerformTask, self.perform_task), (a.ReachGoal, self.reach_goal)):
            self._keep.append(ActionServer(self, action_type, f"echo/{action_type.__name__}", execute))

    # -- services: each response is a function of its request --------------------------------

    def analyze_goal(self, req, res):
        res.candidate = req.candidate
        res.candidate.analyzed, res.candidate.viable = True, False
        res.candidate.mismatches = [m.Mismatch(kind=m.Mismatch.UNGROUNDED_OBJECT, subject=req.object_id,
                                               feedback=f"No. Cannot see {req.location}.")]
        res.success, res.message = True, req.task
        return res

    def confirm(self, req, res):
        res.answer = m.ConfirmationAnswer(request_id=req.request.request_id, answer=m.ConfirmationAnswer.NO,
                                          description=req.request.question, answered_by="echo")
        res.answer.stamp.sec = 7
        return res

    def answer_confirmation(self, req, res):
        res.accepted = req.answer.answer == m.ConfirmationAnswer.YES
        res.message = f"{req.answer.request_id}:{req.answer.description}"
        return res

    def list_pending(self, req, res):
        res.pending = [m.ConfirmationRequest(request_id=f"r{i}", question=f"q{i}") for i in range(2)]
        return res

    def execute_action(self, req, res):
        res.outcome = m.ActionOutcome(call=req.call, success=False, error_message="echo",
                                      blocking_condition=req.call.object_id)
        if req.return_world:
            res.world.scene = "echo"
            res.world.objects = [m.ObjectState(object_id=req.call.object_id)]
        return res

    def select_next_action(self, req, res):
        res.success = bool(req.candidates)
        if req.candidates:
            res.action = req.candidates[-1]
        res.rationale = " & ".join(f"{g.predicate}:{g.truth}" for g in req.goal)
        res.message = "|".join(req.blocking_conditions) + f"|{len(req.history)}"
        res.usage = _usage(len(req.goal))
        return res

    def query_world(self, req, res):
        res.success, res.message = True, req.query
        res.objects = [m.ObjectState(object_id=req.query, object_type="Mug", is_open=True)]
        if req.include_world:
            res.world.objects = list(res.objects)
            res.world.held_object_ids = [req.query]
        return res

    def get_completion(self, req, res):
        res.success, res.satisfied, res.total, res.ratio = True, 39, 40, 39 / 40
        res.failures = ["Mug|1 not in Cupboard|1"]
        return res

    # -- actions: three feedback messages, then a result ---------------------------------------

    def learn_goal(self, handle):
        for i in range(3):
            handle.publish_feedback(a.LearnGoal.Feedback(stage=f"stage{i}", candidates_so_far=i,
                                                         counts=m.ElicitationCounts(retrieved=i)))
            time.sleep(0.02)
        handle.succeed()
        goal = handle.request
        chosen = m.GoalCandidate(id=1, text=f"{goal.task}:{goal.object_id}", source=m.GoalCandidate.SOURCE_USER,
                                 analyzed=True, viable=True)
        return a.LearnGoal.Result(success=True, message=goal.condition + "|" + "|".join(goal.context),
                                  chosen=chosen, candidates=[chosen, chosen], usage=_usage(2),
                                  counts=m.ElicitationCounts(words=len(goal.context)))

    def learn_goals(self, handle):
        goal = handle.request
        ids = list(goal.object_ids)
        for states in (["eliciting", "eliciting"], ["elicited", "eliciting"], ["elicited", "elicited"]):
            handle.publish_feedback(a.LearnGoals.Feedback(
                objects=[m.ObjectProgress(object_id=i, state=st) for i, st in zip(ids, states)], levels=1))
            time.sleep(0.02)
        handle.succeed()
        return a.LearnGoals.Result(success=True, message=f"{goal.task}/{goal.condition}", levels=2,
                                   usage=_usage(len(ids)),
                                   objects=[m.ObjectProgress(object_id=i, state="confirmed") for i in ids])

    def perform_task(self, handle):
        goal = handle.request
        for i, subtask in enumerate(goal.subtasks[:3]):
            handle.publish_feedback(a.PerformTask.Feedback(current_object=subtask, stage="learn",
                                                           objects_done=i, objects_total=len(goal.subtasks),
                                                           progress=i / max(1, len(goal.subtasks))))
            time.sleep(0.02)
        handle.succeed()
        return a.PerformTask.Result(
            success=True, message=f"{goal.task}@{goal.scene}/{goal.condition}", satisfied=39, total=40,
            completion=0.975, usage=_usage(1), counts=m.ElicitationCounts(yes_no=len(goal.subtasks)),
            objects=[m.TaskObjectOutcome(object_id=t, success=True) for t in goal.subtasks])

    def reach_goal(self, handle):
        goal = handle.request
        outcomes = []
        for i, literal in enumerate(goal.goal[:3]):
            outcome = m.ActionOutcome(call=m.ActionCall(action=literal.predicate, object_id=literal.args[0]),
                                      success=True)
            outcomes.append(outcome)
            handle.publish_feedback(a.ReachGoal.Feedback(step=i, outcome=outcome,
                                                         remaining_literals=len(goal.goal) - i - 1))
            time.sleep(0.02)
        handle.succeed()
        return a.ReachGoal.Result(success=True, message=f"max_steps={goal.max_steps}", outcomes=outcomes,
                                  usage=_usage(len(outcomes)))


def main() -> int:
    return run_node(EchoNode, sys.argv, name="interface_echo")


if __name__ == "__main__":
    sys.exit(main())
