"""`kb export`/`kb import` carry the routines (task anticipation's experience): a day the robot
remembered moves with the knowledge base, importing twice does not double it, and a routine with a
task outside the list is refused with the file, key and name (nothing imported)."""
from __future__ import annotations

import pytest
import yaml

from task_learning.apps.cli import main
from task_learning.kb.store import KnowledgeBase


def _remember(db) -> None:
    assert main(["anticipate", "--context", "weekend, no guests", "--record", "Prepare breakfast weekend,Pack bag",
                 "--db", str(db)]) == 0


def _observed(db) -> list[tuple]:
    with KnowledgeBase(db) as kb:
        return [(r.day, r.facts, r.tasks) for r in kb.routines() if r.source == "observed"]


def test_routines_travel_with_export_and_import(tmp_path, capsys):
    src, dst, out = tmp_path / "a.sqlite", tmp_path / "b.sqlite", tmp_path / "kb.yaml"
    _remember(src)
    assert main(["kb", "export", "--db", str(src), "--out", str(out)]) == 0
    exported = yaml.safe_load(out.read_text())["routines"]
    assert {"day": "weekend", "facts": ["no_guests"], "tasks": ["Prepare breakfast weekend", "Pack bag"]}.items() \
        <= exported[-1].items()
    # The destination already has the config's seeded days (seeded at another time): they are not
    # added twice, the remembered day is added once, and a second import adds nothing.
    _remember(dst)
    with KnowledgeBase(dst) as kb:
        before = len(kb.routines())
    capsys.readouterr()
    assert main(["kb", "import", "--db", str(dst), str(out)]) == 0
    assert ", 1 new routines and" in capsys.readouterr().out
    assert main(["kb", "import", "--db", str(dst), str(out)]) == 0
    assert ", 0 new routines and" in capsys.readouterr().out
    with KnowledgeBase(dst) as kb:
        assert len(kb.routines()) == before + 1
    assert _observed(dst) == _observed(src) * 2  # its own remembered day and the imported one


def test_the_validator_counts_imported_routines(tmp_path, capsys):
    """Experience moved with the file: what the source's remembered days support, the
    destination keeps too (as test_anticipation_day's --record test, across an export)."""
    import json

    src, dst, out = tmp_path / "a.sqlite", tmp_path / "b.sqlite", tmp_path / "kb.yaml"
    ask = ["anticipate", "--context", "weekday, leaving for office", "--done",
           "Prepare breakfast weekday,Pack bag,Prepare lunch", "--json", "--db"]
    for _ in range(3):
        assert main(["anticipate", "--context", "weekday, leaving for office", "--db", str(src), "--record",
                     "Prepare breakfast weekday,Pack bag,Prepare lunch,Clean dishes"]) == 0
    assert main(["kb", "export", "--db", str(src), "--out", str(out)]) == 0
    capsys.readouterr()
    assert main([*ask, str(dst)]) == 0  # a new knowledge base: the config's days only
    before = json.loads(capsys.readouterr().out)
    assert main(["kb", "import", "--db", str(dst), str(out)]) == 0
    capsys.readouterr()
    assert main([*ask, str(dst)]) == 0
    after = json.loads(capsys.readouterr().out)
    assert before["proposed"] == after["proposed"] == ["Clean dishes"]
    assert before["kept"] == [] and after["kept"] == ["Clean dishes"]


@pytest.mark.parametrize("change, where", [
    (lambda r: r.update(tasks=["Pack the bag"]), "routines[0].tasks: 'Pack the bag' is not a task of the list"),
    (lambda r: r.update(facts=["on_holiday"]), "routines[0].facts: unknown fact 'on_holiday'"),
    (lambda r: r.update(day="someday"), "routines[0].day: unknown day 'someday'"),
    (lambda r: r.update(tasks=[]), "routines[0]: invalid routine: tasks: a routine needs at least one task"),
    (lambda r: r.update(tasks=[3]), "routines[0]: invalid routine: tasks: expected a list of names"),
    (lambda r: r.pop("day"), "routines[0]: invalid routine: missing key 'day'"),
])
def test_bad_routines_are_refused_and_nothing_is_imported(tmp_path, capsys, change, where):
    routine = {"day": "weekend", "facts": ["no_guests"], "tasks": ["Pack bag"], "source": "observed"}
    change(routine)
    policy = {"task": "tidy kitchen", "object_type": "Mug", "location": "CounterTop",
              "goal_key": "inside(?object, Cupboard)", "successes": 1, "failures": 0,
              "actions": [{"action": "PickupObject", "object_id": "?object"},
                          {"action": "PutObject", "object_id": "Cupboard"}]}
    good = {"day": "weekday", "facts": [], "tasks": ["Prepare coffee"]}
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({"policies": [policy], "routines": [routine, good]}))
    db = tmp_path / "b.sqlite"
    assert main(["kb", "import", "--db", str(db), str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}: {where}" in err and "Traceback" not in err
    with KnowledgeBase(db) as kb:
        assert kb.routines() == [] and kb.policies() == []
