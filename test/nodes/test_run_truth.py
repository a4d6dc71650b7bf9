"""A MuJoCo run's truth.jsonl: a line per change, the simulator's and the belief's side by side."""
from __future__ import annotations

import json

from task_learning_nodes.clients.run_truth import TruthLog


def _snapshot(t, fridge_closed, cheese_in, held=()):
    return {"sim_time_s": t, "held": list(held),
            "objects": {"Cheese|1": {"in": cheese_in}},
            "receptacles": {"Fridge|1": {"closed": fridge_closed}, "CounterTop|1": {}}}


def test_only_changes_are_written_each_with_its_source_and_time(tmp_path):
    log = TruthLog(tmp_path / "truth.jsonl")
    log.truth(_snapshot(1.0, True, "Bag|3"))
    log.truth(_snapshot(1.25, True, "Bag|3"))  # nothing changed: no line
    log.belief(1.3, {"Fridge|1": None}, {"Cheese|1": "Bag|3"}, [])
    log.truth(_snapshot(9.0, False, "Bag|3"))
    log.belief(9.5, {"Fridge|1": True}, {"Cheese|1": "Bag|3"}, [])
    log.truth(_snapshot(20.0, True, "", held=["Cheese|1"]))  # the door swung shut; the belief still says open
    log.close()
    log.truth(_snapshot(30.0, False, "Fridge|1"))  # after close: nothing more

    lines = [json.loads(line) for line in (tmp_path / "truth.jsonl").read_text().splitlines()]
    assert [(r["t"], r["source"], r["what"], r["now"]) for r in lines] == [
        (1.0, "sim", "Fridge|1 open", False), (1.0, "sim", "Cheese|1 in", "Bag|3"), (1.0, "sim", "held", []),
        (1.3, "belief", "Fridge|1 open", None), (1.3, "belief", "Cheese|1 in", "Bag|3"), (1.3, "belief", "held", []),
        (9.0, "sim", "Fridge|1 open", True), (9.5, "belief", "Fridge|1 open", True),
        (20.0, "sim", "Fridge|1 open", False), (20.0, "sim", "Cheese|1 in", ""), (20.0, "sim", "held", ["Cheese|1"])]
    assert log.lines == len(lines)
