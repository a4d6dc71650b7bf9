"""The LLM-State paper's Tables I and II (LLM-State) from our runs, each row beside the paper's figures.

Table I: success rate (SR, successes/runs) and average steps (AS, over all runs; a failed run
counts the steps it took, i.e. its cap when it hit the cap) of InnerMonologue-W, ProgPrompt,
w/o States and Ours on the 15 tasks; Table II: the mean SR of simple and hard tasks for w/o States,
w/o Summary, w/o Objects and Ours. By default five runs per task, one per map, as the paper's
x/5 suggests; `runs` changes that (run i on map i mod 5, so ten runs give each map two), which
matters for a real model at a temperature above 0 (the paper does not state its temperature).
Only the methods asked for are run and shown. Table III (the real robot) is not reproduced.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from task_learning.experiments.machine import LoadSampler, describe_load
from task_learning.experiments.table import legend_above, run_label
from task_learning.inputs.files import save_figure
from task_learning.llm_state.agent import Completer, TrialResult, run_trial
from task_learning.llm_state.household import Household

W = 58  # width of the task column
TABLE_I_METHODS = ("inner_monologue", "progprompt", "no_states", "ours")
TABLE_II_METHODS = ("no_states", "no_summary", "no_objects", "ours")
ALL_METHODS = ("inner_monologue", "progprompt", "no_states", "no_summary", "no_objects", "ours")  # table order
PAPER_RUNS = 5  # runs per task in the paper's tables (SR x/5)
LABELS = {"inner_monologue": "InnerM-W", "progprompt": "ProgPrompt", "no_states": "w/o States",
          "no_summary": "w/o Summary", "no_objects": "w/o Objects", "ours": "Ours"}

# Table I as printed: task -> method -> (successes of 5, average steps).
PAPER_TABLE_I: Mapping[str, Mapping[str, tuple[int, float]]] = {
    "switch_off_bedroom_light": {"inner_monologue": (5, 4.0), "progprompt": (5, 7.0), "no_states": (5, 6.2), "ours": (5, 6.2)},
    "open_fridge": {"inner_monologue": (5, 4.2), "progprompt": (5, 3.0), "no_states": (5, 4.0), "ours": (5, 4.4)},
    "book_on_desk": {"inner_monologue": (3, 19.4), "progprompt": (5, 5.2), "no_states": (5, 4.8), "ours": (5, 5.0)},
    "switch_off_all_lights": {"inner_monologue": (1, 29.6), "progprompt": (5, 15.0), "no_states": (3, 24.4), "ours": (5, 18.8)},
    "use_computer": {"inner_monologue": (4, 8.8), "progprompt": (4, 9.4), "no_states": (4, 8.4), "ours": (4, 8.4)},
    "magazine_on_bed": {"inner_monologue": (4, 13.4), "progprompt": (5, 15.0), "no_states": (3, 16.6), "ours": (4, 14.8)},
    "make_toast": {"inner_monologue": (4, 13.4), "progprompt": (5, 12.4), "no_states": (5, 8.0), "ours": (5, 8.6)},
    "heat_milk": {"inner_monologue": (0, 30.0), "progprompt": (0, 30.0), "no_states": (4, 14.6), "ours": (4, 17.6)},
    "toothbrush_facecream_cabinet": {"inner_monologue": (0, 60.0), "progprompt": (0, 60.0), "no_states": (0, 60.0), "ours": (4, 36.8)},
    "empty_kitchen_table": {"inner_monologue": (0, 150.0), "progprompt": (0, 150.0), "no_states": (0, 150.0), "ours": (2, 131.0)},
    "wineglass_juice_desk": {"inner_monologue": (0, 50.0), "progprompt": (0, 50.0), "no_states": (0, 50.0), "ours": (3, 41.4)},
    "three_toasts": {"inner_monologue": (0, 60.0), "progprompt": (0, 60.0), "no_states": (2, 55.8), "ours": (5, 40.0)},
    "six_toasts": {"inner_monologue": (0, 120.0), "progprompt": (0, 120.0), "no_states": (0, 120.0), "ours": (4, 92.6)},
    "two_toasts_ungraspable": {"inner_monologue": (0, 100.0), "progprompt": (0, 100.0), "no_states": (0, 100.0), "ours": (4, 66.8)},
    "take_away_three": {"inner_monologue": (0, 100.0), "progprompt": (0, 100.0), "no_states": (1, 86.8), "ours": (5, 38.2)},
}
# Printed means (%): Table I's Mean rows and Table II (8.71 and 64.86 are as printed, though 3/35
# is 8.57 and 64.86 is no k/35).
PAPER_MEANS: Mapping[str, Mapping[str, float]] = {
    "simple": {"inner_monologue": 65.0, "progprompt": 85.0, "no_states": 85.0, "no_summary": 92.5,
               "no_objects": 95.0, "ours": 92.5},
    "hard": {"inner_monologue": 0.0, "progprompt": 0.0, "no_states": 8.71, "no_summary": 14.29,
             "no_objects": 64.86, "ours": 77.14},
}

OFFLINE_NOTE = (
    "The offline model is NOT a language model: it is a hand-written planner with household rules "
    "of thumb, written by us with the paper's task list at hand (its goal reader knows Table I's "
    "phrasings) but never tuned against Table I or II. The household, its five maps and the task "
    "adaptations are ours, not VirtualHome. Differences between methods here come from what each "
    "prompt shows and from one fixed design choice of the stand-in: its policy tracks by itself only "
    "the last 10 actions of the history it is shown, while the estimator replays the whole history. "
    "So the rows show the loop, the state, the parser and the bookkeeping working, and how a "
    "tracker with that limit fares; they are not evidence that a state helps a language model.")

STANDIN_NOTE = (
    "Rows marked (offline stand-in) are NOT a language model: the offline model's runs of the same "
    "tasks, maps and methods, in the same command. " + OFFLINE_NOTE + " The paper's rows are GPT-4 "
    "(gpt-4-0613) in VirtualHome; a 270M base model is far weaker.")


@dataclass
class TableRun:
    """Every run: (task, method) -> the results on each map, in map order."""

    runs: dict[tuple[str, str], list[TrialResult]] = field(default_factory=dict)
    maps: tuple[str, ...] = ()
    runs_per_task: int = PAPER_RUNS
    temperature: float = 0.0
    wording: str = "own"
    answers: str = "paper"
    tasks: tuple[str, ...] = ()  # the tasks run, in the tables' order (default: all of the paper's)
    machine: dict[str, dict[str, Any]] = field(default_factory=dict)  # method -> wall time and load

    def task_list(self, household: Household) -> list[str]:
        return list(self.tasks) if self.tasks else list(household.paper_tasks)

    @property
    def methods(self) -> list[str]:
        """The methods run, in the tables' order."""
        ran = {m for (_t, m) in self.runs}
        return [m for m in ALL_METHODS if m in ran]

    def cell(self, task: str, method: str) -> tuple[int, float, int]:
        results = self.runs.get((task, method), [])
        if not results:
            return 0, 0.0, 0
        return sum(r.success for r in results), sum(r.steps for r in results) / len(results), len(results)

    def mean_sr(self, household: Household, level: str, method: str) -> float:
        """Over the tasks run (all of the paper's by default)."""
        tasks = [t for t in self.task_list(household) if household.tasks[t].level == level]
        rates = [self.cell(t, method)[0] / max(1, self.cell(t, method)[2]) for t in tasks]
        return 100.0 * sum(rates) / len(rates) if rates else 0.0

    def to_dict(self, household: Household) -> dict[str, Any]:
        rows = []
        for task in self.task_list(household):
            spec = household.tasks[task]
            row: dict[str, Any] = {"task": task, "goal": spec.goal, "level": spec.level, "cap": spec.cap}
            for method in {m for (_t, m) in self.runs}:
                wins, avg, n = self.cell(task, method)
                row[method] = {"sr": f"{wins}/{n}", "as": round(avg, 1),
                               "llm_calls": sum(r.llm_calls for r in self.runs[(task, method)]),
                               "tokens": sum(r.tokens for r in self.runs[(task, method)]),
                               "dropped_calls": sum(r.dropped_calls for r in self.runs[(task, method)])}
                paper = PAPER_TABLE_I.get(task, {}).get(method)
                if paper:
                    row[method]["paper"] = {"sr": f"{paper[0]}/5", "as": paper[1]}
            rows.append(row)
        means = {level: {m: {"ours": round(self.mean_sr(household, level, m), 2),
                             "paper": PAPER_MEANS[level].get(m)} for m in self.methods}
                 for level in ("simple", "hard")}
        return {"maps": list(self.maps), "runs_per_task": self.runs_per_task, "temperature": self.temperature,
                "prompts": self.wording, "answers": self.answers, "tasks": self.task_list(household),
                "methods": self.methods, "table_i": rows, "means": means,
                **({"machine": self.machine} if self.machine else {})}

    def trials(self, method: str) -> dict[str, Any]:
        """What a method's runs cost: runs, wall time, LLM calls and tokens (and the load, when
        sampled)."""
        results = [r for (_t, m), rs in self.runs.items() if m == method for r in rs]
        return {"runs": len(results), "wall_s": round(sum(r.runtime_s for r in results), 1),
                "llm_calls": sum(r.llm_calls for r in results), "tokens": sum(r.tokens for r in results),
                "end_reasons": dict(sorted(Counter(r.end_reason.split(":")[0] for r in results).items())),
                **self.machine.get(method, {})}


def run_tables(household: Household, client: Completer, methods: Sequence[str], *,
               maps: Sequence[str] | None = None, runs: int | None = None, temperature: float = 0.0,
               wording: str = "own", report: Callable[[str], None] | None = None,
               tasks: Sequence[str] | None = None, answers: str = "paper", sample_load: bool = False,
               decoding: str = "free") -> TableRun:
    """Every method on every task of the tables (or `tasks`, a subset, in the tables' order),
    `runs` runs each (default: one per map), run i on map i mod len(maps). `sample_load`: each
    method's wall time with the machine's load while it ran (a real model's rows)."""
    maps = tuple(maps or household.paper_maps)
    runs = len(maps) if runs is None else runs
    if runs < 1:
        raise ValueError(f"runs must be >= 1, got {runs}")
    chosen = tuple(t for t in household.paper_tasks if not tasks or t in tasks)
    table = TableRun(maps=maps, runs_per_task=runs, temperature=temperature, wording=wording, answers=answers,
                     tasks=chosen if tasks else ())
    for method in methods:
        with LoadSampler() as load:
            for task in chosen:
                table.runs[(task, method)] = [run_trial(task, maps[i % len(maps)], method, client, household=household,
                                                        trial=i, temperature=temperature, wording=wording,
                                                        answers=answers, decoding=decoding)
                                              for i in range(runs)]
        if sample_load:
            table.machine[method] = {"method_wall_s": round(load.wall_s, 1), **load.summary()}
        if report:
            wins = sum(r.success for (t, m), rs in table.runs.items() if m == method for r in rs)
            report(f"{LABELS[method]}: {wins}/{len(chosen) * runs} runs reached the goal")
    return table


def check_subset(household: Household, tasks: Sequence[str] | None, maps: Sequence[str] | None) -> None:
    """ValueError naming what is not one of the tables' tasks or maps."""
    unknown = [t for t in tasks or () if t not in household.paper_tasks]
    if unknown:
        raise ValueError(f"--tasks: unknown task(s) {', '.join(unknown)} (Table I's: {', '.join(household.paper_tasks)})")
    bad = [m for m in maps or () if m not in household.maps]
    if bad:
        raise ValueError(f"--maps: unknown map(s) {', '.join(bad)} (known: {', '.join(household.maps)})")


def _sr_as(wins: int, avg: float, n: int) -> str:
    return f"{wins}/{n} {avg:5.1f}"


def format_table_i(household: Household, table: TableRun, standin: TableRun | None = None) -> str:
    """Each task's row, then the offline stand-in's (when given: a real model's table), then the
    paper's. The means are over the tasks run; the paper's over all of its tasks."""
    methods = [m for m in TABLE_I_METHODS if m in table.methods]
    head = f"{'Task':{W}s}" + "".join(f"{LABELS[m]:>14s}" for m in methods)
    paper_runs = "" if table.runs_per_task == PAPER_RUNS else f" (the paper's: x/{PAPER_RUNS})"
    lines = [f"TABLE I (SR x/{table.runs_per_task}, AS average steps): this run, then (paper){paper_runs}", head,
             "-" * len(head)]
    run_tasks = table.task_list(household)
    for level in ("simple", "hard"):
        level_tasks = [t for t in run_tasks if household.tasks[t].level == level]
        if not level_tasks:
            continue
        lines.append(level.capitalize())
        for task in level_tasks:
            spec = household.tasks[task]
            mark = "*" if spec.special else ""
            label = ("  " + spec.goal)[:W - len(mark)] + mark
            lines.append(f"{label:{W}s}" + "".join(f"{_sr_as(*table.cell(task, m)):>14s}" for m in methods))
            if standin is not None:
                lines.append(f"{'    (offline stand-in)':{W}s}"
                             + "".join(f"{_sr_as(*standin.cell(task, m)):>14s}" for m in methods))
            paper = PAPER_TABLE_I[task]
            lines.append(f"{'    (paper)':{W}s}" + "".join(f"{_sr_as(paper[m][0], paper[m][1], PAPER_RUNS):>14s}"
                                                          for m in methods))
        subset = " (of these tasks)" if table.tasks else ""
        lines.append(f"{'  Mean' + subset:{W}s}" + "".join(f"{table.mean_sr(household, level, m):13.2f}%"
                                                           for m in methods))
        if standin is not None:
            lines.append(f"{'    (offline stand-in)':{W}s}"
                         + "".join(f"{standin.mean_sr(household, level, m):13.2f}%" for m in methods))
        lines.append(f"{'    (paper, all its ' + level + ' tasks)' if subset else '    (paper)':{W}s}"
                     + "".join(f"{PAPER_MEANS[level][m]:13.2f}%" for m in methods))
    return "\n".join(lines)


def format_trials(table: TableRun, standin: TableRun | None = None) -> str:
    """Per method: runs, wall time, LLM calls, tokens, how the runs ended, and the load."""
    lines = ["Runs and wall times (1-minute load average min/mean/max while the method ran):"]
    for method in table.methods:
        t = table.trials(method)
        load = f", {describe_load(t)}" if "cores" in t else ""
        ends = ", ".join(f"{k} {v}" for k, v in t["end_reasons"].items())
        lines.append(f"  {LABELS[method]}: {t['runs']} run(s), {t['wall_s']:,} s wall, {t['llm_calls']:,} LLM calls, "
                     f"{t['tokens']:,} tokens; ended by: {ends}{load}")
    if standin is not None:
        wall = sum(standin.trials(m)["wall_s"] for m in standin.methods)
        lines.append(f"  offline stand-in, every method: {wall:,} s wall in all")
    return "\n".join(lines)


def format_table_ii(household: Household, table: TableRun, standin: TableRun | None = None) -> str:
    """Mean SR per level (of the tasks run; a level with none of them is left out), the offline
    stand-in's when given, then the paper's."""
    methods = [m for m in TABLE_II_METHODS if m in table.methods]
    width = 22 if standin is not None else 12
    head = f"{'Task':{width}s}" + "".join(f"{LABELS[m]:>14s}" for m in methods)
    lines = ["TABLE II (ablation, mean SR): this run, then (paper)", head, "-" * len(head)]
    run_tasks = table.task_list(household)
    for level in ("simple", "hard"):
        if not any(household.tasks[t].level == level for t in run_tasks):
            continue
        lines.append(f"{level.capitalize():{width}s}" + "".join(f"{table.mean_sr(household, level, m):13.2f}%"
                                                                for m in methods))
        if standin is not None:
            lines.append(f"{'  (offline stand-in)':{width}s}"
                         + "".join(f"{standin.mean_sr(household, level, m):13.2f}%" for m in methods))
        lines.append(f"{'  (paper)':{width}s}" + "".join(f"{PAPER_MEANS[level][m]:13.2f}%" for m in methods))
    return "\n".join(lines)


def plot_tables(household: Household, table: TableRun, path: str | Path, llm: str = "offline") -> Path:
    """Mean SR on simple and hard tasks per method, this run beside the paper's."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    methods = table.methods
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.6))
    x = range(len(methods))
    for ax, level in zip(axes, ("simple", "hard")):
        ours = [table.mean_sr(household, level, m) for m in methods]
        paper = [PAPER_MEANS[level].get(m, 0.0) for m in methods]
        ax.bar([i - 0.2 for i in x], ours, width=0.4, label=run_label(llm))
        ax.bar([i + 0.2 for i in x], paper, width=0.4, label="paper (GPT-4, VirtualHome)")
        ax.set_xticks(list(x))
        ax.set_xticklabels([LABELS[m] for m in methods], rotation=30, ha="right", fontsize=8)
        ax.set_ylim(0, 105)
        ax.set_title(f"{level.capitalize()} tasks: mean success rate (%)")
    fig.suptitle("LLM-State: the paper's Tables I and II")
    legend_above(fig, axes[0])
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    save_figure(fig, out, dpi=110)
    plt.close(fig)
    return out


HELDOUT_METHODS = ("no_states", "ours")


def run_heldout(household: Household, client: Completer, methods: Sequence[str] = HELDOUT_METHODS, *,
                temperature: float = 0.0, wording: str = "own",
                answers: str = "paper", decoding: str = "free") -> dict[str, dict[str, list[TrialResult]]]:
    """Held-out runs, apart from the tables: every task (the paper's and the held-out ones) on the
    held-out maps, and the held-out tasks there too, for those of HELDOUT_METHODS in `methods`;
    method -> task -> results per held-out map."""
    maps = [n for n, m in household.maps.items() if m.heldout]
    return {method: {task: [run_trial(task, m, method, client, household=household, trial=i,
                                      temperature=temperature, wording=wording, answers=answers,
                                      decoding=decoding)
                            for i, m in enumerate(maps)]
                     for task in household.tasks}
            for method in HELDOUT_METHODS if method in methods}


def format_heldout(household: Household, runs: Mapping[str, Mapping[str, list[TrialResult]]]) -> str:
    maps = ", ".join(n for n, m in household.maps.items() if m.heldout)
    methods = [m for m in HELDOUT_METHODS if m in runs]
    lines = [f"HELD OUT (map {maps}, written after the offline model; tasks marked + are not in the paper): "
             "successes/runs and steps",
             f"{'Task':{W}s}" + "".join(f"{LABELS[m]:>14s}" for m in methods)]
    for task, spec in household.tasks.items():
        label = ("  " + ("+ " if spec.heldout else "") + spec.goal)[:W]
        cells = []
        for method in methods:
            results = runs[method][task]
            wins = sum(r.success for r in results)
            cells.append(f"{wins}/{len(results)} {sum(r.steps for r in results) / max(1, len(results)):5.1f}")
        lines.append(f"{label:{W}s}" + "".join(f"{c:>14s}" for c in cells))
    return "\n".join(lines)


def heldout_to_dict(runs: Mapping[str, Mapping[str, list[TrialResult]]]) -> dict[str, Any]:
    return {method: {task: [{"map": r.map, "success": r.success, "steps": r.steps, "end_reason": r.end_reason}
                            for r in results] for task, results in tasks.items()}
            for method, tasks in runs.items()}
