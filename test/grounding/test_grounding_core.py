"""Grounding core on hand-built world states: perception before the affordance knowledge base,
perceived names as vocabulary, grounding rules, bad input, and config validation."""
from __future__ import annotations

from pathlib import Path

import pytest

from task_learning.errors import ConfigError, UnknownObjectError
from task_learning.grounding import GroundingKnowledge, analyze_goal
from task_learning.grounding.affordances import load_affordances
from task_learning.grounding.grammar import load_grammar
from task_learning.grounding.lexicon import load_lexicon, pluralize
from task_learning.inputs.config import config_path
from task_learning.types import MismatchKind, WorldObject, WorldState
from test.shared_paths import FLOORPLAN1

G = "the goal is that "


def obj(object_id: str, parent: str = "", *, visible: bool = True, distance: float = 1.0,
        **props) -> WorldObject:
    object_type = object_id.split("|")[0]
    return WorldObject(object_id=object_id, object_type=object_type,
                       parent_receptacles=[parent] if parent else [], visible=visible,
                       distance=distance, properties={"objectId": object_id, "objectType": object_type,
                                                      **props})


def world(*objects: WorldObject) -> WorldState:
    return WorldState(scene="hand_built", objects=list(objects))


def kinds(analysis):
    return [m.kind for m in analysis.mismatches]


# --- affordances: perception first, knowledge base for the rest

def test_knowledge_base_fills_missing_perception():
    state = world(obj("Mug|1", "CounterTop|1"), obj("CounterTop|1"), obj("Cupboard|1"))
    analysis = analyze_goal(G + "the mug is in the cupboard and the cupboard is closed", state)
    assert analysis.viable
    assert [str(x) for x in analysis.literals] == ["inside(Mug|1, Cupboard|1)", "false:open(Cupboard|1)"]


def test_perceived_property_overrides_the_knowledge_base():
    # a dish rack perception reports as pickupable (a small one) may be moved ...
    light_rack = world(obj("DishRack|1", pickupable=True), obj("Cupboard|1"))
    assert analyze_goal(G + "the dish rack is in the cupboard", light_rack).viable
    # ... a mug glued down (pickupable false) may not, though the knowledge base says grabbable
    glued = world(obj("Mug|1", pickupable=False), obj("Cupboard|1"))
    analysis = analyze_goal(G + "the mug is in the cupboard", glued)
    assert kinds(analysis) == [MismatchKind.AFFORDANCE_MISMATCH]
    assert analysis.feedback == "No. Mug is not grabbable."


def test_perceived_null_falls_back_to_the_knowledge_base():
    state = world(obj("Mug|1", pickupable=None), obj("Cupboard|1", openable=None, receptacle=None))
    assert analyze_goal(G + "the mug is in the cupboard and the cupboard is closed", state).viable


def test_receptacle_flag_gates_in_and_on():
    no_place = world(obj("Mug|1"), obj("Cupboard|1", receptacle=False))
    assert analyze_goal(G + "the mug is in the cupboard", no_place).feedback == \
        "No. Cupboard is not a receptacle."
    # a perceived receptacle of a type the knowledge base does not know takes both in and on
    unknown = world(obj("Mug|1"), obj("Hutch|1", receptacle=True))
    assert analyze_goal(G + "the mug is in the hutch", unknown).viable
    assert analyze_goal(G + "the mug is on the hutch", unknown).viable


def test_fillable_from_perception():
    state = world(obj("DishRack|1", canFillWithLiquid=True))
    assert analyze_goal(G + "the dish rack is empty", state).viable
    state = world(obj("Pitcher|1", canFillWithLiquid=True))
    assert [str(x) for x in analyze_goal(G + "the pitcher is full of water", state).literals] == \
        ["filled(Pitcher|1)"]


# --- vocabulary: perceived type names are known nouns

def test_perceived_type_names_become_nouns():
    state = world(obj("WaterPitcher|1", pickupable=True), obj("Cupboard|1"))
    analysis = analyze_goal(G + "the water pitcher is in the cupboard", state)
    assert analysis.viable
    assert analysis.literals[0].args == ("WaterPitcher|1", "Cupboard|1")
    # the same word is unknown where no such object is perceived
    other = world(obj("Cupboard|1"))
    assert kinds(analyze_goal(G + "the water pitcher is in the cupboard", other)) == \
        [MismatchKind.UNKNOWN_WORD]


def test_spoken_name_of_a_type_the_lexicon_lists_under_another_name():
    # the lexicon grounds "shelf" to ShelvingUnit, and perception also names it "shelving unit"
    state = world(obj("Book|1"), obj("ShelvingUnit|1", receptacle=True))
    assert analyze_goal(G + "the book is on the shelving unit", state).viable
    assert analyze_goal(G + "the book is on the shelf", state).literals[0].args[1] == "ShelvingUnit|1"


def test_plural_of_a_perceived_type():
    state = world(obj("WaterPitcher|1", pickupable=True), obj("WaterPitcher|2", pickupable=True),
                  obj("Cupboard|1"))
    assert len(analyze_goal(G + "the water pitchers are in the cupboard", state).literals) == 2


def test_plural_generation():
    assert pluralize(("box", "of", "aluminum", "foil")) == ("boxes", "of", "aluminum", "foil")
    assert pluralize(("dish", "rack")) == ("dish", "racks")
    assert pluralize(("steak", "knife")) == ("steak", "knives")
    assert pluralize(("dictionary",)) == ("dictionaries",)


# --- grounding choices

def test_context_object_wins_over_visibility_and_distance():
    state = world(obj("Mug|1", "CounterTop|1", distance=0.1), obj("Mug|2", "DishRack|1", distance=9,
                  visible=False), obj("CounterTop|1"), obj("DishRack|1"), obj("Cupboard|1"))
    assert analyze_goal(G + "the mug is in the cupboard", state, "Mug|2").literals[0].args[0] == "Mug|2"
    assert analyze_goal(G + "the mug is in the cupboard", state).literals[0].args[0] == "Mug|1"


def test_without_context_prefers_the_object_the_goal_can_use():
    # two drawers: only the second is a receptacle, so "in the drawer" means it
    state = world(obj("Mug|1"), obj("Drawer|1", receptacle=False, distance=0.5),
                  obj("Drawer|2", distance=3.0))
    assert analyze_goal(G + "the mug is in the drawer", state).literals[0].args[1] == "Drawer|2"
    # all else equal: visible, then nearest, then lowest number
    state = world(obj("Mug|1"), obj("Drawer|10", distance=1.0), obj("Drawer|2", distance=1.0),
                  obj("Drawer|3", distance=0.2, visible=False))
    assert analyze_goal(G + "the mug is in the drawer", state).literals[0].args[1] == "Drawer|2"


def test_modifier_selects_by_place():
    state = world(obj("Knife|1", "DiningTable|1"), obj("Knife|2", "Drawer|1"), obj("DiningTable|1"),
                  obj("Drawer|1"), obj("Sink|1"))
    literal = analyze_goal(G + "the knife in the drawer is in the sink", state).literals[0]
    assert literal.args == ("Knife|2", "Sink|1")
    missing = analyze_goal(G + "the knife on the counter is in the sink", state)
    assert missing.feedback == "No. Cannot see a counter."


def test_noun_preferred_type_order():
    # "garbage" means the garbage can before the recycling bin
    state = world(obj("Mug|1"), obj("RecyclingBin|1", distance=0.1), obj("GarbageCan|1", distance=5))
    assert analyze_goal(G + "the mug is in the garbage", state).literals[0].args[1] == "GarbageCan|1"
    only_recycling = world(obj("Mug|1"), obj("RecyclingBin|1"))
    assert analyze_goal(G + "the mug is in the garbage", only_recycling).literals[0].args[1] == \
        "RecyclingBin|1"


def test_held_object_grounds_like_any_other():
    state = world(obj("Mug|1", isPickedUp=True), obj("Sink|1"))
    state.held_object_ids = ["Mug|1"]
    assert analyze_goal(G + "the mug is in the sink", state, "Mug|1").viable


# --- bad input: a verdict or a clear error, never a traceback

@pytest.mark.parametrize("sentence,subject", [
    ("", ""), ("   ", ""), ("...", ""), ("\x00", "U+0000"),
    (G + "the mug is in the\x07 cupboard", "U+0007"), (G + "the mug\x1b[31m is red", "U+001B"),
])
def test_bad_sentences_are_uninterpretable(sentence, subject):
    state = world(obj("Mug|1"), obj("Cupboard|1"))
    analysis = analyze_goal(sentence, state)
    assert not analysis.viable and kinds(analysis) == [MismatchKind.UNINTERPRETABLE]
    assert analysis.mismatches[0].subject == subject


def test_huge_input_is_rejected_quickly():
    state = world(obj("Mug|1"), obj("Cupboard|1"))
    analysis = analyze_goal(G + "the mug is in the cupboard and " * 400, state)
    assert kinds(analysis) == [MismatchKind.UNINTERPRETABLE]
    assert "too long" in analysis.mismatches[0].detail
    analysis = analyze_goal("x" * 10240, state)
    assert "too long" in analysis.mismatches[0].detail


def test_too_many_clauses():
    state = world(obj("Mug|1"), obj("Cupboard|1"))
    sentence = G + " and ".join(["the cupboard is closed"] * 13)
    assert "more than 12" in analyze_goal(sentence, state).mismatches[0].detail


def test_non_ascii():
    state = world(obj("Mug|1"), obj("Cupboard|1"))
    analysis = analyze_goal(G + "la tasse est dans le placard \u00e9t\u00e9 \u2603", state)
    assert kinds(analysis)[0] is MismatchKind.UNKNOWN_WORD
    # typographic apostrophes and dashes read as ASCII ones
    assert analyze_goal(G + "the mug is in the cupboard\u2026", state).viable
    analysis = analyze_goal("\u201cthe goal is that the mug is in the cupboard\u201d", state)
    assert analysis.viable


def test_non_string_sentence():
    state = world(obj("Mug|1"))
    assert kinds(analyze_goal(None, state)) == [MismatchKind.UNINTERPRETABLE]  # type: ignore[arg-type]


def test_unknown_context_object_is_a_clear_error():
    with pytest.raises(UnknownObjectError, match="Spaceship"):
        analyze_goal(G + "the mug is in the cupboard", world(obj("Mug|1")), "Spaceship|1")


def test_empty_world():
    analysis = analyze_goal(G + "the mug is in the cupboard", world())
    assert [m.subject for m in analysis.mismatches] == ["mug", "cupboard"]


# --- configuration validation: errors name the file and the key

def _copy_config(tmp_path: Path) -> Path:
    folder = tmp_path / "grounding"
    folder.mkdir()
    for name in ("lexicon.yaml", "grammar.yaml", "affordances.yaml"):
        (folder / name).write_text(config_path("grounding", name).read_text())
    return folder


def test_shipped_config_loads():
    knowledge = GroundingKnowledge.load()
    assert "started" not in knowledge.lexicon.known_words
    assert {"turned", "tidy", "clean", "on"} <= knowledge.lexicon.known_words
    assert "clean" not in knowledge.lexicon.states and "on" not in knowledge.lexicon.states


@pytest.mark.parametrize("old,new,key", [
    ("  is: singular", "  is: single", "copulas.is"),
    ("  closed: {predicate: open, truth: false, needs: openable}",
     "  closed: {predicate: shut, truth: false, needs: openable}", "states.closed.predicate"),
    ("  - {names: [pantry], types: [Pantry]}", "  - {names: [pantry], typs: [Pantry]}", "nouns"),
    ("  - {names: [pantry], types: [Pantry]}", "  - {names: [pantry], types: [pantry]}", "nouns"),
    ('  "on": "on"', "  on: \"on\"", "prepositions.True"),
    ("  into: inside", "  into: beside", "prepositions.into"),
])
def test_lexicon_errors_name_file_and_key(tmp_path, old, new, key):
    folder = _copy_config(tmp_path)
    path = folder / "lexicon.yaml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(ConfigError) as err:
        load_lexicon(path)
    assert err.value.file == str(path)
    assert err.value.key and err.value.key.startswith(key)


def test_state_needing_an_unknown_affordance(tmp_path):
    folder = _copy_config(tmp_path)
    path = folder / "lexicon.yaml"
    path.write_text(path.read_text().replace("needs: fillable}", "needs: pourable}", 1))
    with pytest.raises(ConfigError, match="pourable") as err:
        GroundingKnowledge.from_files(path, folder / "grammar.yaml", folder / "affordances.yaml")
    assert err.value.key.endswith(".needs")


def test_grammar_and_affordance_errors(tmp_path):
    folder = _copy_config(tmp_path)
    grammar = folder / "grammar.yaml"
    grammar.write_text(grammar.read_text().replace("clauses: [location, state]", "clauses: [location, wish]"))
    with pytest.raises(ConfigError) as err:
        load_grammar(grammar)
    assert err.value.key == "clauses[1]"
    affordances = folder / "affordances.yaml"
    affordances.write_text(affordances.read_text().replace("affordances: [surface]", "affordances: [surfce]", 1))
    with pytest.raises(ConfigError, match="surfce") as err:
        load_affordances(affordances)
    assert err.value.key.startswith("groups.surfaces.affordances")


def test_malformed_yaml(tmp_path):
    path = tmp_path / "lexicon.yaml"
    path.write_text("articles: [the\n")
    with pytest.raises(ConfigError, match="malformed YAML"):
        load_lexicon(path)


# --- real AI2-THOR metadata (recorded FloorPlan1): real ids, many cabinets, perceived properties

def test_recorded_ai2thor_kitchen():
    import json

    from task_learning.world.state import world_state_from_metadata

    objects = list(json.loads(FLOORPLAN1.read_text()).values())
    state = world_state_from_metadata({"sceneName": "FloorPlan1_physics", "objects": objects})
    apple = next(o["objectId"] for o in objects if o["objectType"] == "Apple")
    analysis = analyze_goal(G + "the apple is in the fridge and the fridge is closed", state, apple)
    fridge = next(o["objectId"] for o in objects if o["objectType"] == "Fridge")
    assert [str(x) for x in analysis.literals] == [f"inside({apple}, {fridge})", f"false:open({fridge})"]
    # "cupboard" grounds to one of the many AI2-THOR cabinets, the same one in both clauses
    cupboard = analyze_goal(G + "the apple is in the cupboard and the cupboard is closed", state, apple)
    assert cupboard.viable
    assert cupboard.literals[0].args[1] == cupboard.literals[1].args[0]
    assert cupboard.literals[0].args[1].startswith("Cabinet|")
    # perceived sliceable, not fillable; "sink" means the sink basin, the receptacle part of the sink
    assert analyze_goal(G + "the apple is sliced", state, apple).viable
    assert analyze_goal(G + "the apple is empty", state, apple).feedback == \
        "No. Apple cannot have property empty."
    basin = analyze_goal(G + "the apple is in the sink", state, apple).literals[0].args[1]
    assert state.by_id()[basin].object_type == "SinkBasin"
