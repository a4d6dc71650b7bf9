"""A sweep's tables: each cell of the grid (its parameters without the seed) as one row, each
measure as the mean over the cell's seeds with its 95 % confidence interval.

The interval is Student's t (two-sided, 95 %, n - 1 degrees of freedom) on the seeds' values:
mean +- t(0.975, n-1) * s / sqrt(n), with s the sample standard deviation. It treats seeds as
independent draws of the world's placement (STARS) or of the trial block (BCR, LLM-State); with
one seed there is no interval ("n=1"), and identical values give a zero-width one (the offline
model at temperature 0 is deterministic: its intervals show the world's variation only).
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from task_learning.apps.sweeps.results import StoredTrial
from task_learning.apps.sweeps.trial import MEASURES, PRIMARY
from task_learning.inputs.files import save_figure

CI_METHOD = "Student's t, two-sided 95 %, n-1 degrees of freedom, over seeds"
KIND_TITLES = {"stars": "STARS", "bcr": "BCR", "llm_state": "LLM-State"}
# Parameters that name a row, per kind, in column order (those that take one value in the sweep
# go into the table's heading instead). The seed is what the rows average over.
ROW_PARAMS = {
    "stars": ("scene", "condition", "llm", "decoding", "elicitation", "engine"),
    "bcr": ("scene", "task", "mode", "engine", "llm", "decoding", "trials", "max_actions"),
    "llm_state": ("task", "method", "llm", "maps", "trials", "temperature", "prompts", "hands"),
}


@dataclass(frozen=True)
class Estimate:
    mean: float
    half_width: float | None  # None with a single seed
    n: int

    @property
    def low(self) -> float | None:
        return None if self.half_width is None else self.mean - self.half_width

    @property
    def high(self) -> float | None:
        return None if self.half_width is None else self.mean + self.half_width

    def to_dict(self) -> dict[str, Any]:
        return {"mean": self.mean, "ci95": [self.low, self.high] if self.half_width is not None else None,
                "half_width": self.half_width, "n": self.n}


def estimate(values: Sequence[float]) -> Estimate:
    """Mean and t-interval half-width of `values` (at least one)."""
    from scipy.stats import t as student_t

    n = len(values)
    mean = statistics.fmean(values)
    if n < 2:
        return Estimate(mean, None, n)
    sd = statistics.stdev(values)
    return Estimate(mean, float(student_t.ppf(0.975, n - 1)) * sd / math.sqrt(n), n)


def _shown(value: Any) -> str:
    if isinstance(value, dict):
        return str(value.get("name", value))
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)


@dataclass
class Row:
    cell: dict[str, str]  # the row's parameter values, shown
    estimates: dict[str, Estimate]
    seeds: list[int]


@dataclass
class Table:
    kind: str
    fixed: dict[str, str]  # parameters with one value in the whole table
    columns: list[str]  # parameters that vary, one column each
    measures: list[tuple[str, str, str]]
    rows: list[Row] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "fixed": self.fixed, "ci": CI_METHOD,
                "rows": [{**r.cell, "seeds": r.seeds, **{k: e.to_dict() for k, e in r.estimates.items()}}
                         for r in self.rows]}
# What a trial without the parameter ran with (grid.py leaves free decoding out of the key).
ROW_DEFAULTS = {"decoding": "free"}


def build_tables(trials: Iterable[StoredTrial]) -> list[Table]:
    """One table per kind from the finished trials, rows in the order their cells first appear."""
    by_kind: dict[str, list[StoredTrial]] = {}
    for trial in trials:
        if trial.status == "done":
            by_kind.setdefault(trial.kind, []).append(trial)
    tables = []
    for kind in ("stars", "bcr", "llm_state"):
        done = by_kind.get(kind)
        if not done:
            continue
        names = [p for p in ROW_PARAMS[kind] if any(p in t.params for t in done)]
        values = {p: {_shown(t.params.get(p, ROW_DEFAULTS.get(p))) for t in done} for p in names}
        columns = [p for p in names if len(values[p]) > 1 or p in ("scene", "condition", "task", "method")]
        fixed = {p: next(iter(values[p])) for p in names if p not in columns}
        cells: dict[tuple[str, ...], list[StoredTrial]] = {}
        for trial in done:
            cells.setdefault(tuple(_shown(trial.params.get(p, ROW_DEFAULTS.get(p))) for p in columns), []).append(trial)
        present = [m for m in MEASURES[kind] if any(m[0] in t.measures for t in done)]
        table = Table(kind, fixed, columns, present)
        for cell, members in cells.items():
            estimates = {key: estimate([float(t.measures[key]) for t in members])
                         for key, _title, _fmt in present if all(key in t.measures for t in members)}
            table.rows.append(Row(dict(zip(columns, cell)), estimates, sorted(t.params["seed"] for t in members)))
        tables.append(table)
    return tables


def _cell(estimate_: Estimate | None, fmt: str) -> str:
    if estimate_ is None:
        return "-"
    if estimate_.half_width is None:
        return f"{fmt.format(estimate_.mean)} (n=1)"
    return f"{fmt.format(estimate_.mean)} ± {fmt.format(estimate_.half_width)}"


def format_table(table: Table) -> str:
    """The table as text: one row per cell, `mean ± half-width` per measure, n seeds."""
    header = list(table.columns) + [title for _k, title, _f in table.measures] + ["n"]
    lines = [[row.cell[c] for c in table.columns]
             + [_cell(row.estimates.get(key), fmt) for key, _t, fmt in table.measures]
             + [str(len(row.seeds))] for row in table.rows]
    widths = [max(len(h), *(len(line[i]) for line in lines)) for i, h in enumerate(header)]
    left = len(table.columns)
    out = [f"{KIND_TITLES[table.kind]}" + (": " + ", ".join(f"{k} {v}" for k, v in table.fixed.items())
                                           if table.fixed else "")]
    out.append("  ".join(h.ljust(w) if i < left else h.rjust(w) for i, (h, w) in enumerate(zip(header, widths))))
    for line in lines:
        out.append("  ".join(v.ljust(w) if i < left else v.rjust(w) for i, (v, w) in enumerate(zip(line, widths))))
    return "\n".join(out)


def plot_tables(tables: Sequence[Table], folder: str | Path) -> list[Path]:
    """A bar chart per table of its primary measure (completion or success %) with the 95 %
    intervals as error bars; the PNG paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for table in tables:
        key = PRIMARY[table.kind]
        rows = [r for r in table.rows if key in r.estimates]
        if not rows:
            continue
        title = next(t for k, t, _f in table.measures if k == key)
        labels = [" ".join(r.cell[c] for c in table.columns) for r in rows]
        means = [r.estimates[key].mean for r in rows]
        errors = [r.estimates[key].half_width or 0.0 for r in rows]
        fig, ax = plt.subplots(figsize=(max(6.0, 0.5 * len(rows) + 2), 4.5))
        ax.bar(range(len(rows)), means, yerr=errors, capsize=3, color="#4c72b0")
        ax.set_xticks(range(len(rows)), labels, rotation=60, ha="right", fontsize=8)
        ax.set_ylabel(title)
        ax.set_ylim(0, 105)
        ax.set_title(f"{KIND_TITLES[table.kind]}: mean over seeds, 95 % CI (t)", fontsize=10)
        fig.tight_layout()
        path = folder / f"{table.kind}.png"
        try:
            save_figure(fig, path, dpi=100)
        finally:
            plt.close(fig)
        paths.append(path)
    return paths
