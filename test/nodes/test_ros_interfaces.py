"""Every message type published, every service called and every action run across two OS
processes with the real rclpy: this process is the client, test/ros_echo_helper.py the server."""
from __future__ import annotations

import sys

import pytest
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from task_learning.types import (
    ActionCall,
    ActionOutcome,
    AnswerKind,
    CandidateSource,
    ConfirmationAnswer,
    ConfirmationRequest,
    GoalCandidate,
    GoalLiteral,
    LLMUsage,
    Mismatch,
    MismatchKind,
    PromptTypeUsage,
    Truth,
)
from task_learning_interfaces import action as a
from task_learning_interfaces import msg as m
from task_learning_interfaces import srv as s
from task_learning_nodes.plumbing import convert

from ..ros_testing import ROOT, is_ordered_subsequence

ECHO_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.TRANSIENT_LOCAL)

MUG = GoalCandidate("the mug goes in the cupboard", -0.31, CandidateSource.REPAIR, 4, 2, True,
                    [Mismatch(MismatchKind.UNGROUNDED_OBJECT, "no cabinet", "No. Cannot see a cabinet.", "cabinet")],
                    [GoalLiteral("inside", ("Mug|1", "Cupboard|1"))], "No. Cannot see a cabinet.")
CALL = ActionCall("PutObject", "Cupboard|1", (("forceAction", False),))
RECORD = {"objectId": "Mug|1", "objectType": "Mug", "parentReceptacles": ["DishRack|1"], "pickupable": True,
          "position": {"x": 1.0, "y": 0.9, "z": -0.5}, "rotation": {"x": 0, "y": 90, "z": 0}, "distance": 1.2,
          "salientMaterials": ["Ceramic"], "axisAlignedBoundingBox": {"center": {"x": 1, "y": 2, "z": 3}}}
STATE = {"key_objects": ["lightswitch1", "bedroom1", "lightswitch2"],
         "objects": {"lightswitch1": ["off"], "bedroom1": ["robot_inside"], "lightswitch2": []},
         "summary": "The last switchoff failed: the robot is no longer close to lightswitch1."}
USAGE = LLMUsage(by_type={"initial": PromptTypeUsage(3, 300, 60, 1, 0, 2, 120)})


def sample_messages() -> dict[str, object]:
    """One non-trivial instance of every message type, built from core data where one exists."""
    world = convert.world_state_msg_from_metadata(
        {"sceneName": "tidy_kitchen", "objects": [RECORD, {"objectId": "DishRack|1", "objectType": "DishRack",
                                                           "receptacle": True, "receptacleObjectIds": ["Mug|1"]}],
         "agent": {"location": "kitchen", "position": {"x": 0, "y": 0.9, "z": 0}},
         "inventoryObjects": []}, stamp=5.5, backend="symbolic")
    request = ConfirmationRequest("r1", "Is the goal: the mug goes in the cupboard?", "Mug|1",
                                  "mug in the dish rack", MUG, [MUG], False, 15.0)
    samples = {
        "ActionCall": convert.action_call_to_msg(CALL),
        "ActionOutcome": convert.action_outcome_to_msg(ActionOutcome(CALL, False, "Cupboard|1 is closed", "closed")),
        "CandidateTree": convert.candidate_tree_to_msg(
            [{"id": 0, "parent_id": -1, "label": "PutObject(Mug|1)", "status": "blocked"},
             {"id": 1, "parent_id": 0, "label": "OpenObject(Cupboard|1)", "status": "open"}],
            kind="bcr", goal="inside(Mug|1, Cupboard|1)", dot="digraph { 0 -> 1 }"),
        "ConfirmationAnswer": convert.confirmation_answer_to_msg(
            ConfirmationAnswer("r1", AnswerKind.DESCRIPTION, "in the cupboard", "alice", 1.25, "/operator_alice",
                               "0f" * 16)),
        "ConfirmationRequest": convert.confirmation_request_to_msg(request),
        "PendingConfirmations": m.PendingConfirmations(stamp=convert.time_to_msg(3.5),
                                                       pending=[convert.confirmation_request_to_msg(request)]),
        "ElicitationCounts": convert.elicitation_counts_to_msg(
            {"retrieved": 9, "proposed": 3, "sourced": 1, "instructions": 1, "yes_no": 2, "words": 5}),
        "GoalCandidate": convert.goal_candidate_to_msg(MUG),
        "GoalLiteral": convert.goal_literal_to_msg(GoalLiteral("open", ("Fridge|1",), Truth.POSSIBLY_FALSE)),
        "KeyValue": convert.key_value_to_msg("openness", 0.5),
        "LLMState": convert.llm_state_to_msg(STATE, goal="switch off all the lights in the house", method="ours",
                                             stamp=7.25),
        "LLMStateObject": m.LLMStateObject(name="kitchencabinet1", attributes=["closed", "in_kitchen"]),
        "LLMUsage": convert.llm_usage_to_msg(USAGE),
        "Mismatch": convert.mismatch_to_msg(MUG.mismatches[0]),
        "ObjectProgress": m.ObjectProgress(object_id="Mug|1", state="asking_operator",
                                           detail="the goal is that the mug is in the cupboard"),
        "ObjectState": convert.object_state_to_msg(RECORD),
        "PromptTypeUsage": convert.llm_usage_to_msg(USAGE).by_type[0],
        "TaskObjectOutcome": m.TaskObjectOutcome(object_id="Mug|1", success=True, goal=convert.goal_candidate_to_msg(MUG),
                                                 actions=[convert.action_outcome_to_msg(ActionOutcome(CALL, True))]),
        "TreeEdge": m.TreeEdge(parent_id=0, child_id=1, label="Cupboard|1 is closed"),
        "TreeNode": m.TreeNode(id=3, parent_id=1, label="OpenObject(Fridge|1)", kind="resolution",
                               status=m.TreeNode.STATUS_SELECTED),
        "WorldState": world,
    }
    return samples


def test_samples_cover_every_message_type():
    defined = {p.stem for p in (ROOT / "msg").glob("*.msg")}
    assert set(sample_messages()) == defined


@pytest.fixture(scope="module")
def echo(ros_module_graph):
    proc = ros_module_graph.start([sys.executable, str(ROOT / "test" / "ros_echo_helper.py")], name="echo")
    client = ros_module_graph.client()
    yield client
    client.close()
    code, output = proc.stop()
    assert code == 0, f"echo helper exited with {code}:\n{output}"


def test_every_message_type_crosses_processes(echo):
    samples = sample_messages()
    collectors = {name: echo.subscribe_collect(type(msg), f"echo_out/{name}", ECHO_QOS)
                  for name, msg in samples.items()}
    publishers = {name: echo.node.create_publisher(type(msg), f"echo_in/{name}", ECHO_QOS)
                  for name, msg in samples.items()}
    for name, msg in samples.items():
        publishers[name].publish(msg)
    for name, msg in samples.items():
        received = collectors[name].wait_for(timeout=15.0)
        assert received == msg, name
    # the core data survives the trip
    back = collectors["GoalCandidate"].messages[0]
    assert convert.goal_candidate_from_msg(back) == MUG
    world = convert.metadata_from_world_state_msg(collectors["WorldState"].messages[0])
    assert world["objects"][0]["axisAlignedBoundingBox"] == RECORD["axisAlignedBoundingBox"]
    assert world["objects"][1]["receptacleObjectIds"] == ["Mug|1"]
    assert convert.llm_state_from_msg(collectors["LLMState"].messages[0]) == STATE
    usage = collectors["LLMUsage"].messages[0]
    assert (usage.requests, usage.cached_prompt_tokens) == (2, 120)  # round trips cross the graph
    assert convert.llm_usage_from_msg(usage) == USAGE


def test_analyze_goal_service(echo):
    req = s.AnalyzeGoal.Request(candidate=convert.goal_candidate_to_msg(MUG), task="tidy kitchen",
                                location="kitchen", object_id="Mug|1")
    res = echo.call(s.AnalyzeGoal, "echo/AnalyzeGoal", req)
    assert res.success and res.message == "tidy kitchen"
    assert res.candidate.text == MUG.text and res.candidate.analyzed and not res.candidate.viable
    assert res.candidate.mismatches[0].subject == "Mug|1"
    assert convert.goal_candidate_from_msg(res.candidate).literals == MUG.literals


def test_confirmation_services(echo):
    request = ConfirmationRequest("r9", "Is the goal: the mug goes in the cupboard?", "Mug|1", candidate=MUG)
    res = echo.call(s.Confirm, "echo/Confirm", s.Confirm.Request(request=convert.confirmation_request_to_msg(request)))
    answer = convert.confirmation_answer_from_msg(res.answer)
    assert (answer.request_id, answer.answer, answer.description, answer.operator, answer.stamp) == \
        ("r9", AnswerKind.NO, request.question, "echo", 7.0)
    ans = convert.confirmation_answer_to_msg(ConfirmationAnswer("r9", AnswerKind.YES, "fine", "terminal"))
    res = echo.call(s.AnswerConfirmation, "echo/AnswerConfirmation", s.AnswerConfirmation.Request(answer=ans))
    assert res.accepted and res.message == "r9:fine"
    res = echo.call(s.ListPendingConfirmations, "echo/ListPendingConfirmations", s.ListPendingConfirmations.Request())
    assert [convert.confirmation_request_from_msg(p).request_id for p in res.pending] == ["r0", "r1"]


def test_execute_and_select_services(echo):
    res = echo.call(s.ExecuteAction, "echo/ExecuteAction",
                    s.ExecuteAction.Request(call=convert.action_call_to_msg(CALL), return_world=True))
    outcome = convert.action_outcome_from_msg(res.outcome)
    assert outcome.call == CALL and not outcome.success and outcome.blocking_condition == "Cupboard|1"
    assert res.world.scene == "echo" and res.world.objects[0].object_id == "Cupboard|1"

    goal = [GoalLiteral("inside", ("Mug|1", "Cupboard|1")), GoalLiteral("open", ("Cupboard|1",), Truth.FALSE)]
    req = s.SelectNextAction.Request(
        goal=[convert.goal_literal_to_msg(g) for g in goal],
        candidates=[convert.action_call_to_msg(ActionCall("OpenObject", "Cupboard|1")), convert.action_call_to_msg(CALL)],
        history=[convert.action_outcome_to_msg(ActionOutcome(ActionCall("PickupObject", "Mug|1"), True))],
        blocking_conditions=["Cupboard|1 is closed"])
    res = echo.call(s.SelectNextAction, "echo/SelectNextAction", req)
    assert res.success and convert.action_call_from_msg(res.action) == CALL
    assert res.rationale == "inside:true & open:false" and res.message == "Cupboard|1 is closed|1"
    assert convert.llm_usage_from_msg(res.usage).calls == 2


def test_query_and_completion_services(echo):
    res = echo.call(s.QueryWorld, "echo/QueryWorld", s.QueryWorld.Request(query="mug in dish rack", include_world=True))
    assert res.success and res.objects[0].object_id == "mug in dish rack" and res.objects[0].is_open
    assert list(res.world.held_object_ids) == ["mug in dish rack"]
    res = echo.call(s.GetCompletion, "echo/GetCompletion", s.GetCompletion.Request())
    assert (res.satisfied, res.total, res.ratio) == (39, 40, 39 / 40) and res.failures


def test_learn_goal_action(echo):
    goal = a.LearnGoal.Goal(task="tidy kitchen", object_id="Mug|1", context=["I keep mugs high", "x"],
                            condition="stars_plus_o")
    result, feedback = echo.send_goal(a.LearnGoal, "echo/LearnGoal", goal)
    assert result.success and result.message == "stars_plus_o|I keep mugs high|x"
    assert result.chosen.text == "tidy kitchen:Mug|1" and len(result.candidates) == 2
    assert result.usage.calls == 2 and result.counts.words == 2
    # feedback: what arrived is what was sent, in order (the result may overtake the last ones)
    assert is_ordered_subsequence([f.stage for f in feedback], ["stage0", "stage1", "stage2"])


def test_learn_goals_action(echo):
    goal = a.LearnGoals.Goal(task="tidy kitchen", object_ids=["Mug|1", "Cup|1"], condition="STARS+O")
    result, feedback = echo.send_goal(a.LearnGoals, "echo/LearnGoals", goal)
    assert result.success and result.levels == 2 and result.message == "tidy kitchen/STARS+O"
    assert [(o.object_id, o.state) for o in result.objects] == [("Mug|1", "confirmed"), ("Cup|1", "confirmed")]
    assert is_ordered_subsequence([tuple(o.state for o in f.objects) for f in feedback],
                                  [("eliciting", "eliciting"), ("elicited", "eliciting"), ("elicited", "elicited")])


def test_perform_task_action(echo):
    goal = a.PerformTask.Goal(task="tidy kitchen", scene="tidy_kitchen", condition="stars",
                              subtasks=["Mug|1", "Mug|2", "Plate|1"])
    result, feedback = echo.send_goal(a.PerformTask, "echo/PerformTask", goal)
    assert result.message == "tidy kitchen@tidy_kitchen/stars" and result.completion == pytest.approx(0.975)
    assert [o.object_id for o in result.objects] == goal.subtasks and result.counts.yes_no == 3
    assert is_ordered_subsequence([f.current_object for f in feedback], goal.subtasks)


def test_reach_goal_action(echo):
    goal = a.ReachGoal.Goal(goal=[convert.goal_literal_to_msg(GoalLiteral("holding", ("Mug|1",))),
                                  convert.goal_literal_to_msg(GoalLiteral("open", ("Fridge|1",)))], max_steps=7)
    result, feedback = echo.send_goal(a.ReachGoal, "echo/ReachGoal", goal)
    assert result.success and result.message == "max_steps=7"
    assert [(o.call.action, o.call.object_id) for o in result.outcomes] == [("holding", "Mug|1"), ("open", "Fridge|1")]
    assert is_ordered_subsequence([f.remaining_literals for f in feedback], [1, 0])
