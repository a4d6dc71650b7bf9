"""Issue 32's smaller points, each as a user meets it: the version, help descriptions, the Qt
platform check naming a missing library, whole labels in `bcr --dot x.png`, plot legends that
cover no bar and name the offline stand-in, and a task summary that says why a run is partial."""
from __future__ import annotations

import os
import stat
from types import SimpleNamespace

import pytest

from task_learning.apps.cli import build_parser, main
from task_learning.oversight import qt_platform
from task_learning.planning.summary import summarize


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.startswith("task-learning 0.1.0")
    assert main(["--version"]) == 0


def test_every_command_has_a_help_description():
    parser = build_parser()
    commands = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction").choices
    missing = [name for name, sub in commands.items() if not (sub.description or "").strip()]
    assert not missing, f"commands without a description: {missing}"
    assert {"experiment", "demo", "bootstrap"} <= set(commands)


# -- the Qt platform check ------------------------------------------------------------------------

@pytest.mark.parametrize("soname, package", [
    ("libxcb-icccm.so.4", "libxcb-icccm4"), ("libxcb-keysyms.so.1", "libxcb-keysyms1"),
    ("libxcb-xinerama.so.0", "libxcb-xinerama0"), ("libxkbcommon-x11.so.0", "libxkbcommon-x11-0"),
    ("libX11-xcb.so.1", "libx11-xcb1"), ("libdbus-1.so.3", "libdbus-1-3"),
])
def test_debian_package_of_a_library(soname, package):
    assert qt_platform.debian_package(soname) == package


def test_a_missing_library_is_named_with_its_package(tmp_path, monkeypatch):
    fake_ldd = tmp_path / "ldd"
    fake_ldd.write_text("#!/bin/sh\necho '\tlibxcb-icccm.so.4 => not found'\n"
                        "echo '\tlibxcb-keysyms.so.1 => not found'\necho '\tlibc.so.6 => /lib/libc.so.6'\n")
    fake_ldd.chmod(fake_ldd.stat().st_mode | stat.S_IXUSR)
    plugin = tmp_path / "libqxcb.so"
    plugin.write_bytes(b"")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("DISPLAY", ":99")
    monkeypatch.delenv("QT_QPA_PLATFORM", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    with pytest.raises(Exception) as error:
        qt_platform.check_qt_platform("the operator panel", (plugin, []))
    message = str(error.value)
    assert "libxcb-icccm.so.4, libxcb-keysyms.so.1" in message
    assert "apt-get install libxcb-icccm4 libxcb-keysyms1" in message and "\n" not in message
    monkeypatch.setenv("QT_QPA_PLATFORM", "offscreen")  # no window: nothing to check
    qt_platform.check_qt_platform("the operator panel", (plugin, []))


# -- bcr --dot x.png -------------------------------------------------------------------------------

DOT = """digraph bcr {
  n0 [label="inside(Mug|1, CoffeeMachine|1)"];
  n1 [label="switched_on(CoffeeMachine|1)"];
  n2 [label="PutObject(Mug|1, CoffeeMachine|1)\\n[no_room]"];
  n3 [label="PickupObject(Cup|1)\\n[hand_full]"];
  n4 [label="PutObject(Mug|1, CounterTop|1)"];
  n5 [label="PutObject(Mug|1, CounterTop|2)"];
  n6 [label="PutObject(Mug|1, DiningTable|1)"];
  n0 -> n2;
  n2 -> n3;
  n3 -> n4;
  n3 -> n5;
  n3 -> n6;
}"""


@pytest.mark.slow  # matplotlib
def test_bcr_tree_png_cuts_no_label_and_overlaps_none():
    import matplotlib.pyplot as plt

    from task_learning.bcr.tree import draw_tree

    fig = draw_tree(DOT)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    saved = fig.get_tightbbox(renderer)  # what savefig(bbox_inches="tight") keeps, in inches
    boxes = [t.get_window_extent(renderer) for t in fig.axes[0].texts]
    assert len(boxes) == 7
    dpi = fig.dpi
    for text, box in zip(fig.axes[0].texts, boxes):
        assert not text.get_clip_on(), text.get_text()
        assert saved.x0 * dpi <= box.x0 and box.x1 <= saved.x1 * dpi, text.get_text()
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert not a.overlaps(b), "two labels drawn over each other"
    plt.close(fig)


# -- plots -------------------------------------------------------------------------------------------

@pytest.mark.slow  # matplotlib
@pytest.mark.parametrize("which", ["stars", "llm_state"])
def test_plot_legends_cover_no_bar_and_name_the_stand_in(tmp_path, monkeypatch, which):
    import matplotlib.figure

    figures = []
    real_savefig = matplotlib.figure.Figure.savefig
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig",
                        lambda self, *a, **k: (figures.append(self), real_savefig(self, *a, **k))[1])
    if which == "stars":
        from task_learning.experiments.table import plot_rows

        rows = [("TBP", {"completion": 72.5, "words": 76, "total_tokens": 34347}),
                ("STARS+O", {"completion": 100.0, "words": 119, "total_tokens": 676695}),
                ("Trial #2", {"completion": 100.0, "words": 2, "total_tokens": 0})]
        plot_rows("tidy_kitchen", rows, tmp_path / "p.png")
    else:
        from task_learning.experiments.llm_state_tables import plot_tables

        house = SimpleNamespace()
        table = SimpleNamespace(runs={("t", "ours"): [], ("t", "no_states"): []}, methods=["no_states", "ours"],
                                mean_sr=lambda _h, _level, _m: 100.0)
        plot_tables(house, table, tmp_path / "p.png")
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = figures[-1]
    canvas = FigureCanvasAgg(fig)  # the plot closed its figure: draw it again to measure it
    canvas.draw()
    renderer = canvas.get_renderer()
    legends = [fig.legends[0]] if fig.legends else [ax.get_legend() for ax in fig.axes if ax.get_legend()]
    assert legends
    labels = [t.get_text() for legend in legends for t in legend.get_texts()]
    assert "this run" not in labels and any("offline stand-in (not a language model)" in t for t in labels)
    for legend in legends:
        box = legend.get_window_extent(renderer)
        for ax in fig.axes:
            for bar in ax.patches:
                assert not box.overlaps(bar.get_window_extent(renderer)), "the legend covers a bar"


# -- partial results say why ------------------------------------------------------------------------

def _report(object_id: str, outcome: str, message: str = "") -> SimpleNamespace:
    return SimpleNamespace(object_id=object_id, outcome=outcome, message=message)


def test_success_only_when_every_object_reached_its_goal():
    done = summarize([_report("Mug|1", "done"), _report("Cup|1", "done")], 4, 4)
    assert done.success and done.message.startswith("task completed") and not done.reasons
    timed_out = "not_confirmed: the operator did not answer in time"
    partial = summarize([_report("Mug|1", "done"), _report("Cup|1", "no_goal", timed_out),
                         _report("Bowl|1", "no_goal", timed_out),
                         _report("Fork|1", "no_goal", "not_confirmed: the operator refused every proposal")], 4, 7)
    assert not partial.success and "57.1%" in partial.message
    assert partial.reasons == [
        f"2 object(s) without a goal: {timed_out} (Cup|1, Bowl|1)",
        "1 object(s) without a goal: not_confirmed: the operator refused every proposal (Fork|1)"]
    nothing = summarize([], 40, 40)
    assert nothing.success and "nothing to do" in nothing.message


def test_run_on_a_scene_without_a_stars_task_is_one_line_naming_the_command_that_runs_it(tmp_path, capsys):
    """Issue 43's check of every packaged scene: bcr_kitchen (BCR's testbed) has no STARS task
    object; `run` says so in one line, before any LLM call, and names `task-learning bcr`."""
    code = main(["run", "--scene", "bcr_kitchen", "--condition", "STARS", "--db", str(tmp_path / "kb.sqlite")])
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code == 2 and len(err) == 1
    assert "'bcr_kitchen' defines no subtasks" in err[0] and "task-learning bcr --scene NAME --task TASK" in err[0]
