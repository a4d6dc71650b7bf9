"""Where the hand goes to take an object and to let one go: plain geometry in `map` (REP-103, z
up), from what the robot believes about the object and the place (its volume, its walls).

A grasp takes an object a little below its top (the finger pads' centre GRASP_BELOW_TOP_M down),
never so low that the pads' tips touch what it stands on. How the object then sits in the hand
(`Hold`) depends on the way it was taken: from above, it hangs along the fingers; turned level to
go into a compartment or onto a shelf, it lies along the fingers, reaching past them, its long
level side upright (a carton standing in a bag goes in as a plank, a pot of hummus as a wheel).
A place releases the held object just clear of what it falls onto: the place's floor (a table, a
shelf, a compartment: its lowest point as it lies in the level hand, and the hand's housing
clear), the rim of its walls (a bin, a bag, a drawer's tray). Objects go into a place three
abreast, the deepest row first: an object put in front first stands in the way of the held one
(level, reaching past the gripper) on the way to a spot behind it. A held object that reaches a
row or more past the gripper goes into the nearest row (its approach starts that much further
out, and the arm reaches no deeper); one that reaches over a filled row behind its spot is let go
at least half way up a compartment, above that row.

The figures were measured with the simulated Fetch (scripts/sim_skills_check.py, whose
ground-truth view uses these same functions).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from task_learning.robot.goals import Vec3
from task_learning.robot.sequences import TOP_DOWN_BELOW_M

GRASP_BELOW_TOP_M = 0.035  # the finger pads' centre below an object's top
PADS_ABOVE_BOTTOM_M = 0.04  # ... and no lower above its bottom (the pads' tips stay off the floor)
RELEASE_CLEARANCE_M = 0.03  # between a released object's lowest point and what it falls onto
LYING_HALF_M = 0.06  # an object put level over walls lies on its side: its lowest point this far below the hand
HAND_BELOW_M = 0.065  # the gripper's housing below the level hand's axis (the Fetch's: 0.063 m)
UNKNOWN_HANG_M = 0.1  # the hand above the held object's bottom when its height is not known
SPOT_DEEPEST_M = 0.32  # the first row of spots behind a place's front ...
SPOT_BACK_MARGIN_M = 0.25  # ... but this far before its back (a held object reaches past the gripper)
SPOT_NEAREST_M = 0.12  # and no row nearer the front than this
SPOT_ROW_M = 0.1
SPOT_ABREAST_M = 0.15
ABREAST = 3  # spots in a row
SPOT_SIDE_MARGIN_M = 0.06


@dataclass(frozen=True)
class Place:
    """What the robot believes of a place to put things, now: its volume's centre (map x, y),
    the heading out of its front, its half depth (along that heading) and half width, the
    heights (map z) of its floor, its top and its walls' rim (the floor when it has none),
    whether it is a compartment behind a door, and how many objects are in it."""

    x: float
    y: float
    yaw: float
    half_depth: float
    half_width: float
    floor: float
    top: float
    rim: float
    enclosed: bool = False
    holding: int = 0


def grasp_point(centre: Vec3, height: float | None) -> Vec3:
    """Where the finger pads close on an object centred at `centre`, `height` tall as it stands
    (its centre when the height is not known)."""
    if height is None:
        return centre
    top, bottom = centre[2] + height / 2, centre[2] - height / 2
    return (centre[0], centre[1], max(top - GRASP_BELOW_TOP_M, bottom + PADS_ABOVE_BOTTOM_M))


def hang(height: float | None) -> float:
    """How far the held object reaches below the hand that took it at `grasp_point`."""
    if height is None:
        return UNKNOWN_HANG_M
    return max(height - GRASP_BELOW_TOP_M, PADS_ABOVE_BOTTOM_M)


@dataclass(frozen=True)
class Hold:
    """How the held object sits in the hand (m): how far it reaches past the finger pads' centre
    along the fingers, and how far below the hand it reaches with the fingers pointing down and
    with them level."""

    ahead: float
    below_down: float
    below_level: float

    @property
    def past_fingertips(self) -> float:
        """How far it reaches past the fingertips (PADS_ABOVE_BOTTOM_M past the pads' centre:
        the hand's own reach, which the approaches already keep out of the furniture)."""
        return max(0.0, self.ahead - PADS_ABOVE_BOTTOM_M)


def hold_of(height: float | None, length: float | None, from_above: bool | None) -> Hold:
    """How an object `height` tall, `length` long (its long level side, across which the
    fingers do not close), taken at `grasp_point`, sits in the hand: taken `from_above`, it
    hangs `hang(height)` along the fingers and, the hand turned level, lies along them, its long
    side upright (half of it below the hand); taken level, it stands as it stood. Not knowing
    how it was taken (None): it hangs below the hand either way and reaches no further."""
    down = hang(height)
    if from_above is None:
        return Hold(0.0, down, down)
    half = length / 2 if length is not None else LYING_HALF_M
    return Hold(down, down, half) if from_above else Hold(half, down, down)


def release_point(place: Place, hold: Hold, place_above_m: float) -> Vec3:
    """The arm's place target (the sequencer releases `place_above_m` above it): the next spot
    of the place, high enough that the held object, as it sits in the hand (`hold`), clears the
    floor or the rim. Reached level (above TOP_DOWN_BELOW_M): over a rim, the object goes in
    lying on its side; onto a floor, as it lies in the level hand, the housing clear too, but
    half way up a compartment at least when it reaches over a filled row behind its spot."""
    clear = max(place.floor, place.rim)
    z = clear + hold.below_down + RELEASE_CLEARANCE_M - place_above_m
    if z < TOP_DOWN_BELOW_M:
        return (*spot(place), z)
    at = spot(place, nearest=hold.ahead > SPOT_ROW_M)
    if place.rim > place.floor:
        return (*at, clear + LYING_HALF_M + RELEASE_CLEARANCE_M - place_above_m)
    z = clear + max(hold.below_level, HAND_BELOW_M) + RELEASE_CLEARANCE_M - place_above_m
    if place.enclosed and place.holding >= ABREAST and hold.ahead > SPOT_ROW_M / 2:
        z = max(z, (place.floor + place.top) / 2 - place_above_m)
    return (*at, z)


def spot(place: Place, nearest: bool = False) -> tuple[float, float]:
    """Where the next object goes (map x, y): the `holding`-th spot, three abreast, the deepest
    row first; in the nearest row for a `nearest` object (one held level that reaches a row or
    more past the gripper: the arm starts its approach that much further out, and reaches no
    deeper)."""
    k = place.holding
    hx, hy = place.half_depth, place.half_width
    behind = min(SPOT_DEEPEST_M, 2 * hx - SPOT_BACK_MARGIN_M) - SPOT_ROW_M * (k // ABREAST)
    behind = SPOT_NEAREST_M if nearest else behind
    dx = hx - max(behind, min(SPOT_NEAREST_M, hx))
    side = (0.0, -SPOT_ABREAST_M, SPOT_ABREAST_M)[k % ABREAST]
    dy = max(-hy + SPOT_SIDE_MARGIN_M, min(hy - SPOT_SIDE_MARGIN_M, side))
    c, s = math.cos(place.yaw), math.sin(place.yaw)
    return (place.x + c * dx - s * dy, place.y + s * dx + c * dy)
