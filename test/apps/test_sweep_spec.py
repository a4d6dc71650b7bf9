"""The sweep file's schema (one-line errors naming file and key), the grid's trial keys, the
results file, the t-intervals and the tables: everything of `task-learning sweep` but Ray
(test_sweep_ray.py runs real sweeps)."""
from __future__ import annotations

import socket
import sqlite3
from pathlib import Path

import pytest
import yaml

from task_learning.apps.cli import main
from task_learning.apps.sweeps.grid import expand
from task_learning.apps.sweeps.results import ResultsError, ResultsStore
from task_learning.apps.sweeps.spec import load_sweep, parse_sweep
from task_learning.apps.sweeps.summary import build_tables, estimate, format_table
from task_learning.apps.sweeps.trial import run_trial
from task_learning.errors import ConfigError
from task_learning.inputs.config import config_path

STARS = {"kind": "stars", "scenes": ["tidy_kitchen"], "conditions": ["STARS"], "seeds": 2}


def test_the_example_expands_to_every_combination_with_stable_distinct_keys():
    sweep = load_sweep(config_path("sweeps", "example.yaml"))
    trials = expand(sweep)
    kinds = [t.kind for t in trials]
    assert kinds.count("stars") == 2 * 3 * 3 and kinds.count("bcr") == 2 * 2 * 3 and kinds.count("llm_state") == 2 * 2
    assert len({t.key for t in trials}) == len(trials)
    assert [t.key for t in expand(load_sweep(config_path("sweeps", "example.yaml")))] == [t.key for t in trials]
    # A seed added to the file leaves the other trials' keys as they were (a rerun skips them).
    grown = parse_sweep({"name": "x", "experiments": [dict(STARS, seeds=[0, 1, 2])]}, "f.yaml")
    small = parse_sweep({"name": "x", "experiments": [dict(STARS, seeds=[0, 1])]}, "f.yaml")
    assert {t.key for t in expand(small)} < {t.key for t in expand(grown)}


@pytest.mark.parametrize(("experiment", "top", "expected"), [
    (dict(STARS, conditons=["STARS"]), {}, "f.yaml: experiments[0].conditons: unknown key (did you mean 'conditions'?)"),
    (dict(STARS, conditions=["STARS", "STAR+O"]), {},
     "f.yaml: experiments[0].conditions[1]: unknown condition 'STAR+O' (did you mean 'STARS+O'?)"),
    (dict(STARS, scenes=["tidy_kitchn"]), {}, "experiments[0].scenes[0]: "),
    (dict(STARS, kind="star"), {}, "f.yaml: experiments[0]: unknown kind 'star' (known: stars, bcr, llm_state)"),
    (dict(STARS, seeds=[1, -2]), {}, "f.yaml: experiments[0].seeds[1]: Input should be greater than or equal to 0, got -2"),
    (dict(STARS, seeds=0), {}, "f.yaml: experiments[0].seeds: a seed count must be between 1 and 1000, got 0"),
    (dict(STARS, conditions=["STARS", "stars"]), {}, "f.yaml: experiments[0].conditions: repeated value(s): STARS"),
    (dict(STARS, scenes=["store_groceries"], conditions=["STARS*"]), {},
     "f.yaml: experiments[0]: STARS* needs a scene with footnote 3's context (tidy_kitchen); not: store_groceries"),
    ({"kind": "bcr", "tasks": ["make_coffee"], "seeds": 1, "modes": ["papr"]}, {},
     "f.yaml: experiments[0].modes[0]: expected 'paper' or 'guarded', got 'papr'"),
    ({"kind": "llm_state", "tasks": ["heat_milk"], "seeds": 1, "methods": ["our"]}, {},
     "f.yaml: experiments[0].methods[0]: unknown method 'our' (did you mean 'ours'?)"),
    (dict(STARS, llm=["replay"]), {}, "f.yaml: experiments[0].llm[0]: a replay provider needs a cassette"),
    (dict(STARS, llm=[{"provider": "openai", "base_url": "ftp://gpu1"}]), {}, "f.yaml: experiments[0].llm[0].base_url: "),
    (STARS, {"worker": 3}, "f.yaml: worker: unknown key (did you mean 'workers'?)"),
    (STARS, {"workers": 0}, "f.yaml: workers: Input should be greater than or equal to 1, got 0"),
])
def test_a_bad_sweep_file_is_one_line_naming_file_and_key(experiment, top, expected):
    with pytest.raises(ConfigError) as caught:
        parse_sweep({"name": "x", "experiments": [experiment], **top}, "f.yaml")
    message = str(caught.value)
    assert message.startswith("f.yaml: ") and expected in message and "\n" not in message


def test_the_cli_refuses_a_bad_file_with_one_line_and_exit_2(tmp_path, capsys):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({"name": "x", "experiments": [dict(STARS, conditions=["STRAS"])]}))
    assert main(["sweep", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"task-learning sweep: error: {path}: experiments[0].conditions[0]: unknown condition "
                   "'STRAS' (did you mean 'STARS'?)")
    assert not (tmp_path / "out").exists()  # refused before anything was made


def test_t_interval_over_seeds():
    est = estimate([1.0, 2.0, 3.0])  # s = 1, t(0.975, 2) = 4.3027
    assert est.mean == 2.0 and est.n == 3
    assert est.half_width == pytest.approx(4.302652729911275 / 3 ** 0.5)
    assert estimate([5.0]).half_width is None
    assert estimate([7.0, 7.0]).half_width == 0.0


def _trial(seed: int, completion: float):
    sweep = parse_sweep({"name": "x", "experiments": [dict(STARS, seeds=[seed])]}, "f.yaml")
    return expand(sweep)[0], {"completion": completion, "yes_no": 0, "words": 10, "calls": 100,
                              "round_trips": 10, "tokens": 1000}


def test_results_file_keeps_attempts_and_the_table_prints_mean_and_interval(tmp_path):
    with ResultsStore(tmp_path / "results.sqlite") as store:
        for seed, completion in ((0, 80.0), (1, 90.0), (2, 100.0)):
            trial, measures = _trial(seed, completion)
            if seed == 1:
                assert store.record(trial, "killed", error="worker died", final=False) == 1
            store.record(trial, "done", measures=measures, seconds=1.0, worker="host:1")
        assert len(store.done_keys()) == 3
        stored = list(store.trials())
        retried = [t for t in stored if t.attempts == 2]
        assert len(retried) == 1 and [a["outcome"] for a in store.attempt_log(retried[0].key)] == ["killed", "done"]
    (table,) = build_tables(stored)
    text = format_table(table)
    assert "tidy_kitchen  STARS" in text
    assert "90.0 ± 24.8" in text  # mean 90, s = 10, t(0.975, 2) * 10 / sqrt(3) = 24.84
    assert table.to_dict()["rows"][0]["completion"]["ci95"] == pytest.approx([65.16, 114.84], abs=0.01)


def test_a_foreign_sqlite_file_is_refused_untouched(tmp_path):
    path = tmp_path / "other.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE goals (x)")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    with pytest.raises(ResultsError, match="not a sweep results file"):
        ResultsStore(path)
    assert path.read_bytes() == before


def test_a_trial_that_fails_returns_one_line_not_an_exception(tmp_path):
    sweep = parse_sweep({"name": "x", "experiments": [dict(STARS, llm=["replay:/nonexistent/cassette.jsonl"])]},
                        "f.yaml")
    trial = expand(sweep)[0]
    result = run_trial(trial.kind, trial.params, str(tmp_path), trial.key)
    assert result["status"] == "failed" and "cassette" in result["error"] and "\n" not in result["error"]


def test_example_sweep_file_is_in_config():
    assert Path(config_path("sweeps", "example.yaml")).is_file()


def test_an_unreachable_cluster_address_is_one_line_at_once(tmp_path):
    from task_learning.apps.sweeps.ray_runner import SweepError, check_reachable

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        port = server.getsockname()[1]  # bound, not listening: refused
        with pytest.raises(SweepError, match=rf"^cannot reach the Ray cluster at 127.0.0.1:{port}: "):
            check_reachable(f"127.0.0.1:{port}", timeout_s=5)


def test_a_grid_decodes_freely_unless_it_says_grounded_and_free_keys_stay_as_they_were(monkeypatch, tmp_path):
    """Issue 43: `decoding` on every command that talks to a model, sweeps too. Free (the
    default, as `--decoding auto` with the sweep's providers) adds no parameter, so a sweep
    written before the option keeps its trials' keys; grounded is its own cell and reaches BCR's
    engine (the offline stand-in reads the constraint itself: no fallback line)."""
    free = expand(parse_sweep({"name": "x", "experiments": [STARS]}, "f.yaml"))
    assert all("decoding" not in t.params for t in free)
    assert [t.key for t in expand(parse_sweep({"name": "x", "experiments": [dict(STARS, decoding="free")]}, "f.yaml"))] \
        == [t.key for t in free]
    grounded = expand(parse_sweep({"name": "x", "experiments": [dict(STARS, decoding="grounded")]}, "f.yaml"))
    assert {t.params["decoding"] for t in grounded} == {"grounded"} and not {t.key for t in grounded} & {t.key for t in free}
    assert "grounded" in grounded[0].label
    with pytest.raises(ConfigError, match=r"experiments\[0\]\.decoding"):
        parse_sweep({"name": "x", "experiments": [dict(STARS, decoding="constrained")]}, "f.yaml")

    from task_learning.apps.sweeps import trial as trial_module
    from task_learning.bcr import runner

    seen: list[str] = []
    real = runner.run_trial

    def spy(*args, **kwargs):
        seen.append(kwargs["decoding"])
        return real(*args, **kwargs)

    monkeypatch.setattr(runner, "run_trial", spy)
    bcr = {"kind": "bcr", "tasks": ["make_coffee"], "seeds": 1, "trials": 1, "max_actions": 5}
    for decoding in ("grounded", "free"):
        (one,) = expand(parse_sweep({"name": "x", "experiments": [dict(bcr, decoding=decoding)]}, "f.yaml"))
        result = trial_module.run_trial("bcr", one.params, str(tmp_path), one.key)
        assert "error" not in result, result
    assert seen == ["grounded", "free"]


def test_free_and_grounded_cells_are_rows_of_their_own_named_by_their_decoding():
    from task_learning.apps.sweeps.results import StoredTrial
    from task_learning.apps.sweeps.summary import build_tables

    def stored(decoding: str | None, seed: int, completion: float) -> StoredTrial:
        params = {"scene": "tidy_kitchen", "condition": "STARS", "llm": {"name": "openai"}, "seed": seed,
                  **({"decoding": decoding} if decoding else {})}
        return StoredTrial(f"k{decoding}{seed}", "stars", "", params, "done", 1, {"completion": completion}, "", 1.0, "")

    (table,) = build_tables([stored(None, 0, 10.0), stored(None, 1, 20.0), stored("grounded", 0, 50.0)])
    assert [(row.cell["decoding"], row.estimates["completion"].mean) for row in table.rows] == [("free", 15.0),
                                                                                            ("grounded", 50.0)]
