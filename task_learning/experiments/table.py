"""The layout of the STARS paper's Table 2 / Tables 11-13, for rows measured here, beside the paper's.

Rows come from RunMetrics.to_dict(); the paper's own figures (transcribed from Tables 11-13) are
printed next to ours so a reader sees at once where the offline model differs from GPT-3/4.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from task_learning.experiments.machine import describe_load
from task_learning.inputs.files import save_figure
from task_learning.llm.tokens import TOKENIZER

COLUMNS = (
    ("completion", "Task completion %", "{:.1f}"),
    ("retrieved", "Retrieved", "{}"),
    ("proposed", "Proposed", "{}"),
    ("sourced", "Sourced", "{}"),
    ("prompt_tokens", "Prompt tok", "{:,}"),
    ("completion_tokens", "Compl tok", "{:,}"),
    ("total_tokens", "Total tok", "{:,}"),
    ("instructions", "Instructions", "{}"),
    ("yes_no", "Yes/No", "{}"),
    ("words", "Words", "{}"),
)

# The STARS paper, Table 2 and Tables 11-13: (completion, retrieved, proposed, sourced, prompt, completion
# tokens, total, instructions, yes/no, words). Only figures the paper prints; None where it prints
# none (shown as "-"). test/experiments/test_experiments_table.py checks every row against Table 2 and the sums.
PAPER: dict[str, dict[str, tuple[float | int | None, ...]]] = {
    "tidy_kitchen": {
        "TBP": (52.5, 93, 0, 25, 35622, 5785, 41407, 14, 0, 76),
        "TBP+O": (100.0, 89, 64, 21, 36606, 5863, 42469, 92, 64, 403),
        "ST": (50.0, 243, 0, 24, 55491, 1383, 56874, 14, 0, 76),
        "STS": (40.0, 247, 0, 18, 65016, 1442, 66458, 14, 0, 76),
        "STAR": (77.5, 353, 0, 33, 122531, 3555, 126086, 14, 0, 76),
        "STARS": (77.5, 368, 0, 35, 136043, 3828, 139871, 14, 0, 76),
        "STARS+O": (100.0, 361, 51, 35, 134372, 3724, 138096, 65, 51, 127),
        # STARS* (footnote 3's context given to Selection): only its completion is reported.
        "STARS*": (92.5, None, None, None, None, None, None, None, None, None),
        "Trial #2": (100.0, 0, None, None, None, None, 0, 1, None, 2),
    },
    "store_groceries": {
        # Table 12's TBP row is garbled in the text: completion, retrieved, total tokens,
        # instructions and words from Table 2, prompt tokens (14,878) from Table 12; no goal is
        # proposed without oversight. Sourced and completion tokens are not legible.
        "TBP": (66.7, 39, 0, None, 14878, None, 17078, 6, 0, 28),
        "TBP+O": (100.0, 37, 21, 13, 16362, 2327, 18689, 29, 21, 92),
        "ST": (66.7, 96, 0, 13, 20932, 586, 21518, 6, 0, 28),
        "STS": (66.7, 99, 0, 9, 25085, 605, 25690, 6, 0, 28),
        "STAR": (77.8, 170, 0, 15, 56005, 1704, 57709, 6, 0, 28),
        "STARS": (94.4, 171, 0, 15, 60069, 1739, 61808, 6, 0, 28),
        "STARS+O": (100.0, 177, 16, 15, 62693, 1808, 64501, 22, 16, 44),
        "Trial #2": (100.0, 0, None, None, None, None, 0, 1, None, 2),
    },
    "organize_office": {
        # Table 13 prints the TBP and TBP+O rows merged into one line ("34 35", "0 28", ...);
        # completion from Table 2. The paper prints TBP's total as 12,992 (Tables 2 and 13)
        # although its prompt and completion tokens add up to 12,922: printed as published.
        "TBP": (35.7, 34, 0, 5, 11232, 1690, 12992, 6, 0, 28),
        "TBP+O": (100.0, 35, 28, 5, 9996, 1666, 11662, 41, 28, 184),
        "ST": (21.4, 95, 0, 3, 20641, 441, 21082, 6, 0, 28),
        "STS": (21.4, 97, 0, 1, 24256, 461, 24717, 6, 0, 28),
        "STAR": (64.3, 204, 0, 12, 73357, 2152, 75509, 6, 0, 28),
        "STARS": (92.9, 201, 0, 12, 73933, 2123, 76056, 6, 0, 28),
        "STARS+O": (100.0, 206, 15, 11, 75554, 2168, 77722, 22, 15, 60),
        "Trial #2": (100.0, 0, None, None, None, None, 0, 1, None, 2),
    },
}


CALIBRATED_SCENES = tuple(PAPER)  # the paper's scenes: the offline model was written against them

OFFLINE_NOTE = (
    "The offline model is NOT a language model: it is hand-written household knowledge, and it was "
    "written with the paper's tables at hand (its object list covers the paper's 58 objects). On the "
    "paper's three scenes its completion rates therefore measure agreement between two hand-written "
    "tables, not knowledge extracted from a language model. What its rows do show: the pipeline's "
    "mechanics (TBP sampling, search tree, analysis, repair, selection, oversight, learning, "
    "Trial #2) and the measures (retrieved, proposed, sourced, tokens, words). Scenes it was not "
    "written against (heldout_kitchen, heldout_bedroom) are reported apart.")


STANDIN_NOTE = (
    "Rows marked (offline stand-in) are NOT a language model: hand-written household knowledge, "
    "written with the paper's tables at hand, run in the same command for the same conditions. The "
    "paper's rows are GPT-3 (goal retrieval) and GPT-4 (selection); a 270M base model is far weaker "
    "than either. Calls answered by an earlier row's identical temperature-0 prompt are counted in "
    "their row's tokens: each row counts what its condition sent.")


def describe_model(llm: str, options: Mapping[str, Any]) -> str:
    """The model behind the rows, in words, for the table's footer and its JSON."""
    spec = llm.strip().lower()
    if spec == "local":
        if options.get("completion_model"):
            return f"local: {options['completion_model']} on llama.cpp's llama-server"
        from task_learning.llm.local_install import MODEL_BYTES, SDIST_VERSION

        if options.get("base_url"):
            return f"local: the llama-server at {options['base_url']} (whatever model it serves)"
        return (f"Gemma 3 270M base (not instruction-tuned), GGUF Q4_K_M, {MODEL_BYTES / 1e6:.0f} MB, "
                f"on llama.cpp's llama-server (llama-cpp-python {SDIST_VERSION}'s source), CPU")
    if spec.startswith(("openai", "record:")):
        return f"{llm}: {options.get('completion_model') or 'config/llm.yaml openai.completion_model'}"
    return llm


def tokenizer_for(llm: str) -> str:
    """Who counted the token columns: cl100k_base for the offline model, the server otherwise."""
    if llm.startswith("replay:"):
        return "as recorded in the cassette (the server's usage when it was recorded)"
    if llm.startswith(("openai", "record:", "local")):
        return "the server's usage figures"
    return TOKENIZER


def scene_kind(scene: str) -> str:
    """'calibrated' (one of the paper's scenes) or 'held-out'."""
    return "calibrated" if scene in CALIBRATED_SCENES else "held-out"


def paper_row(scene: str, condition: str) -> dict[str, Any] | None:
    values = PAPER.get(scene, {}).get(condition)
    if values is None:
        return None
    return dict(zip((key for key, _, _ in COLUMNS), values))


def paper_key(label: str) -> str:
    """'STARS+O (ROS)' -> 'STARS+O'; 'Trial #2 (ROS)' -> 'Trial #2'."""
    return "Trial #2" if label.startswith("Trial #2") else label.split(" ")[0]


STANDIN_LABEL = "  (offline stand-in)"


def format_table(scene: str, rows: Sequence[tuple[str, Mapping[str, Any]]], *, with_paper: bool = True,
                 llm: str = "offline", standin: Mapping[str, Mapping[str, Any]] | None = None) -> str:
    """rows: (label, metrics dict). Each measured row is followed by the offline stand-in's row
    for the same condition (`standin`, by label: run beside a language model, so a reader sees
    the model and the hand-written stand-in apart) and by the paper's, when known."""
    label_width = max([len("Condition"), len(STANDIN_LABEL)] + [len(label) + 8 for label, _ in rows])
    widths = [max(len(title), 9) for _, title, _ in COLUMNS]
    header = "Condition".ljust(label_width) + "  " + "  ".join(
        title.rjust(w) for (_, title, _), w in zip(COLUMNS, widths))
    kind = ("calibrated: one of the paper's scenes" if scene_kind(scene) == "calibrated"
            else "held-out: not a scene of the paper")
    title = (f"STARS paper's Table 2 layout: {scene} ({kind}; LLM: {llm}; tokens counted by "
             f"{tokenizer_for(llm)})")
    lines = [title, header, "-" * len(header)]
    for i, (label, data) in enumerate(rows):
        lines.append(_row(label, data, label_width, widths))
        base = paper_key(label)
        if i + 1 < len(rows) and paper_key(rows[i + 1][0]) == base:
            continue  # the same condition decoded another way (free, grounded): its rows together
        if standin is not None and base in standin:
            lines.append(_row(STANDIN_LABEL, standin[base], label_width, widths))
        paper = paper_row(scene, base) if with_paper else None
        if paper is not None:
            lines.append(_row(f"  (paper {base})", paper, label_width, widths))
    return "\n".join(lines)


def format_trials(rows: Sequence[tuple[str, Mapping[str, Any]]], standin: Mapping[str, Mapping[str, Any]] | None = None
                  ) -> str:
    """Trials, wall time, the machine's load while each row ran and (with a model shared across
    the rows) how many of a row's calls reached the model: what a wall time was measured under."""
    lines = ["Trials and wall times (1-minute load average min/mean/max while the row ran):"]
    for label, data in rows:
        lines.append(f"  {label}: {_trial_cell(data)}")
    if standin:
        total = sum(float(d.get("wall_s") or 0) for d in standin.values())
        lines.append(f"  offline stand-in, every row: {total:.1f} s wall in all")
    return "\n".join(lines)


def _trial_cell(data: Mapping[str, Any]) -> str:
    machine = data.get("machine") or {}
    usage = data.get("usage") or {}
    text = f"{data.get('trials', 1)} trial, {float(data.get('wall_s') or 0):,.1f} s wall"
    calls = usage.get("calls")
    if calls is not None:
        text += f", {calls:,} LLM calls"
        if "calls_shared" in data:
            text += (f" ({data.get('calls_to_model', 0):,} to the model, {data['calls_shared']:,} answered by "
                     "an earlier row's identical temperature-0 prompt)")
    if machine:
        text += f", {describe_load(machine)}"
    return text


def _row(label: str, data: Mapping[str, Any], label_width: int, widths: Sequence[int]) -> str:
    cells = []
    for (key, _, fmt), width in zip(COLUMNS, widths):
        value = data.get(key)
        cells.append((fmt.format(value) if value not in (None, "") else "-").rjust(width))
    return label.ljust(label_width) + "  " + "  ".join(cells)


def run_label(llm: str) -> str:
    """What a plot calls the bars of this run: the offline stand-in is named for what it is."""
    if llm == "offline":
        return "this run: offline stand-in (not a language model)"
    return f"this run ({llm})"


def legend_above(fig: Any, ax: Any, top: float = 0.86) -> None:
    """One legend for the figure, above the axes and below the title, so it never covers a bar
    (a legend inside an axes lands on the tallest bars wherever matplotlib puts it)."""
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=len(labels), fontsize=8, frameon=False,
               bbox_to_anchor=(0.5, top + 0.06))
    fig.tight_layout(rect=(0, 0, 1, top))


def plot_rows(scene: str, rows: Sequence[tuple[str, Mapping[str, Any]]], path: str | Path,
              llm: str = "offline") -> Path:
    """Task completion, user words and total tokens per condition, ours beside the paper's."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [label for label, _ in rows]
    measures = (("completion", "Task completion (%)"), ("words", "User words"),
                ("total_tokens", "Total tokens"))
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.6))
    x = range(len(labels))
    for ax, (key, title) in zip(axes, measures):
        ours = [float(data.get(key, 0) or 0) for _, data in rows]
        paper = [float((paper_row(scene, paper_key(label)) or {}).get(key) or 0) for label in labels]
        ax.bar([i - 0.2 for i in x], ours, width=0.4, label=run_label(llm))
        ax.bar([i + 0.2 for i in x], paper, width=0.4, label="paper (GPT-3/4)")
        ax.set_xticks(list(x))
        ax.set_xticklabels(labels, rotation=30, ha="right", fontsize=8)
        ax.set_title(title)
        top = max(ours + paper + [1.0])
        if key == "total_tokens":
            ax.set_yscale("symlog")
            ax.set_ylim(0, top * 4)
        else:
            ax.set_ylim(0, top * 1.1)
    fig.suptitle(f"{scene}: STARS conditions")
    legend_above(fig, axes[0])
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    save_figure(fig, path, dpi=110)
    plt.close(fig)
    return path
