"""Run several STARS conditions on one scene, each on a fresh knowledge base, then Trial #2 on the
knowledge base of the last oversight condition, as in the STARS paper's experiments. Each run removes its
own files in `workdir` first, so running it again in the same folder prints the same table."""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from task_learning.kb import remove_knowledge_base
from task_learning.planning.session import RunSpec, run_in_process

Reporter = Callable[[str], None]


def run_conditions(scene: str, conditions: Sequence[str], *, llm: str = "offline",
                   workdir: str | Path | None = None, trial2: bool = True, seed: int | None = None,
                   report: Reporter | None = None, llm_options: Mapping[str, Any] | None = None
                   ) -> list[tuple[str, dict[str, Any]]]:
    """`llm_options`: make_client options for every run (a base URL, a model, the local server
    that the command started once for all runs)."""
    workdir = Path(workdir or tempfile.mkdtemp(prefix="task_learning_exp_"))
    workdir.mkdir(parents=True, exist_ok=True)
    rows: list[tuple[str, dict[str, Any]]] = []
    last_db: Path | None = None
    for condition in conditions:
        db = workdir / f"{scene}_{condition.replace('+', 'plus').replace('*', 'star')}.sqlite"
        remove_knowledge_base(db)  # with its WAL: a rerun in the same folder starts from nothing
        operator = "simulated" if condition.endswith("+O") else "none"
        metrics, _ = run_in_process(RunSpec(scene=scene, condition=condition, llm=llm,
                                            operator=operator, db=db, seed=seed, llm_options=dict(llm_options or {})))
        rows.append((condition, metrics.to_dict()))
        if report:
            report(f"{scene} {condition}: {metrics.completion:.1f}% in {len(metrics.per_object)} objects")
        if condition.endswith("+O"):
            last_db = db
    if trial2 and last_db is not None:
        metrics, _ = run_in_process(RunSpec(scene=scene, condition=conditions[-1], llm=llm,
                                            operator="simulated", db=last_db, seed=seed,
                                            llm_options=dict(llm_options or {})))
        rows.append(("Trial #2", metrics.to_dict()))
        if report:
            report(f"{scene} Trial #2: {metrics.completion:.1f}%, {metrics.usage.calls} LLM calls")
    return rows
