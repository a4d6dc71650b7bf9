"""The operator plugin in real rqt (offscreen): `rqt -s task_learning/OperatorPanel` answers a real
pending question of the oversight node, asked by another process, and a screenshot is saved to
artifacts/rqt_operator_panel.png.

rqt runs in its own venv (PyQt5 from PyPI and the rqt wheels of ../shared/ros2-tools/rqt, made by
scripts/rqt_venv.sh on first use, about a minute, then stamped), so Qt5 and this process's PySide6
never meet. Skipped when the rqt wheels are not there.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ..ros_testing import ROOT, wait_until

PY = sys.executable
ARTIFACTS = ROOT / "artifacts"
QUESTION = "For a mug in the dish rack is the goal that the mug is in the cupboard?"

# Another process asks one question through the Confirm service, as goal elicitation does, and
# prints the answer it got as JSON.
ASKER = textwrap.dedent("""
    import json, sys
    from task_learning.types import ConfirmationRequest, GoalCandidate
    from task_learning_nodes.clients.oversight_client import OversightClient
    candidates = [GoalCandidate("the goal is that the mug is in the cupboard", 0.935, candidate_id=1, viable=True),
                  GoalCandidate("the goal is that the mug is in the dish rack", 0.971, candidate_id=2, viable=True)]
    request = ConfirmationRequest(request_id=sys.argv[1], question=sys.argv[2], object_id="Mug|2",
                                  object_description=f"mug in the dish rack ({sys.argv[1]})", candidates=candidates,
                                  candidate=candidates[0], timeout_s=120.0)
    client = OversightClient(name="goal_elicitation", asker="goal_elicitation", service_wait_s=30)
    answer = client.ask(request)
    print(json.dumps({"answer": answer.answer.value, "by": answer.operator}), flush=True)
    client.close()
""")


@pytest.fixture(scope="module")
def rqt_python():
    """The rqt venv's Python (created on first use, then stamped)."""
    result = subprocess.run(["bash", str(ROOT / "scripts" / "rqt_venv.sh")], capture_output=True, text=True,
                            timeout=1200, env=dict(os.environ, VENV=str(Path(PY).parent.parent)))
    if result.returncode == 3:
        pytest.skip(result.stderr.strip().splitlines()[0])
    assert result.returncode == 0, result.stderr[-3000:]
    return str(Path(result.stdout.strip().splitlines()[-1]).parent / "python")


@pytest.mark.timeout(600)
def test_rqt_loads_the_plugin_and_answers_a_real_question(rqt_python, ros_graph, tmp_path):
    runtime = tmp_path / "xdg_runtime"
    runtime.mkdir(mode=0o700)
    from task_learning.oversight.pairing import operator_credentials

    db = tmp_path / "kb.sqlite"
    ros_graph.start_node("oversight", "-p", f"db_path:={db}", "-p", "remember_answers:=false")
    operator_credentials("rqt", db=db, wait_s=60)  # the token file the plugin reads (the node makes the db)
    asker = ros_graph.start([PY, "-c", ASKER, "rqt-mug", QUESTION], name="asker")
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "rqt_operator_panel.png"
    shot.unlink(missing_ok=True)
    rqt = ros_graph.start([rqt_python, str(ROOT / "test" / "rqt_operator_runner.py"), "rqt-mug", "yes", str(shot), "90"],
                          name="rqt", QT_QPA_PLATFORM="offscreen", XDG_CONFIG_HOME=str(tmp_path / "xdg_config"),
                          XDG_RUNTIME_DIR=str(runtime))
    code = rqt.wait(240)
    lines = [line for line in rqt.stdout.splitlines() if line.startswith("{")]
    assert code == 0 and lines, rqt.output[-4000:]
    report = json.loads(lines[-1])
    assert report["sent"] and report["reason"] == "answered", report
    assert report["binding"].startswith("PyQt5"), report  # rqt's binding, not PySide6
    assert report["question"] == QUESTION and report["candidates"] == 2
    assert not report["status_before"].startswith("Cannot read"), report  # no stale error line
    assert "Traceback" not in rqt.stderr, rqt.stderr[-3000:]
    assert asker.wait(60) == 0, asker.output[-2000:]
    assert json.loads(asker.stdout.strip().splitlines()[-1]) == {"answer": "yes", "by": "rqt"}
    assert report["screenshot"] and shot.stat().st_size > 10_000


@pytest.mark.timeout(300)
def test_operator_rqt_command_opens_rqt_with_the_plugin(rqt_python, ros_graph, tmp_path):
    """`task-learning operator --rqt` (what `make rqt` runs): rqt starts with the plugin, whose ROS
    client follows the oversight node's pending questions; Ctrl-C ends it with exit code 0."""
    ros2 = str(Path(PY).parent / "ros2")
    rqt = ros_graph.start([str(Path(PY).parent / "task-learning"), "operator", "--rqt"], name="operator --rqt",
                          QT_QPA_PLATFORM="offscreen", XDG_CONFIG_HOME=str(tmp_path / "xdg_config"))

    def plugin_subscribed() -> bool:
        nodes = ros_graph.run([ros2, "node", "list", "--no-daemon", "--spin-time", "2"], timeout=60).stdout.split()
        rqt_nodes = [n for n in nodes if n.startswith("/rqt_gui_py_node")]
        return any("/oversight/pending" in ros_graph.run([ros2, "node", "info", n, "--no-daemon", "--spin-time", "2"],
                                                          timeout=60).stdout for n in rqt_nodes)

    wait_until(plugin_subscribed, 180, "rqt's node subscribed to /oversight/pending (the plugin loaded)",
               interval=0.5)
    os.killpg(rqt.pid, signal.SIGINT)  # Ctrl-C in the terminal
    assert rqt.wait(30) == 0, rqt.output[-3000:]
    assert "Traceback" not in rqt.output, rqt.output[-3000:]
