"""Seed 000's Table 2 layout: our rows, the paper's beside them, and the plot file."""
from __future__ import annotations

import pytest

from task_learning.experiments.table import format_table, paper_row, plot_rows


def test_rows_are_followed_by_the_papers_and_missing_figures_print_as_dashes():
    rows = [("STARS+O", {"completion": 100.0, "retrieved": 746, "proposed": 43, "sourced": 35,
                         "prompt_tokens": 655507, "completion_tokens": 14002, "total_tokens": 669509,
                         "instructions": 57, "yes_no": 43, "words": 119}),
            ("Trial #2", {"completion": 100.0, "words": 2})]
    text = format_table("tidy_kitchen", rows).splitlines()
    assert text[0] == "Seed 000 Table 2 layout: tidy_kitchen"
    ours = next(line for line in text if line.startswith("STARS+O"))
    paper = next(line for line in text if line.strip().startswith("(paper STARS+O)"))
    assert "655,507" in ours and ours.split()[-1] == "119"
    assert paper.split()[-1] == "127" and "134,372" in paper
    trial2 = next(line for line in text if line.startswith("Trial #2"))
    assert "-" in trial2.split() and not any("(paper Trial" in line for line in text)


def test_paper_rows_hold_the_transcribed_figures():
    assert paper_row("store_groceries", "STARS")["completion"] == 94.4
    assert paper_row("organize_office", "TBP+O")["words"] == 184
    assert paper_row("tidy_kitchen", "STARS*")["words"] is None
    assert paper_row("tidy_kitchen", "NOPE") is None


@pytest.mark.slow  # matplotlib import and render
def test_plot_writes_a_png(tmp_path):
    path = plot_rows("store_groceries", [("STARS", {"completion": 94.4, "words": 28, "total_tokens": 1000})],
                     tmp_path / "p.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
