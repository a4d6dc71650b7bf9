"""`task-learning analyze` as a user runs it (subprocess): the mug example, JSON shape, errors."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.slow  # every test runs the CLI in a subprocess

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = Path(__file__).parents[1] / "data" / "grounding" / "stars_mug_example.yaml"


def run_cli(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    entry = "import sys; from task_learning.apps.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", entry, *args], input=stdin,
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=60)


def mug_expectations() -> dict[str, str]:
    data = yaml.safe_load(REFERENCE.read_text())["analysis"]
    verdicts = {t: "viable" for t in data["viable"]}
    verdicts.update({t: "uninterpretable" for t in data["uninterpretable"]})
    for kind in ("unknown_word", "ungrounded_object", "affordance_mismatch"):
        verdicts.update({d["text"]: kind for d in data[kind]})
    return verdicts


def test_mug_example():
    """All 13 responses in one run (sentences on stdin, one JSON line each)."""
    verdicts = mug_expectations()
    assert len(verdicts) == 13
    result = run_cli("analyze", "--scene", "tidy_kitchen", "--object", "mug in dish rack", "--json", "-",
                     stdin="".join(text + "\n" for text in verdicts))
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [d["sentence"] for d in lines] == list(verdicts)
    feedback = {}
    for data in lines:
        kind = verdicts[data["sentence"]]
        assert set(data) >= {"viable", "mismatches", "literals"}
        assert data["object"] == "Mug|2"
        if kind == "viable":
            assert data["viable"] is True and data["mismatches"] == []
            assert data["literals"][0]["args"][0] == "Mug|2"
        else:
            assert data["viable"] is False and data["literals"] == []
            assert {m["kind"] for m in data["mismatches"]} == {kind}
            assert all(set(m) >= {"kind", "detail", "feedback"} for m in data["mismatches"])
            feedback[data["sentence"]] = data["mismatches"][0]
    g = "the goal is that the mug is in the "
    assert feedback[g + "cabinet and the cabinet is closed"]["feedback"] == "No. Cannot see a cabinet."
    assert feedback[g + "dishwasher and the dishwasher is started"]["feedback"] == \
        "No. Unknown word started."
    assert feedback[g + "dish rack and the dish rack is in the cupboard"]["feedback"] == \
        "No. Rack is not grabbable."
    assert feedback[g + "dish rack and the dish rack is empty"]["detail"] == \
        "rack cannot have property empty"


def test_human_output():
    ok = run_cli("analyze", "--scene", "organize_office", "--object", "folder",
                 "the goal is that the folder is in the filing cabinet and the filing cabinet is closed")
    assert ok.returncode == 0
    assert ok.stdout.startswith("viable: inside(Folder|1, FilingCabinet|1), false:open(FilingCabinet|1)")
    bad = run_cli("analyze", "--scene", "store_groceries", "--object", "eggs",
                  "the goal is that the eggs are in the cabinet")
    assert bad.returncode == 0
    assert "ungrounded_object" in bad.stdout and "feedback: No. Cannot see a cabinet." in bad.stdout


@pytest.mark.parametrize("args,message", [
    (("--scene", "no_such_scene", "x"), "no_such_scene"),
    (("--scene", "tidy_kitchen", "--object", "spaceship", "x"), "spaceship"),
    (("--scene", "tidy_kitchen", "--object", "mug", "x"), "mug"),  # two mugs: ambiguous
])
def test_errors_are_one_line_without_traceback(args, message):
    result = run_cli("analyze", *args)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert message in result.stderr


def test_bad_sentences_get_a_verdict():
    empty = run_cli("analyze", "--scene", "tidy_kitchen", "--json", "")
    assert empty.returncode == 0, empty.stderr
    assert json.loads(empty.stdout)["mismatches"][0]["kind"] == "uninterpretable"
    texts = ["x" * 10240, "caf\u00e9 \u2603", "the goal\x07 is", "\x1b[2J"]
    result = run_cli("analyze", "--scene", "tidy_kitchen", "--json", "-", stdin="\n".join(texts) + "\n")
    assert result.returncode == 0, result.stderr
    kinds = [json.loads(line)["mismatches"][0]["kind"] for line in result.stdout.splitlines()]
    assert kinds == ["uninterpretable", "unknown_word", "uninterpretable", "uninterpretable"]
