"""`task-learning faults --category web`: the hostile web cases against a real `run --operator
web` are all handled (each probe's own deadline bounds it; floods reach only 127.0.0.1)."""
from __future__ import annotations

from task_learning.apps.faults import web_probes
from task_learning.apps.faults.base import ProbeContext


def test_every_hostile_web_case_is_handled(tmp_path) -> None:
    results = web_probes.probes()[0].run(ProbeContext(workdir=tmp_path, fast=True))
    assert isinstance(results, list)
    names = {r.name for r in results}
    assert {"wrong-code flood from another client", "connection flood (never a request)", "slow headers",
            "slow body", "unauthenticated body of 300 MB (declared)"} <= names
    assert all(r.handled for r in results), [(r.name, r.detail) for r in results if not r.handled]
