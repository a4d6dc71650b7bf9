"""Run several STARS conditions on one scene, each on a fresh knowledge base, then Trial #2 on the
knowledge base of the last oversight condition, as in the STARS paper's experiments. Each run removes its
own files in `workdir` first, so running it again in the same folder prints the same table.

Every row carries its wall time, the machine's load while it ran and its trial count (one trial
per condition, as in the paper). With `shared` (llm/shared_answers.py) the runs of one call share
a real model's temperature-0 answers: a prompt one condition asked is not asked again by the next;
each row says how many of its calls were served that way."""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from task_learning.experiments.machine import LoadSampler
from task_learning.kb import remove_knowledge_base
from task_learning.llm.shared_answers import SharedAnswers, SharingProvider
from task_learning.planning.session import RunSpec, run_in_process

Reporter = Callable[[str], None]


def run_conditions(scene: str, conditions: Sequence[str], *, llm: str = "offline",
                   workdir: str | Path | None = None, trial2: bool = True, seed: int | None = None,
                   report: Reporter | None = None, llm_options: Mapping[str, Any] | None = None,
                   shared: SharedAnswers | None = None, decoding: str = "free",
                   label: str = "") -> list[tuple[str, dict[str, Any]]]:
    """`llm_options`: make_client options for every run (a base URL, a model, the local server
    that the command started once for all runs). `decoding`: free | grounded (llm/constraints.py);
    `label` is added to each row's condition ("STARS grounded")."""
    workdir = Path(workdir or tempfile.mkdtemp(prefix="task_learning_exp_"))
    workdir.mkdir(parents=True, exist_ok=True)
    rows: list[tuple[str, dict[str, Any]]] = []
    last_db: Path | None = None
    options = dict(llm_options or {})
    for condition in conditions:
        db = workdir / f"{scene}_{condition.replace('+', 'plus').replace('*', 'star')}{'_' + decoding if label else ''}.sqlite"
        remove_knowledge_base(db)  # with its WAL: a rerun in the same folder starts from nothing
        operator = "simulated" if condition.endswith("+O") else "none"
        row = _trial(RunSpec(scene=scene, condition=condition, llm=llm, operator=operator, db=db, seed=seed,
                             llm_options=options, decoding=decoding), shared)
        rows.append((f"{condition}{label}", row))
        if report:
            report(f"{scene} {condition}{label}: {row['completion']:.1f}% in {len(row['objects'])} objects, "
                   f"{row['wall_s']:.0f} s")
        if condition.endswith("+O"):
            last_db = db
    if trial2 and last_db is not None:
        row = _trial(RunSpec(scene=scene, condition=conditions[-1], llm=llm, operator="simulated", db=last_db,
                             seed=seed, llm_options=options, decoding=decoding), shared)
        rows.append((f"Trial #2{label}", row))
        if report:
            report(f"{scene} Trial #2: {row['completion']:.1f}%, {row['usage']['calls']} LLM calls")
    return rows


def _trial(spec: RunSpec, shared: SharedAnswers | None) -> dict[str, Any]:
    """One trial: its metrics, wall time, the load it ran under and (sharing) where its calls went."""
    client = sharing = None
    if shared is not None:
        from task_learning.llm.client import make_client

        client = make_client(spec.llm, **spec.llm_options)
        sharing = SharingProvider(client.provider, shared)
        client.use_provider(sharing)
    try:
        with LoadSampler() as load:
            metrics, _ = run_in_process(spec, client=client)
    finally:
        if client is not None:
            client.close()
    row = metrics.to_dict()
    row.update(trials=1, wall_s=round(load.wall_s, 1), machine=load.summary())
    if sharing is not None:
        row.update(calls_shared=sharing.served, calls_to_model=sharing.asked)
    return row
