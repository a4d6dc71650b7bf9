"""AI2-THOR's context-sensitive state changes, as a small rule table.

AI2-THOR changes object states as a side effect of where things are and what is switched on:
a dirty bowl under a running faucet becomes clean, a mug in a running coffee machine fills with
coffee, bread in a running toaster gets cooked. The symbolic world applies every rule after each
successful action until nothing changes, so the order of actions does not matter ("put the mug in,
then switch on" equals "switch on, then put the mug in").

To add a rule (e.g. for a BCR scene), append a `StateRule` to `RULES` or pass your own tuple to
`SymbolicWorld(scene, rules=...)`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

Record = dict[str, Any]


@dataclass(frozen=True)
class StateRule:
    """When a device of `device_types` is on (or always, if `needs_on` is False), every object
    resting directly in/on a place of `place_types` (empty: in/on the device itself) for which
    `applies` holds gets the keys of `effect`."""

    name: str
    device_types: tuple[str, ...]
    applies: Callable[[Record], bool]
    effect: Mapping[str, Any]
    place_types: tuple[str, ...] = ()
    needs_on: bool = True
    nested: bool = False  # also objects inside objects in the place (a fork in a bowl in the fridge)
    description: str = ""

    def changes(self, objects: Mapping[str, Record],
                by_type: Mapping[str, list[Record]] | None = None) -> list[tuple[str, str, Any]]:
        """(object id, key, new value) for every state this rule would change now."""
        if by_type is None:
            by_type = index_by_type(objects)
        devices = [o for t in self.device_types for o in by_type.get(t, ())
                   if (o.get("isToggled") or not self.needs_on) and not o.get("isBroken")]
        if not devices:
            return []
        if self.place_types:
            places = [o for t in self.place_types for o in by_type.get(t, ())]
        else:
            places = devices
        result: list[tuple[str, str, Any]] = []
        for place in places:
            for child_id in self._contents(place, objects):
                child = objects.get(child_id)
                if child is None or child.get("isPickedUp") or not self.applies(child):
                    continue
                for key, value in self.effect.items():
                    if child.get(key) != value:
                        result.append((child_id, key, value))
        return result

    def _contents(self, place: Record, objects: Mapping[str, Record]) -> list[str]:
        direct = list(place.get("receptacleObjectIds") or [])
        if not self.nested:
            return direct
        found: list[str] = []
        stack = direct[::-1]
        while stack:
            oid = stack.pop()
            if oid in found or oid not in objects:
                continue
            found.append(oid)
            stack.extend(reversed(objects[oid].get("receptacleObjectIds") or []))
        return found


def index_by_type(objects: Mapping[str, Record]) -> dict[str, list[Record]]:
    by_type: dict[str, list[Record]] = {}
    for record in objects.values():
        by_type.setdefault(record["objectType"], []).append(record)
    return by_type


def _dirty(o: Record) -> bool:
    return bool(o.get("dirtyable") and o.get("isDirty"))


def _fillable_empty(o: Record) -> bool:
    return bool(o.get("canFillWithLiquid") and not o.get("isFilledWithLiquid"))


def _fillable(o: Record) -> bool:
    return bool(o.get("canFillWithLiquid")) and o.get("fillLiquid") != "coffee"


def _cookable(o: Record) -> bool:
    return bool(o.get("cookable") and not o.get("isCooked"))


RULES: tuple[StateRule, ...] = (
    StateRule(
        name="rinse",
        device_types=("Faucet",),
        place_types=("Sink", "SinkBasin"),
        applies=_dirty,
        effect={"isDirty": False},
        description="a dirty object in a sink under a running faucet becomes clean",
    ),
    StateRule(
        name="fill with water",
        device_types=("Faucet",),
        place_types=("Sink", "SinkBasin"),
        applies=_fillable_empty,
        effect={"isFilledWithLiquid": True, "fillLiquid": "water"},
        description="an empty fillable object in a sink under a running faucet fills with water",
    ),
    StateRule(
        name="brew coffee",
        device_types=("CoffeeMachine",),
        applies=_fillable,
        effect={"isFilledWithLiquid": True, "fillLiquid": "coffee"},
        description="a mug (fillable object) in a running coffee machine fills with coffee",
    ),
    StateRule(
        name="toast",
        device_types=("Toaster",),
        applies=_cookable,
        effect={"isCooked": True, "temperature": "Hot"},
        description="a bread slice (cookable object) in a running toaster gets cooked",
    ),
    StateRule(
        name="microwave",
        device_types=("Microwave",),
        applies=_cookable,
        effect={"isCooked": True, "temperature": "Hot"},
        description="a cookable object in a running microwave gets cooked",
    ),
    StateRule(
        name="wash dishes",
        device_types=("Dishwasher",),
        applies=_dirty,
        effect={"isDirty": False},
        nested=True,
        description="dirty dishes in a running dishwasher become clean",
    ),
    StateRule(
        name="chill",
        device_types=("Fridge",),
        applies=lambda o: o.get("temperature") != "Cold",
        effect={"temperature": "Cold"},
        needs_on=False,
        nested=True,
        description="whatever is in the fridge becomes cold",
    ),
)


@dataclass
class AppliedChange:
    rule: str
    object_id: str
    key: str
    old: Any
    new: Any = field(default=None)


def apply_rules(objects: Mapping[str, Record], rules: Iterable[StateRule] = RULES,
                max_rounds: int = 10) -> list[AppliedChange]:
    """Apply rules until nothing changes (bounded); returns what changed, in order."""
    rules = tuple(rules)
    applied: list[AppliedChange] = []
    by_type = index_by_type(objects)  # rules change states, never types or membership
    for _ in range(max_rounds):
        changed = False
        for rule in rules:
            for object_id, key, value in rule.changes(objects, by_type):
                record = objects[object_id]
                applied.append(AppliedChange(rule.name, object_id, key, record.get(key), value))
                record[key] = value
                changed = True
        if not changed:
            break
    return applied
