"""Where a robot stands and looks to read the markers on and in a piece of furniture.

A marker on an object's top face is read from above; from across a room the top faces of things
on a table are seen edge-on, and what stands in a bag or a bin is hidden by its walls. So a piece
is looked at from close with the camera as high as the torso lifts it: a low piece (a bag, a bin
on the floor) from just before its front, looking down at its floor; a piece whose top is a
surface or an open bin at counter height from a little further, looking at its top; a tall piece
(a cabinet: what it holds is behind its door) from further, at its front, where its markers are.
The torso stays lifted throughout: one lift for the whole survey.

Everything is in REP-103 `map` (x forward, y left, z up), from what perception publishes about a
piece: its centre and the direction its front faces (its front marker's z axis). Plain geometry:
the caller turns each view into the robot's goals (drive, lift the torso, point the head).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

LOW_TOP_M = 0.7        # a piece whose top is below this (a bag, a bin on the floor) is looked into from close
SURFACE_TOP_M = 1.0    # up to this, its top is a surface or an opening the raised camera sees
LOW_DISTANCE_M = 0.56  # base centre to the piece's centre: a 0.45 m deep bag's front 0.34 m away (the base: 0.3)
SURFACE_DISTANCE_M = 0.8
SURFACE_SPREAD_M = 0.3  # a top 1.2 m wide is looked at in two halves
TALL_DISTANCE_M = 1.1  # a cabinet's front markers fill a view from here
SPREAD_M = 0.2       # a low piece is looked into from three places along its front


@dataclass(frozen=True)
class View:
    """One view: the base pose, the torso's lift and the point the head looks at (map)."""

    base: tuple[float, float, float]    # x, y, yaw (rad)
    torso: float                        # m, within the torso's limits
    target: tuple[float, float, float]
    why: str


def piece_views(centre: Sequence[float], front: Sequence[float], torso_max: float) -> list[View]:
    """The views of a piece centred at `centre` (its top at twice its centre's height) whose front
    faces the horizontal direction `front`."""
    norm = math.hypot(front[0], front[1]) or 1.0
    fx, fy = front[0] / norm, front[1] / norm
    cx, cy, cz = (float(v) for v in centre)
    top = 2.0 * cz
    spreads: tuple[float, ...]
    if top < LOW_TOP_M:
        distance, height, spreads, why = LOW_DISTANCE_M, 0.05, (-SPREAD_M, 0.0, SPREAD_M), "look down into it"
    elif top <= SURFACE_TOP_M:
        distance, height, spreads, why = SURFACE_DISTANCE_M, top, (-SURFACE_SPREAD_M, SURFACE_SPREAD_M), "look at its top"
    else:
        distance, height, spreads, why = TALL_DISTANCE_M, cz, (0.0,), "look at its front"
    yaw = math.atan2(-fy, -fx)
    # left of someone facing the front is the front's direction turned a quarter clockwise
    lx, ly = fy, -fx
    views = []
    for s in spreads:
        # into a low piece the camera sees over its front wall best from straight above: the base
        # steps along the front; a top is seen whole from one place, the head turned
        step = s if top < LOW_TOP_M else 0.0
        base = (cx + distance * fx + step * lx, cy + distance * fy + step * ly, yaw)
        views.append(View(base, torso_max, (cx + s * lx, cy + s * ly, height), why))
    return views
