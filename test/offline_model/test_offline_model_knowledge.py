"""The offline model's editable knowledge: validated on load, covers the paper's objects, and never
touches ground truth."""
from __future__ import annotations

import ast
import re
import shutil
from pathlib import Path

import pytest
import yaml

from task_learning import offline_model
from task_learning.errors import ConfigError
from task_learning.inputs.config import config_path
from task_learning.offline_model.stars.knowledge import load_knowledge

PAPER_OBJECTS = [  # the STARS paper Tables 4, 5 and 7, spoken names
    "plastic bottle", "soda can", "coke can", "pepsi can", "newspaper", "apple core", "paper plate",
    "plastic fork", "plastic cup", "paper cup", "paring knife", "metal fork", "steak knife",
    "bottle opener", "corkscrew", "ceramic plate", "plate", "glass tumbler", "mug", "ceramic bowl",
    "coffee grinder", "cereal box", "box of aluminum foil", "pop tart box", "granola bars", "crackers",
    "milk", "half and half", "ketchup", "jar of salsa", "apple juice",
    "plastic cups", "paper plates", "flour", "boxed pasta", "can of beans", "granola", "chips", "yogurt",
    "cream", "hummus", "apple cider", "cheese", "orange juice", "eggs", "butter",
    "folder", "file", "paper coffee cup", "tissue", "plastic water bottle", "sprite can", "dictionary",
    "novel", "book", "stapler", "pencil", "pen",
]
AI2THOR_TYPES = ["Apple", "Bread", "Tomato", "Egg", "Potato", "Lettuce", "Cup", "Plate", "Bowl", "Knife",
                 "Spatula", "Pot", "Pan", "Book", "CellPhone", "KeyChain", "Pencil"]


@pytest.fixture(scope="module")
def knowledge():
    return load_knowledge()


def test_every_paper_object_and_common_ai2thor_type_is_known(knowledge):
    for name in PAPER_OBJECTS + AI2THOR_TYPES:
        resolved, known = knowledge.resolve_object(name)
        assert known, name
        profile = knowledge.profile(name, "table")
        assert profile.known and abs(sum(profile.completion.values()) - 1.0) < 1e-9
        assert profile.judgement


def test_name_resolution_falls_back_sensibly(knowledge):
    assert knowledge.resolve_object("rusty steak knife") == ("steak knife", True)
    assert knowledge.resolve_object("Keychain") == ("key chain", True)
    assert knowledge.resolve_object("pencils") == ("pencil", True)
    assert knowledge.resolve_object("quantum widget")[1] is False
    generic = knowledge.profile("quantum widget", "shelf")
    assert not generic.known and generic.category.name == "generic" and generic.completion


def test_plurals(knowledge):
    assert knowledge.is_plural("granola bars") and knowledge.is_plural("eggs") and knowledge.is_plural("chips")
    for singular in ["hummus", "glass tumbler", "can of beans", "half and half", "box of aluminum foil", "tissue"]:
        assert not knowledge.is_plural(singular), singular


def test_profiles_are_deterministic_and_vary_between_objects(knowledge):
    a = load_knowledge().profile("cereal box", "table")
    b = knowledge.profile("cereal box", "table")
    assert a.completion == b.completion
    c = knowledge.profile("crackers", "table")  # same category, hashed variation
    assert a.completion != c.completion and set(a.completion) == set(c.completion)


def test_starting_place_conditions_beliefs(knowledge):
    rack = knowledge.profile("mug", "dish rack")
    counter = knowledge.profile("mug", "counter")
    assert max(rack.judgement, key=rack.judgement.get) in ("cupboard", "cabinet")
    assert counter.completion["sink"] > rack.completion["sink"]
    assert knowledge.profile("mug", "counter top").completion == counter.completion  # alias


def test_offline_package_never_reads_ground_truth():
    """The model may not look at scenes or preferences (a real LLM does not see them)."""
    sources = sorted(Path(offline_model.__file__).parent.rglob("*.py"))
    assert len(sources) > 10  # the whole stand-in, its stars/ responder too: never a vacuous pass
    for source in sources:
        if source.name == "bcr.py":
            continue
        tree = ast.parse(source.read_text(encoding="utf-8"))
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)) and node.body
                      and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
        used: list[str] = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                used.append(node.id)
            elif isinstance(node, ast.Attribute):
                used.append(node.attr)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                used += [getattr(node, "module", "") or ""] + [a.name for a in node.names]
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                used.append(node.value)
        code = "\n".join(used)
        for forbidden in ("preferences", "preferred", "load_scene", "scenes", "task_learning.world",
                          "ground_truth"):
            assert forbidden not in code, f"{source.name} uses {forbidden!r}"


# ------------------------------------------------------------------ validation

@pytest.fixture()
def config_copy(tmp_path):
    folder = tmp_path / "offline_model"
    shutil.copytree(config_path("offline_model"), folder)
    return folder


def _edit(path: Path, change) -> None:
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data))


def test_misspelled_key_names_file_and_key(config_copy):
    _edit(config_copy / "places.yaml", lambda d: d["places"]["cupboard"].update({"relaton": "in"}))
    with pytest.raises(ConfigError) as err:
        load_knowledge(config_copy)
    msg = str(err.value)
    assert "places.yaml" in msg and "places.cupboard.relaton" in msg and "did you mean 'relation'" in msg


def test_negative_weight_and_unknown_category_are_rejected(config_copy):
    _edit(config_copy / "objects.yaml", lambda d: d["categories"]["dishware"]["completion"]["default"].update({"sink": -1}))
    with pytest.raises(ConfigError, match=r"objects.yaml: categories.dishware.completion.default.sink"):
        load_knowledge(config_copy)


def test_unknown_category_of_an_object(config_copy):
    _edit(config_copy / "objects.yaml", lambda d: d["objects"].update({"mug": "dishwear"}))
    with pytest.raises(ConfigError, match=re.escape("objects.mug.category: unknown category 'dishwear'")):
        load_knowledge(config_copy)


def test_malformed_yaml_is_a_config_error(config_copy):
    (config_copy / "language.yaml").write_text("opening: [unclosed\n")
    with pytest.raises(ConfigError, match=r"language\.yaml"):
        load_knowledge(config_copy)


def test_missing_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        load_knowledge(tmp_path)
