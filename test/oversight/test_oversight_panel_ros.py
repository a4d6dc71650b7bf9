"""End to end over ROS: oversight_node in one process, a goal-elicitation-like asker in another, and
the operator panel (offscreen Qt) in this one. Clicking Yes / No / Send in the panel answers the
asker through the Confirm service; a screenshot of the panel is saved as a test artefact.

The node issues every question its own id, so a test finds its question by a marker in the object
description ("mug in the dish rack (mug-yes)"); the panel and the terminal answer as paired
operators ("panel", "terminal"), the askers sign as stack nodes."""
from __future__ import annotations

import json
import re
import sys
import textwrap
from pathlib import Path

import pytest

from test.ros_testing import RosGraph, wait_until

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "artifacts"
PY = sys.executable
PAPER_QUESTION = ("For a mug in the dish rack is the goal that the mug is in the cupboard and the "
                  "cupboard is closed?")

# A separate OS process asking one question through Confirm (as goal elicitation does), printing
# the answer as JSON. argv[1]: the request as JSON.
ASKER = textwrap.dedent("""
    import json, sys
    from task_learning.types import ConfirmationRequest, GoalCandidate
    from task_learning_nodes.clients.oversight_client import OversightClient
    data = json.loads(sys.argv[1])
    cands = [GoalCandidate(c["text"], c["score"], candidate_id=c["id"], viable=True)
             for c in data.pop("candidates")]
    request = ConfirmationRequest(candidates=cands, **data)
    request.candidate = None if request.wants_description else cands[-2]
    client = OversightClient(name="goal_elicitation", asker="goal_elicitation", service_wait_s=15)
    answer = client.ask(request)
    print(json.dumps({"answer": answer.answer.value, "by": answer.operator,
                      "description": answer.description}), flush=True)
    client.close()
""")

# A separate process running the whole +O flow against the node (a dead or silent operator).
FLOW = textwrap.dedent("""
    import json, sys
    from task_learning.oversight.flow import OversightLimits, OversightSubject, run_oversight
    from task_learning.types import GoalCandidate
    from task_learning_nodes.clients.oversight_client import OversightClient, OversightNotAnswering
    cands = [GoalCandidate("the goal is that the mug is in the cupboard", 0.9, candidate_id=1,
                           viable=True)]
    client = OversightClient(name="flow", asker="goal_elicitation", service_wait_s=float(sys.argv[1]),
                             namespace=sys.argv[3])
    try:
        outcome = run_oversight(ranked=cands, reselect=lambda r: r[0], operator=client,
                                subject=OversightSubject("mug in the dish rack"), analyze=lambda s: None,
                                limits=OversightLimits(timeout_s=float(sys.argv[2])))
        print(json.dumps({"status": outcome.status.value,
                          "chosen": outcome.chosen.text if outcome.chosen else None}), flush=True)
    except OversightNotAnswering:  # the whole goal ends, naming the node: nothing chosen
        print(json.dumps({"status": "oversight_not_answering", "chosen": None}), flush=True)
    client.close()
""")

QUESTION_TIMEOUT_S = 180.0

MUG_OPTIONS = [
    ("the goal is that the mug is in the dish rack", 0.971),
    ("the goal is that the mug is in the drawer and the drawer is closed", 0.913),
    ("the goal is that the mug is in the dishwasher and the dishwasher is closed", 0.899),
    ("the goal is that the mug is in the dishwasher", 0.8618),
    ("the goal is that the mug is in the cupboard and the cupboard is closed", 0.935),
    ("the goal is that the mug is in the cupboard", 0.8612),
]


@pytest.fixture(scope="module")
def db_path(tmp_path_factory):
    return tmp_path_factory.mktemp("oversight_db") / "kb.sqlite"


@pytest.fixture(scope="module")
def node(ros_module_graph, db_path):
    proc = ros_module_graph.start_node(
        "oversight", "-p", "timeout_s:=30.0", "-p", f"db_path:={db_path}", "-p", "task:=tidy kitchen",
        "-p", "remember_answers:=false")  # the same question is asked on purpose, answered anew
    yield proc
    code, out = proc.stop()
    assert code == 0, out


@pytest.fixture(scope="module")
def qt_app(ros_module_graph):
    from task_learning.oversight.qt_compat import QApplication

    return QApplication.instance() or QApplication([])


@pytest.fixture(scope="module")
def client(ros_module_graph, node, db_path):
    import rclpy

    from task_learning_nodes.clients.oversight_client import OversightClient

    context = rclpy.Context()
    rclpy.init(context=context, domain_id=ros_module_graph.domain_id)
    from test.oversight_identity import paired

    ros_client = OversightClient(name="panel_test", context=context, service_wait_s=30,
                                 credentials=paired(db_path, "panel"))
    yield ros_client
    ros_client.close()
    rclpy.shutdown(context=context)


def _ask(graph: RosGraph, request_id, *, wants_description=False):
    data = {"request_id": request_id, "object_id": "Mug|2",
            "object_description": f"mug in the dish rack ({request_id})", "wants_description": wants_description,
            # long enough for the operator CLI's several round trips on a loaded machine (each starts
            # a ROS client: seconds under load); a question that expires mid-test is not the point
            "timeout_s": QUESTION_TIMEOUT_S,
            "question": "For a mug in the dish rack, what is the goal?" if wants_description
            else PAPER_QUESTION,
            "candidates": [{"text": t, "score": s, "id": i}
                           for i, (t, s) in enumerate(MUG_OPTIONS, start=1)]}
    return graph.start([PY, "-c", ASKER, json.dumps(data)], name=f"asker {request_id}")


def _wait_for_question(panel, client, app, request_id, timeout=30.0):
    def arrived():
        client.spin_once(0.05)
        panel.refresh()
        app.processEvents()
        current = panel.current_request()
        return current if current is not None and _marked(current, request_id) else None

    return wait_until(arrived, timeout, f"question {request_id} reaching the panel", interval=0.0)


def _marked(request, marker: str) -> bool:
    return request.object_description.endswith(f"({marker})")


def _answer_of(proc):
    assert proc.wait(30) == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_panel_answers_reach_a_client_in_another_process(ros_module_graph, node, client, qt_app, db_path):
    from task_learning.oversight.panel import OperatorPanel
    from task_learning.oversight.qt_compat import Qt, QTest

    panel = OperatorPanel(client, poll_ms=0)
    panel.resize(960, 620)
    panel.show()

    # 1. Yes, clicked.
    asker = _ask(ros_module_graph, "mug-yes")
    request = _wait_for_question(panel, client, qt_app, "mug-yes")
    assert panel.question_label.text() == PAPER_QUESTION
    assert "mug in the dish rack" in panel.object_label.text() and "Mug|2" in panel.object_label.text()
    assert panel.candidate_tree.topLevelItemCount() == 6
    assert request.candidate.text == MUG_OPTIONS[-2][0]
    assert panel.yes_button.isEnabled()
    qt_app.processEvents()
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "oversight_panel.png"
    assert panel.grab().save(str(shot))
    image = panel.grab().toImage()
    assert image.width() >= 900 and shot.stat().st_size > 10_000
    QTest.mouseClick(panel.yes_button, Qt.MouseButton.LeftButton)
    assert panel.status_label.text().startswith("Sent"), panel.status_label.text()
    assert _answer_of(asker) == {"answer": "yes", "by": "panel", "description": ""}

    # 2. No, clicked.
    asker = _ask(ros_module_graph, "mug-no")
    _wait_for_question(panel, client, qt_app, "mug-no")
    QTest.mouseClick(panel.no_button, Qt.MouseButton.LeftButton)
    assert _answer_of(asker)["answer"] == "no"

    # 3. A description: empty and 10 kB are refused with a reason, the question stays pending.
    asker = _ask(ros_module_graph, "mug-words", wants_description=True)
    _wait_for_question(panel, client, qt_app, "mug-words")
    assert not panel.yes_button.isEnabled()
    QTest.mouseClick(panel.send_button, Qt.MouseButton.LeftButton)
    assert panel.status_label.text().startswith("Not sent: An empty answer")  # read as everywhere
    panel.description_edit.setPlainText("x" * 10240)
    QTest.mouseClick(panel.send_button, Qt.MouseButton.LeftButton)
    assert "too long" in panel.status_label.text()
    assert [_marked(r, "mug-words") for r in client.pending(fresh=True)] == [True]
    refused = client.submit("no-such-question", "yes")
    assert not refused.accepted and "no pending question" in refused.message
    assert [_marked(r, "mug-words") for r in client.pending(fresh=True)] == [True]
    panel.description_edit.setPlainText("the goal is that the mug is in the cupboard")
    QTest.mouseClick(panel.send_button, Qt.MouseButton.LeftButton)
    assert _answer_of(asker) == {"answer": "description", "by": "panel",
                                 "description": "the goal is that the mug is in the cupboard"}
    panel.stop()
    panel.close()
    panel.deleteLater()
    qt_app.processEvents()

    # Every question and answer is in the node's knowledge base.
    from task_learning.kb.store import KnowledgeBase

    with KnowledgeBase(db_path) as kb:
        log = {row["context"].rsplit("(", 1)[-1].rstrip(")"): row for row in kb.question_log()}
    assert log["mug-yes"]["answer"] == "yes" and log["mug-yes"]["operator"] == "panel"
    assert log["mug-yes"]["verified"] == 1 and log["mug-yes"]["client"].startswith("/oversight_panel_test_")
    assert log["mug-yes"]["question"] == PAPER_QUESTION and log["mug-yes"]["object_id"] == "Mug|2"
    assert log["mug-no"]["answer"] == "no"
    assert log["mug-words"]["description"] == "the goal is that the mug is in the cupboard"


def test_silent_operator_over_ros_confirms_nothing(ros_module_graph, node):
    flow = ros_module_graph.run([PY, "-c", FLOW, "30", "0.5", "/"], timeout=90, name="flow")
    assert flow.returncode == 0, flow.stderr[-2000:]
    assert json.loads(flow.stdout.strip().splitlines()[-1]) == {"status": "timeout", "chosen": None}


def test_dead_operator_node_confirms_nothing(ros_graph):
    # A graph where no oversight node runs: the client finds no service, the flow gets no goal.
    flow = ros_graph.run([PY, "-c", FLOW, "1.0", "0.5", "/nobody_here"], timeout=60, name="flow")
    assert flow.returncode == 0, flow.stderr[-2000:]
    assert json.loads(flow.stdout.strip().splitlines()[-1]) == {"status": "oversight_not_answering",
                                                                "chosen": None}


def test_node_refuses_yes_as_safe_default(ros_graph):
    proc = ros_graph.run([PY, "-m", "task_learning_nodes.nodes.oversight", "--ros-args", "-p", "safe_default:=yes"],
                         timeout=60, name="oversight")
    assert proc.returncode == 2, proc.output
    assert "safe_default" in proc.stderr and "never 'yes'" in proc.stderr and "Traceback" not in proc.output


def _cli(graph: RosGraph, *args, stdin=""):
    main = "import sys; from task_learning.apps.cli import main; sys.exit(main(sys.argv[1:]))"
    return graph.run([PY, "-c", main, "operator", "--wait", "30", *args], input=stdin, timeout=90,
                     name="operator cli")


def test_terminal_operator_cli_lists_and_answers(ros_module_graph, node, db_path):
    asker = _ask(ros_module_graph, "cli-1")

    def listed():
        out = _cli(ros_module_graph, "--list", "--json")
        assert out.returncode == 0, out.stderr
        return [q for q in json.loads(out.stdout) if q["object_description"].endswith("(cli-1)")]

    found = wait_until(listed, 60, "question cli-1 in `operator --list`")
    assert found[0]["question"] == PAPER_QUESTION
    unpaired = _cli(ros_module_graph, "--name", "stranger", "--answer", found[0]["request_id"], "yes")
    assert unpaired.returncode == 1 and "not paired" in unpaired.stderr and "Traceback" not in unpaired.stderr
    refused = _cli(ros_module_graph, "--db", str(db_path), "--answer", "cli-unknown", "yes")
    assert refused.returncode == 1 and "no pending question" in refused.stderr
    assert "Traceback" not in refused.stderr
    prompt = _cli(ros_module_graph, "--once", stdin="\nno\n")
    assert prompt.returncode == 0, prompt.stderr
    assert "For a mug in the dish rack is the goal that" in prompt.stdout
    assert _answer_of(asker) == {"answer": "no", "by": "terminal", "description": ""}


def _listed_id(graph: RosGraph, marker: str) -> str:
    """The node's id of the question marked `marker`, once `operator --list` shows it."""
    def found():
        out = _cli(graph, "--list", "--json")
        return next((q["request_id"] for q in json.loads(out.stdout or "[]")
                     if q["object_description"].endswith(f"({marker})")), None)

    return wait_until(found, 60, f"{marker} listed")


def test_replies_as_people_give_them_through_the_node(ros_module_graph, node, db_path):
    """Issue 32 through the oversight node: `operator --list` shows the time left; `operator
    --answer` takes a listed candidate's number and plain words, and refuses "maybe" and a yes to
    a question asking for words with what is expected (the question stays); the prompt asks again
    with a hint. The node reads replies with the same core module as every front end. The
    terminal answers as its paired operator ("terminal", paired in the node's knowledge base)."""
    paired = ("--db", str(db_path))
    asker = _ask(ros_module_graph, "plain-1")
    qid = _listed_id(ros_module_graph, "plain-1")
    listed = _cli(ros_module_graph, "--list")
    assert re.search(r"time: (\d+ min )?\d+ s left \(then it counts as no answer, never as yes\)", listed.stdout), listed.stdout
    left = next(q for q in json.loads(_cli(ros_module_graph, "--list", "--json").stdout)
                if q["request_id"] == qid)["remaining_s"]
    assert 0 < left <= QUESTION_TIMEOUT_S
    maybe = _cli(ros_module_graph, *paired, "--answer", qid, "maybe")
    assert maybe.returncode == 1 and "'maybe' is not an answer the robot can act on: please" in maybe.stderr
    assert qid in _cli(ros_module_graph, "--list").stdout  # still waiting, nothing stored
    number = _cli(ros_module_graph, *paired, "--answer", qid, "2")  # another listed candidate, by number
    assert number.returncode == 0, number.stderr
    assert _answer_of(asker) == {"answer": "description", "by": "terminal", "description": MUG_OPTIONS[1][0]}

    asker = _ask(ros_module_graph, "plain-2", wants_description=True)
    qid = _listed_id(ros_module_graph, "plain-2")
    yes = _cli(ros_module_graph, *paired, "--answer", qid, "yes")
    assert yes.returncode == 1 and "in words" in yes.stderr, yes.stderr
    words = _cli(ros_module_graph, *paired, "--answer", qid, "put it in the recycling bin")
    assert words.returncode == 0, words.stderr
    assert _answer_of(asker)["description"] == "put it in the recycling bin"

    asker = _ask(ros_module_graph, "plain-3")  # asks about candidate #5
    _listed_id(ros_module_graph, "plain-3")
    prompt = _cli(ros_module_graph, *paired, "--once", stdin="maybe\n\n5\n")
    assert prompt.returncode == 0, prompt.stderr
    assert "not an answer the robot can act on" in prompt.stdout and "An empty answer" in prompt.stdout
    assert _answer_of(asker) == {"answer": "yes", "by": "terminal", "description": ""}


def test_client_on_a_callers_node_answers_inside_a_blocking_callback(ros_module_graph, node, client):
    """Goal elicitation passes its own node (spun by a MultiThreadedExecutor) and asks from inside
    a callback of the node's default group: the reply must still get through."""
    import threading

    import rclpy
    from rclpy.executors import MultiThreadedExecutor

    from task_learning.types import ConfirmationRequest
    from task_learning_nodes.clients.oversight_client import OversightClient

    context = client.node.context
    caller = rclpy.create_node("fake_goal_elicitation", context=context)
    asker = OversightClient(caller, name="elicitation", asker="goal_elicitation", service_wait_s=15)
    box: dict = {}

    def ask_once():
        timer.cancel()
        box["answer"] = asker.ask(ConfirmationRequest("in-callback", PAPER_QUESTION, "Mug|2",
                                                      "mug in the dish rack (in-callback)", timeout_s=20))

    timer = caller.create_timer(0.01, ask_once)
    executor = MultiThreadedExecutor(num_threads=2, context=context)
    executor.add_node(caller)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    try:
        found = wait_until(lambda: [r for r in client.pending(fresh=True) if _marked(r, "in-callback")], 30,
                           "the question asked inside the callback reaching the node")
        assert client.submit(found[0].request_id, "yes").accepted
        wait_until(lambda: "answer" in box, 30, "the answer reaching the callback")
        assert box["answer"].answer.value == "yes" and box["answer"].operator == "panel"
    finally:
        executor.shutdown()
        spinner.join(5)
        caller.destroy_node()


def test_malformed_question_is_refused_without_consent_and_node_survives(ros_module_graph, node, client):
    from task_learning_interfaces.msg import GoalCandidate as CandidateMsg
    from task_learning_interfaces.srv import Confirm

    call = Confirm.Request()
    call.request.request_id = "malformed-1"
    call.request.question = "For a mug ...?"
    call.request.candidate = [CandidateMsg(id=1, text="x", source="bogus")]
    reply = client._call(client._confirm, call, 10.0, "malformed")
    assert reply.answer.answer == "timeout" and reply.answer.answered_by == "timeout"
    assert node.poll() is None
    assert client.pending(fresh=True) == []
