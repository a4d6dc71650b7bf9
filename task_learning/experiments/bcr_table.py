"""The BCR paper's Table 1 (success of 50 trials per task, paper mode) from our runs, each row beside
the offline stand-in's (when the rows are a language model's) and the paper's (GPT-3.5).

Paper mode only: Table 1 is the paper's method as published (`bcr --mode guarded` is this
project's extension, not a row of the paper). Trials are seeded worlds 0..n-1 of the BCR testbed.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from task_learning.bcr.runner import TrialResult, run_trial, summarize
from task_learning.experiments.machine import LoadSampler, describe_load

if TYPE_CHECKING:
    from task_learning.llm.client import LLMClient

TASKS = ("make_coffee", "apple_in_fridge", "wash_mug", "make_toast")
PAPER_TRIALS = 50
PAPER_TABLE_1: Mapping[str, int] = {"make_coffee": 50, "apple_in_fridge": 39, "wash_mug": 39, "make_toast": 49}
OFFLINE_NOTE = (
    "The offline chooser is NOT a language model: a hand-written chooser, written with the paper at hand; "
    "its rows show BCR's mechanics in paper mode, not what GPT-3.5 would do.")
STANDIN_NOTE = (
    "Rows marked (offline stand-in) are NOT a language model: the offline chooser (hand-written, written "
    "with the paper at hand), run in the same command on the same seeded worlds. The paper's rows are "
    "GPT-3.5; a 270M base model is far weaker.")


@dataclass
class TaskRow:
    """One task's trials and what they cost."""

    task: str
    results: list[TrialResult]
    wall_s: float = 0.0
    machine: dict[str, Any] = field(default_factory=dict)
    usage: dict[str, Any] = field(default_factory=dict)  # the client's usage while the task ran

    def to_dict(self) -> dict[str, Any]:
        summary = summarize(self.results)
        return {"task": self.task, "successes": summary["successes"], "trials": summary["trials"],
                "mean_actions": round(summary["mean_actions"], 1), "failures": summary["failures"],
                "llm_requests": summary["llm_requests"],
                "no_model_decision_successes": sum(r.success and r.llm_requests == 0 for r in self.results),
                "wall_s": round(self.wall_s, 1), **({"machine": self.machine} if self.machine else {}),
                **({"usage": self.usage} if self.usage else {})}


def check_tasks(tasks: Sequence[str] | None) -> list[str]:
    """The tasks asked for, in the table's order; ValueError naming the unknown ones."""
    if not tasks:
        return list(TASKS)
    unknown = [t for t in tasks if t not in TASKS]
    if unknown:
        raise ValueError(f"--tasks: unknown task(s) {', '.join(unknown)} (Table 1's: {', '.join(TASKS)})")
    return [t for t in TASKS if t in tasks]


def run_table(client: LLMClient, tasks: Sequence[str], trials: int, *, answers: str = "paper",
              sample_load: bool = False, report: Callable[[str], None] | None = None,
              decoding: str = "free") -> list[TaskRow]:
    """Every task, `trials` seeded trials each, paper mode; `sample_load`: each task's wall time
    with the machine's load and the client's usage (a real model's rows)."""
    rows = []
    for task in tasks:
        before = client.usage_snapshot()
        with LoadSampler() as load:
            results = [run_trial("bcr_kitchen", task, "llm", client, seed, mode="paper", answers=answers,
                                 decoding=decoding)
                       for seed in range(trials)]
        row = TaskRow(task, results, wall_s=load.wall_s)
        if sample_load:
            row.machine = load.summary()
            usage = client.usage_since(before).to_dict()
            row.usage = {k: usage.get(k, 0) for k in ("calls", "cache_hits", "prompt_tokens", "completion_tokens")}
        rows.append(row)
        if report:
            report(f"{task}: {sum(r.success for r in results)}/{trials} in {load.wall_s:.1f} s")
    return rows


def format_table(rows: Sequence[TaskRow], standin: Sequence[TaskRow] | None = None) -> str:
    """Per task: this run's successes, failures and mean actions, the stand-in's, the paper's."""
    lines = [f"{'Task':28s}{'successes':>12s}{'mean actions':>14s}  failures", "-" * 80]
    by_task = {r.task: r for r in standin or ()}
    for row in rows:
        data = row.to_dict()
        fails = ", ".join(f"{k} {v}" for k, v in sorted(data["failures"].items())) or "-"
        lines.append(f"{row.task:28s}{data['successes']:>6d}/{data['trials']:<5d}{data['mean_actions']:>14.1f}  {fails}")
        if row.task in by_task:
            twin = by_task[row.task].to_dict()
            fails = ", ".join(f"{k} {v}" for k, v in sorted(twin["failures"].items())) or "-"
            lines.append(f"{'  (offline stand-in)':28s}{twin['successes']:>6d}/{twin['trials']:<5d}"
                         f"{twin['mean_actions']:>14.1f}  {fails}")
        lines.append(f"{'  (paper, GPT-3.5)':28s}{PAPER_TABLE_1[row.task]:>6d}/{PAPER_TRIALS:<5d}")
    return "\n".join(lines)


def format_trials(rows: Sequence[TaskRow]) -> str:
    """Per task: trials, wall time, requests (to the model and answered by the client's cache:
    a later trial's identical temperature-0 prompt), tokens, load."""
    lines = ["Trials and wall times (1-minute load average min/mean/max while the task ran):"]
    for row in rows:
        data = row.to_dict()
        usage, machine = row.usage, row.machine
        cost = (f", {data['llm_requests']:,} LLM requests ({usage['calls']:,} to the model, "
                f"{usage['cache_hits']:,} answered by an identical earlier prompt), {usage['prompt_tokens']:,} prompt "
                f"and {usage['completion_tokens']:,} generated tokens" if usage else "")
        load = f", {describe_load(machine)}" if machine else ""
        spare = data["no_model_decision_successes"]
        lines.append(f"  {row.task}: {data['trials']} trials, {data['wall_s']:,} s wall{cost}{load}"
                     + (f"; {spare} success(es) needed no model decision (one candidate at every step)" if spare else ""))
    return "\n".join(lines)
