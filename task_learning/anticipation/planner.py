"""One actor's next action toward goal literals in the household (household.py).

The proposed agent plans with it (adjacent moves only), the simulated human too (moving straight
to where it wants to be, as the traces' human does), and the offline model's Base8 answers start
from it. Greedy and deterministic: the seed's agents plan with their own (ASP) planner, which is
not in the seed; this one is ours and only needs to be sound under the feasibility rules.

Order of work for the first literal that needs something: deliver an object already held to its
destination; open a closed container something must go into (switching it off first); fetch an
object (opening what it is inside); close a container once everything is in; switch on."""
from __future__ import annotations

from typing import Iterable, Sequence

from task_learning.anticipation.household import CARRY_LIMIT, Action, Household, Literal


def _go(house: Household, actor: str, dest: str, adjacent_only: bool) -> Action:
    if not adjacent_only:
        return Action("move", (dest,))
    hops = house.path(house.at[actor], dest)
    return Action("move", (hops[0] if hops else dest,))


def _act_at(house: Household, actor: str, place: str, action: Action, adjacent_only: bool) -> Action:
    return action if house.at[actor] == place else _go(house, actor, place, adjacent_only)


def next_action(house: Household, actor: str, literals: Sequence[Literal], *, adjacent_only: bool = True,
                avoid: Iterable[str] = ()) -> Action | None:
    """The next action for `actor` toward the literals (in their order), or None when they all hold
    or nothing can be done now. `avoid`: objects not to touch (e.g. another task needs them where
    they are)."""
    avoid = set(avoid)
    pending = [lit for lit in literals if not house.holds(lit)]
    if not pending:
        return None
    held = house.held[actor]
    here = house.at[actor]
    containers = house.spec.containers
    placements = [lit for lit in pending if lit.predicate in ("on", "in")]
    # 1. deliver what is in hand (taking along a second object that lies here, as people do)
    if len(held) == 1 and not _needs_opening(house, held[0], placements):
        for lit in placements:
            obj = lit.args[0]
            if (obj not in avoid and not house.holder(obj) and house.place[obj] == here
                    and not _needs_opening(house, obj, placements)):
                return Action("grab", (obj,))
    for lit in placements:
        obj, dest = lit.args
        if obj in held:
            if lit.predicate == "in":
                c = containers[dest]
                if c.opens and dest not in house.open:
                    return _open(house, actor, dest, adjacent_only)
                return _act_at(house, actor, c.at, Action("put", (obj, dest)), adjacent_only)
            return _act_at(house, actor, dest, Action("put", (obj, dest)), adjacent_only)
    if len(held) >= CARRY_LIMIT:  # hands full of things no literal wants: put one down here
        return Action("put", (held[0], here))
    # 2. fetch the next object
    for lit in placements:
        obj = lit.args[0]
        if obj in avoid or house.holder(obj):
            continue
        inside = house.place[obj]
        if inside in containers and containers[inside].opens and inside not in house.open:
            return _open(house, actor, inside, adjacent_only)
        return _act_at(house, actor, house.location_of(obj), Action("grab", (obj,)), adjacent_only)
    if placements:
        return None  # what is left is in someone else's hands
    for lit in pending:
        target = lit.args[0]
        appliance = containers.get(target)
        if appliance is None:
            continue
        if lit.predicate == "closed":
            return _act_at(house, actor, appliance.at, Action("close", (target,)), adjacent_only)
        if lit.predicate == "switchedon":
            if appliance.switch_needs_closed and target in house.open:
                return _act_at(house, actor, appliance.at, Action("close", (target,)), adjacent_only)
            return _act_at(house, actor, appliance.at, Action("switchon", (target,)), adjacent_only)
    return None


def _open(house: Household, actor: str, target: str, adjacent_only: bool) -> Action:
    c = house.spec.containers[target]
    first = Action("switchoff", (target,)) if target in house.on else Action("open", (target,))
    return _act_at(house, actor, c.at, first, adjacent_only)


def _needs_opening(house: Household, obj: str, placements: list[Literal]) -> bool:
    """Whether the object goes into a container that opens (then it travels alone: an actor with
    two objects in hand may not open anything)."""
    return any(lit.args[0] == obj and lit.predicate == "in" and house.spec.containers[lit.args[1]].opens
               for lit in placements)
