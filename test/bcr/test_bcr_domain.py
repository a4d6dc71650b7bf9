"""BCR domain files: loading, validation errors naming file and key, grounding against worlds."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from task_learning.bcr.domain import GroundAction, load_domain
from task_learning.bcr.engines import HeuristicEngine
from task_learning.bcr.literals import StateView, parse_literal
from task_learning.bcr.runner import make_world, run_goals
from task_learning.errors import ConfigError
from task_learning.world.scene import load_scene

GOOD = """
predicates:
  holding: {arity: 1}
  visible: {arity: 1}
  near: {arity: 1}
kinds:
  pickupable: {flags: [pickupable]}
actions:
  NavigateToObject:
    params: {o: object}
    call: {action: NavigateToObject, object: o}
    effects: ["near(o)"]
  PickupObject:
    params: {o: pickupable}
    call: {action: PickupObject, object: o}
    effects: ["holding(o)"]
    blocking:
      - name: not_near
        requires: "near(o)"
        resolutions: ["near(o)"]
        actions: ["NavigateToObject(o)"]
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "domain.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_household_domain_loads_with_the_paper_actions():
    domain = load_domain("household")
    for name in ("NavigateToObject", "VisualSearch", "PickupObject", "PutObject", "OpenObject",
                 "CloseObject", "ToggleObjectOn", "ToggleObjectOff", "SliceObject"):
        assert name in domain.actions
    for predicate in ("inside", "on", "open", "switched_on", "holding", "near", "visible",
                      "sliced", "dirty", "cooked", "filled"):
        assert predicate in domain.predicates
    put = domain.actions["PutObject"]
    assert [c.name for c in put.blocking][:3] == ["not_holding", "receptacle_not_near",
                                                  "receptacle_closed"]  # the resolver order


def test_minimal_domain_loads(tmp_path):
    domain = load_domain(write(tmp_path, GOOD))
    assert set(domain.actions) == {"NavigateToObject", "PickupObject"}


def test_unknown_predicate_names_file_and_key(tmp_path):
    path = write(tmp_path, GOOD.replace('effects: ["holding(o)"]', 'effects: ["grasped(o)"]'))
    with pytest.raises(ConfigError) as err:
        load_domain(path)
    assert err.value.file == str(path)
    assert err.value.key == "actions.PickupObject.effects[0]"
    assert "unknown predicate 'grasped'" in str(err.value)


def test_resolution_naming_unknown_action(tmp_path):
    path = write(tmp_path, GOOD.replace('actions: ["NavigateToObject(o)"]',
                                        'actions: ["TeleportTo(o)"]'))
    with pytest.raises(ConfigError) as err:
        load_domain(path)
    assert err.value.key == "actions.PickupObject.blocking[0].actions[0]"
    assert "unknown action 'TeleportTo'" in str(err.value)


def test_cycle_of_resolutions_is_rejected(tmp_path):
    text = GOOD + """
  LookAt:
    params: {o: object}
    call: {action: LookAt, object: o}
    effects: ["visible(o)"]
    blocking:
      - name: must_hold
        requires: "holding(o)"
        resolutions: ["holding(o)"]
        actions: ["PickupObject(o)"]
"""
    text = text.replace('''      - name: not_near
        requires: "near(o)"
        resolutions: ["near(o)"]
        actions: ["NavigateToObject(o)"]''', '''      - name: not_visible
        requires: "visible(o)"
        resolutions: ["visible(o)"]
        actions: ["LookAt(o)"]''')
    with pytest.raises(ConfigError) as err:
        load_domain(write(tmp_path, text))
    assert "cycle of resolutions" in str(err.value)
    assert "PickupObject(o) -> LookAt(o) -> PickupObject(o)" in str(err.value) \
        or "LookAt(o) -> PickupObject(o) -> LookAt(o)" in str(err.value)


def test_contradictory_chain_is_not_a_cycle(tmp_path):
    """ToggleOn blocked by 'already on' -> ToggleOff blocked by 'already off' cannot both hold."""
    text = """
    predicates:
      switched_on: {arity: 1}
    actions:
      ToggleObjectOn:
        params: {t: object}
        call: {action: ToggleObjectOn, object: t}
        effects: ["switched_on(t)"]
        blocking:
          - {name: already_on, requires: "not switched_on(t)", resolutions: ["not switched_on(t)"],
             actions: ["ToggleObjectOff(t)"]}
      ToggleObjectOff:
        params: {t: object}
        call: {action: ToggleObjectOff, object: t}
        effects: ["not switched_on(t)"]
        blocking:
          - {name: already_off, requires: "switched_on(t)", resolutions: ["switched_on(t)"],
             actions: ["ToggleObjectOn(t)"]}
    """
    assert len(load_domain(write(tmp_path, text)).actions) == 2


@pytest.mark.parametrize("bad, key, words", [
    ('params: {o: pickupable}\n    call: {action: PickupObject, object: o}',
     "actions.PickupObject.call.object", "not a parameter"),
    ('effects: ["holding(o)"]', "actions.PickupObject.effects[0]", "not a literal"),
    ('kinds:\n  pickupable: {flags: [pickupable]}', "kinds.pickupable.flags[0]",
     "unknown AI2-THOR flag"),
])
def test_malformed_parts_are_clear(tmp_path, bad, key, words):
    replacement = {
        "actions.PickupObject.call.object":
            'params: {o: pickupable}\n    call: {action: PickupObject, object: x}',
        "actions.PickupObject.effects[0]": 'effects: ["holding o"]',
        "kinds.pickupable.flags[0]": 'kinds:\n  pickupable: {flags: [grabbable]}',
    }[key]
    with pytest.raises(ConfigError) as err:
        load_domain(write(tmp_path, GOOD.replace(bad, replacement)))
    assert err.value.key == key and words in str(err.value)


def test_yaml_syntax_error_and_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="malformed YAML"):
        load_domain(write(tmp_path, "predicates: [\n"))
    with pytest.raises(ConfigError, match="cannot read"):
        load_domain(tmp_path / "missing.yaml")


def test_any_object_into_any_receptacle_is_grounded():
    """Every pickupable object of the STARS kitchen has PutObject(x, r) as achiever of
    inside(x, r), for every receptacle r."""
    domain = load_domain("household")
    world = make_world(load_scene("tidy_kitchen"), None)
    state = StateView(world.metadata)
    things = [o for o in state.objects.values() if o.get("pickupable")]
    places = [o for o in state.objects.values() if o.get("receptacle")]
    assert len(things) >= 30 and len(places) >= 10
    for thing in things[::5]:
        for place in places:
            if place["objectId"] == thing["objectId"]:
                continue
            goal = parse_literal(f"inside({thing['objectId']}, {place['objectId']})")
            assert GroundAction("PutObject", (thing["objectId"], place["objectId"])) \
                in domain.achievers(goal, state)


@pytest.mark.parametrize("scene", ["tidy_kitchen", "store_groceries", "organize_office"])
def test_planner_goals_reach_every_preferred_place_and_close_it(scene):
    """The planner's use: inside(X, R) and, for openable R, not open(R), for every STARS object."""
    loaded = load_scene(scene)
    for object_id, places in list(loaded.preferences.items()):
        place = places[0]
        world = make_world(loaded, None)
        goals = [parse_literal(f"inside({object_id}, {place})")]
        if next(o for o in world.metadata["objects"] if o["objectId"] == place)["openable"]:
            goals.append(parse_literal(f"not open({place})"))
        result = run_goals(world, goals, HeuristicEngine())
        assert result.success, (object_id, place, result.failure, result.action_log)
        assert result.actions <= 20


def test_a_robot_world_is_near_only_what_it_navigated_to():
    metadata = {"objects": [{"objectId": "Mug|1", "objectType": "Mug", "distance": 0.8},
                            {"objectId": "Fridge|1", "objectType": "Fridge", "distance": 1.2}],
                "agent": {"location": "Fridge|1"}}
    assert StateView(metadata).is_near("Mug|1")  # AI2-THOR: within 1.75 m
    robot = StateView({**metadata, "agent": {"location": "Fridge|1", "reachM": 0.0}})
    assert robot.is_near("Fridge|1") and not robot.is_near("Mug|1")


def test_a_close_whose_arm_was_blocked_on_the_way_to_the_handle_comes_to_the_piece_again():
    """A robot's CloseObject blocked before the handle ("obstructed", the arm stopped by the
    piece from where it put something in) is resolved by navigating to the piece: without a
    condition it was a dead end (the eggs' fridge in a MuJoCo run, left open)."""
    domain = load_domain("household")
    world = make_world(load_scene("store_groceries"), None)
    world.step("NavigateToObject", objectId="Fridge|1")
    assert world.step("OpenObject", objectId="Fridge|1")["lastActionSuccess"]
    blocked = domain.check_blocking(GroundAction("CloseObject", ("Fridge|1",)), StateView(world.metadata),
                                    error_text="Fridge|1 is obstructed (not interactable from here): a joint "
                                               "did not reach its goal (blocked) (while 'before the handle')")
    assert blocked is not None and blocked.condition == "not_reachable"
    assert blocked.actions == [GroundAction("NavigateToObject", ("Fridge|1",))]
