"""`task-learning experiment --paper anticipation`: the task-anticipation paper's agents on the days of the traces.

Every day (the traces' three routines, then two of ours, reported apart) is run with the human
alone, with Base8 (the LLM chooses each action, at most 3 corrections per trial) and with the
proposed agent (anticipation, validation, merge, planning), the latter also with oversight (each
anticipated task proposed to a simulated operator who knows the true routine; only confirmed ones
are worked on). Measured: precision and recall of the anticipated (kept) tasks against the true
remaining routine (at the first anticipation of the day, and over all of the day's), the same
for the LLM's raw answer, team steps to finish the routine, LLM calls, tokens and corrections.

The seed gives no table of results (its text is an appendix of traces), so there is nothing to
set these figures beside."""
from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from task_learning.anticipation.config import load_anticipation_config
from task_learning.anticipation.experience import Experience, seed_experience
from task_learning.anticipation.household import load_household
from task_learning.anticipation.proposals import RoutineOperator
from task_learning.anticipation.simulation import run_day
from task_learning.experiments.machine import LoadSampler, describe_load
from task_learning.kb.store import KnowledgeBase

CONDITIONS = (("human alone", "none", False), ("Base8", "base8", False), ("proposed", "proposed", False),
              ("proposed+O", "proposed", True))
NO_TABLE = ("The task-anticipation paper gives no table of results (only execution traces), so these figures "
            "have no paper row beside them.")
OFFLINE_NOTE = ("The offline model is not a language model: hand-written household habits, written after "
                "reading the paper's traces and not adjusted to these days or the validator. Its figures show "
                "the pipeline (anticipation, validation, oversight, Base8's corrections) working and what it "
                "costs, not how an LLM anticipates a routine.")


def run_experiment(llm: str = "offline", seed: int = 0, report: Callable[[str], None] | None = None,
                   days: Sequence[str] | None = None, wording: str = "own",
                   llm_options: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """Every condition on every day of config/anticipation/household.yaml (or the named days), in
    the project's prompt wording or the traces' own (`wording`). `llm_options`: make_client options
    for every day's client (a base URL, a model, a shared local server)."""
    from task_learning.llm.client import make_client

    cfg = load_anticipation_config(wording=wording)
    spec = load_household(tasks=cfg.tasks)
    rows = []
    with KnowledgeBase(":memory:") as kb:
        seed_experience(kb, cfg)
        experience = Experience.from_kb(kb)
        for day in spec.days:
            if days is not None and day["name"] not in days:
                continue
            for label, agent, oversight in CONDITIONS:
                if report:
                    report(f"{day['name']}: {label}")
                client = make_client(llm, **dict(llm_options or {})) if agent != "none" else None
                operator = RoutineOperator(day["tasks"]) if oversight else None
                try:
                    with LoadSampler() as load:
                        result = run_day(spec, cfg, experience, day, agent=agent, client=client,
                                         operator=operator, kb=kb, seed=seed)
                finally:
                    if client is not None:
                        client.close()
                row = result.to_dict()
                row.update(condition=label, trials=1, wall_s=round(load.wall_s, 1), machine=load.summary())
                rows.append(row)
    return rows


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}"


STANDIN_LABEL = "(offline stand-in)"


def standin_by_row(standin: Sequence[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r["day"], r["condition"]): r for r in standin}


def format_table(rows: list[dict[str, Any]], llm: str = "offline",
                 standin: Sequence[dict[str, Any]] | None = None) -> str:
    """Each condition's row, then (beside a language model) the offline stand-in's row for the same
    day and condition, run in the same command; then each row's trials, wall time and load."""
    head = (f"{'day':<14}{'condition':<20}{'steps':>6}{'P1 %':>6}{'R1 %':>6}{'P %':>6}{'R %':>6}"
            f"{'LLM P %':>8}{'LLM R %':>8}{'calls':>7}{'tokens':>8}{'corr':>6}{'over':>6}{'asked':>6}{'yes':>5}")
    lines = [f"Task anticipation, LLM: {llm}", head]
    twins = standin_by_row(standin or ())
    for source, title in (("trace", "days of the traces"), ("ours", "our days (held out)")):
        part = [r for r in rows if r["source"] == source]
        if not part:
            continue
        lines.append(f"-- {title}")
        for r in part:
            lines.append(_line(r["day"], r["condition"], r))
            twin = twins.get((r["day"], r["condition"]))
            if twin is not None and r["condition"] != "human alone":
                lines.append(_line("", STANDIN_LABEL, twin))
    lines.append("P1/R1: the day's first anticipation (kept tasks vs the true routine); P/R: all of the day's "
                 "anticipations; LLM P/R: the LLM's answer before the validator; steps: team steps to finish "
                 "the routine (! = not finished in 200); corr: Base8 corrections (at most 3 per trial); "
                 "over: infeasible Base8 answers after the 3 corrections (not executed: the agent waits); asked/yes: proposals to the operator and its confirmations.")
    if any("wall_s" in r for r in rows):
        lines.append("Trials and wall times (1-minute load average min/mean/max while the row ran):")
        for r in rows:
            lines.append(f"  {r['day']} {r['condition']}: {r.get('trials', 1)} trial, {r.get('wall_s', 0):,.1f} s wall, "
                         f"{r['llm_calls']} LLM calls, {r['tokens']:,} tokens, {describe_load(r.get('machine') or {})}")
        if standin:
            total = sum(float(r.get("wall_s") or 0) for r in standin)
            lines.append(f"  offline stand-in (not a language model), every row: {total:.1f} s wall in all")
    return "\n".join(lines)


def _line(day: str, condition: str, r: dict[str, Any]) -> str:
    asked = len(r["asked"]) if r["condition"].endswith("+O") else "-"
    yes = len(r["confirmed"]) if r["condition"].endswith("+O") else "-"
    steps = str(r["steps"]) + ("" if r["finished"] else "!")
    return (f"{day:<14}{condition:<20}{steps:>6}{_pct(r['first_precision']):>6}"
            f"{_pct(r['first_recall']):>6}{_pct(r['precision']):>6}{_pct(r['recall']):>6}"
            f"{_pct(r['llm_precision']):>8}{_pct(r['llm_recall']):>8}{r['llm_calls']:>7}{r['tokens']:>8}"
            f"{r['corrections']:>6}{r['refused_after_limit']:>6}{asked!s:>6}{yes!s:>5}")
