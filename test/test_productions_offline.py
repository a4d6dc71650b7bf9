"""Bootstrapping with the offline model (NOT a language model: hand-written generic strategies) in
recorded iTHOR kitchens, persistence in the knowledge base, and the commands' bad-input handling."""
from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from task_learning.cli import main
from task_learning.kb import KnowledgeBase
from task_learning.llm.client import make_client
from task_learning.llm.offline.productions import load_teacher
from task_learning.llm.offline.provider import OfflineProvider
from task_learning.productions.agent import ProductionSet
from task_learning.productions.experiment import (
    bootstrap,
    bootstrap_into,
    families_book,
    held_out_instances,
    paper_experiment,
    run_trial,
)
from task_learning.productions.families import load_kitchen, make_instance, make_world, successes, variable_domain
from task_learning.productions.knowledge import WorldKnowledge
from task_learning.productions.memory import load_productions
from task_learning.productions.prefetch import catalogue_receptacle_types
from task_learning.productions.world import IGNORED_RECEPTACLES


def test_offline_model_is_labelled_and_its_strategies_validate() -> None:
    assert "not a language model" in OfflineProvider.label
    teacher = load_teacher()
    assert len(teacher.strategies) >= 20
    assert teacher.statement("egg is commonly stored in a/an Fridge") is True
    assert teacher.statement("egg is commonly stored in a/an Drawer") is False


def test_explore_and_find_bootstrapped_in_floorplan1_run_without_llm_in_floorplan6() -> None:
    client = make_client("offline", cache=None)
    productions, world = ProductionSet(), WorldKnowledge()
    book = families_book({})
    results = bootstrap(productions, client, world, book, families=("explore", "find"), seed=3)
    assert [r.family for r in results] == ["explore", "find"]
    assert all(r.converged for r in results), [r.to_dict() for r in results]
    assert results[0].learned and results[1].learned
    assert book[0].end_condition and book[1].end_condition  # the critic's sentences
    names = {p.name for p in productions}
    assert {"explore-move", "explore-done", "find-done"} <= names
    assert all(p.provenance.get("conversation") and p.english for p in productions)
    # held out: an explore task in another kitchen, productions only
    scene = load_kitchen("FloorPlan6")
    instance = make_instance("explore", scene, random.Random(5))
    before = client.usage.calls
    result = run_trial(instance, "bootstrapped", productions, client, book, world, seed=1)
    assert result.succeeded == 1 and result.outcome == "done"
    assert result.llm_calls == 0 and client.usage.calls == before and result.tokens == 0


def test_bootstrap_persists_productions_statements_and_end_conditions(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "kb.sqlite"
    with KnowledgeBase(db) as kb, make_client("offline", cache=None) as client:
        results, productions = bootstrap_into(kb, client, families=("explore", "find"), seed=3)
        learned = {p.name: (p.utility, p.count) for p in productions}
    with KnowledgeBase(db) as kb:
        stored = load_productions(kb)
        assert {p.name: (p.utility, p.count) for p in stored} == learned
        assert all(p.provenance["llm"] == "offline" and p.provenance["state"] for p in stored)
        assert kb.statements(), "the LLM's answers about where things are kept are cached"
        assert set(kb.family_end_conditions()) == {"explore <receptacle>", "find a/an <object>"}
    assert main(["kb", "show", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert f"productions ({len(learned)}):" in out
    assert "find-done: U=1.0000" in out and "IF task is 'find a/an <object>'" in out


@pytest.mark.parametrize("mode", ["catalogue", "met"])
def test_bootstrap_asks_world_knowledge_over_the_type_catalogue_only_in_catalogue_mode(tmp_path: Path,
                                                                                      mode: str) -> None:
    """With the catalogue prefetch, bootstrapping in FloorPlan1 asks find's "commonly stored"
    statement pattern (read from the learned rule) about receptacle types FloorPlan1 lacks, through
    the LLM client, cached in the knowledge base and counted; with `met`, only its own types."""
    train_types = {str(o["objectType"]).lower() for o in load_kitchen("FloorPlan1").objects}
    assert "diningtable" not in train_types and "sidetable" not in train_types
    with KnowledgeBase(tmp_path / "kb.sqlite") as kb, make_client("offline", cache=None) as client:
        results, _ = bootstrap_into(kb, client, families=("explore", "find"), seed=3, max_instances=6,
                                    world_knowledge=mode)
        stored = kb.statements()
        calls = client.usage.calls
    find = results[1]
    pattern = re.compile(r"^(.+) is commonly stored in a/an (\w+)$")
    kinds = {m.group(2) for m in map(pattern.match, stored) if m}
    assert kinds and all(pattern.match(s) for s in stored), sorted(stored)
    if mode == "catalogue":
        assert {"diningtable", "sidetable"} <= kinds
        things = {m.group(1) for m in map(pattern.match, stored) if m}
        catalogue = {t.lower() for t in catalogue_receptacle_types(IGNORED_RECEPTACLES)}
        assert kinds == catalogue and len(stored) == len(things) * len(catalogue)  # every kind met x every type
        assert not any(stored[f"{thing} is commonly stored in a/an diningtable"] for thing in things)
        assert 0 < find.catalogue_statements <= find.statements and 0 < find.catalogue_tokens <= find.tokens
        assert calls >= len(stored)  # every statement was one call through the client
    else:
        assert kinds <= train_types, kinds - train_types
        assert find.catalogue_statements == 0 and find.catalogue_tokens == 0


@pytest.mark.slow
def test_full_curriculum_then_held_out_slice_and_clear_need_no_llm() -> None:
    """Bootstrap the five families in FloorPlan1; on held-out kitchens slice and clear run on
    productions alone (0 LLM calls, as the paper's 0 tokens), find succeeds."""
    client = make_client("offline", cache=None)
    productions, world = ProductionSet(), WorldKnowledge()
    book = families_book({})
    results = bootstrap(productions, client, world, book, seed=0)
    assert all(r.converged for r in results)
    assert 15 <= len(productions) <= 30  # the paper: 27
    for family in ("slice", "clear", "find"):
        instance = held_out_instances(family, ["FloorPlan6", "FloorPlan14"], seed=0)[0]
        result = run_trial(instance, "bootstrapped", productions, client, book, world, seed=0)
        assert result.succeeded == result.units, result
        if family != "find":  # no action from the LLM; only new "commonly stored" statements may be asked
            assert result.llm_decisions == 0, result
        baseline = run_trial(instance, "action-only", productions, client, book, world, seed=0)
        assert baseline.llm_calls >= baseline.steps > 0


@pytest.mark.slow
def test_bootstrapping_draws_every_kind_until_no_llm_then_held_out_slice_asks_nothing() -> None:
    """The curriculum draws every kind of the family's variable present in FloorPlan1 and repeats
    until the task runs on productions alone, a world-knowledge statement counting as using the
    LLM; the statements slicing needs are then asked and cached in training, and slicing on
    FloorPlan6 and FloorPlan14 (no receptacle type FloorPlan1 lacks) asks the LLM nothing."""
    client = make_client("offline", cache=None)
    productions, world = ProductionSet(), WorldKnowledge()
    book = families_book({})
    results = {r.family: r for r in bootstrap(productions, client, world, book, seed=0)}
    train = load_kitchen("FloorPlan1")
    for family, result in results.items():
        assert result.converged and set(variable_domain(family, train)) <= set(result.kinds), result.to_dict()
    assert results["slice"].kinds[:5] and sorted(results["slice"].kinds[:5]) == variable_domain("slice", train) == \
        ["Apple", "Bread", "Lettuce", "Potato", "Tomato"]  # each kind first, in a shuffled order
    assert results["find"].statements > 0  # asked in training, counted
    asked = len(world.asked)
    for instance in held_out_instances("slice", ["FloorPlan6", "FloorPlan14"], seed=0):
        result = run_trial(instance, "bootstrapped", productions, client, book, world, seed=0)
        assert result.succeeded == 1 and result.llm_calls == 0 and result.tokens == 0, result
    assert len(world.asked) == asked


@pytest.mark.slow
def test_paper_experiment_table_rows(tmp_path: Path) -> None:
    with KnowledgeBase(tmp_path / "kb.sqlite") as kb, make_client("offline", cache=None) as client:
        data = paper_experiment(kb, client, test_scenes=["FloorPlan14"], families=["clear"])
    rows = {(r["family"], r["agent"]): r for r in data["rows"]}
    assert set(rows) == {("clear", "action-only"), ("clear", "bootstrapped")}
    assert rows[("clear", "bootstrapped")]["tokens"] == 0.0
    assert rows[("clear", "action-only")]["tokens"] > 0
    assert rows[("clear", "bootstrapped")]["success"] == "15/15"


def test_instances_shuffle_the_target_and_score_from_the_world() -> None:
    scene = load_kitchen("FloorPlan6")
    instance = make_instance("slice", scene, random.Random(2), kind="Apple")
    world, adapter = make_world(instance, scene)
    oid, place = instance.moves[0]
    assert place in world.metadata["objects"][[o["objectId"] for o in world.metadata["objects"]].index(oid)][
        "parentReceptacles"]
    assert successes(instance, world, adapter) == 0
    assert scene.slice_requires_knife  # slicing needs a knife, as in AI2-THOR


@pytest.mark.parametrize("argv, message", [
    (["bootstrap", "--db", "{db}", "--families", "explore,bake"], "unknown task family bake"),
    (["bootstrap", "--db", "{db}", "--train-scene", "FloorPlan999"], "FloorPlan999"),
    (["bootstrap", "--db", "{db}", "--train-scene", "kitchen"], "expected a FloorPlan name"),
    (["bootstrap", "--db", "{db}", "--max-instances", "0"], "must be between 1 and 100"),
    (["experiment", "--paper", "bootstrapping", "--db", "{db}", "--test-scenes", "FloorPlan1,FloorPlan6"],
     "also a test floor plan"),
    (["experiment", "--paper", "nonsense"], "invalid choice"),
    (["experiment", "--paper", "bootstrapping", "--db", "{db}", "--families", "find,pick_place"],
     "unknown task family pick_place (known: find, slice, clear)"),
    (["experiment", "--paper", "bootstrapping", "--db", "{db}", "--backend", "unity"], "invalid choice: 'unity'"),
    (["experiment", "--paper", "stars", "--backend", "ai2thor"], "apply to --paper bootstrapping only"),
])
def test_bad_input_is_one_line_exit_2(argv: list[str], message: str, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "kb.sqlite"
    code = main([a.replace("{db}", str(db)) for a in argv])
    err = capsys.readouterr().err
    assert code == 2
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    if db.exists():
        with KnowledgeBase(db) as kb:
            assert kb.productions() == []


def test_bootstrap_command_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "kb.sqlite"
    assert main(["bootstrap", "--db", str(db), "--families", "explore", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["families"][0]["family"] == "explore" and data["families"][0]["converged"]
    assert {p["name"] for p in data["productions"]} == {"explore-move", "explore-open", "explore-done"}
    assert "NOT a language model" in data["note"]


def test_productions_export_and_import(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import yaml

    source, target, bad_target = tmp_path / "a.sqlite", tmp_path / "b.sqlite", tmp_path / "c.sqlite"
    assert main(["bootstrap", "--db", str(source), "--families", "explore", "--json"]) == 0
    out = tmp_path / "kb.yaml"
    assert main(["kb", "export", "--db", str(source), "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["kb", "import", "--db", str(target), str(out)]) == 0
    printed = capsys.readouterr().out
    assert "and 3 productions (unapproved)" in printed and "1 family end conditions" in printed
    with KnowledgeBase(source) as a, KnowledgeBase(target) as b:
        assert [(p.name, p.utility, p.count) for p in load_productions(a)] == \
               [(p.name, p.utility, p.count) for p in load_productions(b)]
        # Free text nobody reviewed is left out (issue 34): end conditions, English, provenance.
        assert a.family_end_conditions() and b.family_end_conditions() == {}
        assert all(p.provenance == {"imported_from": str(out)} and p.english == "" for p in load_productions(b))
        assert {r["approval"] for r in b.productions()} == {"none"}
    data = yaml.safe_load(out.read_text())
    data["productions"][1]["rule"]["conditions"] = ["os_system(<r>)"]
    out.write_text(yaml.safe_dump(data))
    assert main(["kb", "import", "--db", str(bad_target), str(out)]) == 2
    err = capsys.readouterr().err
    assert "productions[1]" in err and "unknown predicate 'os_system'" in err
    with KnowledgeBase(bad_target) as c:
        assert c.productions() == [] and c.goals() == []  # all or nothing


def test_a_dead_endpoint_stops_bootstrapping_with_its_reason() -> None:
    from task_learning.errors import LLMUnavailableError
    from task_learning.llm.base import ConnectionProviderError, LLMRequest, LLMResponse
    from task_learning.llm.client import LLMClient

    class Dead:
        name, model = "dead", "nothing"

        def complete(self, request: LLMRequest, timeout_s: float) -> LLMResponse:
            raise ConnectionProviderError("cannot reach http://127.0.0.1:9/v1")

    client = LLMClient(Dead(), cache=None, max_retries=0, breaker_failures=1, sleep=lambda s: None)
    productions = ProductionSet()
    with pytest.raises(LLMUnavailableError, match="cannot reach"):
        bootstrap(productions, client, WorldKnowledge(), families_book({}), families=("explore",))
    assert len(productions) == 0
