"""Closed destinations are opened before the object is carried (planning.executor)."""
from __future__ import annotations

from task_learning.planning.executor import doors_to_open_first
from task_learning.types import GoalLiteral, Truth


def _world(held: str = "", fridge_open: bool = False, apple_in: str = "") -> dict:
    return {"objects": [
        {"objectId": "Fridge|1", "objectType": "Fridge", "openable": True, "receptacle": True, "isOpen": fridge_open,
         "receptacleObjectIds": [apple_in] if apple_in else []},
        {"objectId": "CounterTop|1", "objectType": "CounterTop", "receptacle": True},
        {"objectId": "Apple|1", "objectType": "Apple", "pickupable": True,
         "parentReceptacles": ["Fridge|1"] if apple_in else [], "isPickedUp": held == "Apple|1"}],
        "inventoryObjects": [{"objectId": held, "objectType": "Apple"}] if held else [], "agent": {}}


GOAL = [GoalLiteral("inside", ("Apple|1", "Fridge|1")), GoalLiteral("open", ("Fridge|1",), Truth.FALSE)]


def test_a_closed_destination_is_opened_first_with_the_hand_empty():
    assert doors_to_open_first(_world(), GOAL) == [GoalLiteral("open", ("Fridge|1",))]


def test_nothing_first_when_holding_open_already_or_there_already_or_not_a_door():
    assert doors_to_open_first(_world(held="Apple|1"), GOAL) == []
    assert doors_to_open_first(_world(fridge_open=True), GOAL) == []
    assert doors_to_open_first(_world(apple_in="Apple|1"), GOAL) == []
    assert doors_to_open_first(_world(), [GoalLiteral("inside", ("Apple|1", "CounterTop|1"))]) == []
