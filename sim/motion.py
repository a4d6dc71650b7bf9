"""Bounded motion along one coordinate: a setpoint that moves toward a target no faster than a
speed limit and speeds up or slows down no faster than an acceleration limit (a trapezoidal
velocity profile computed tick by tick, so a new target or a stop takes effect at once)."""
from __future__ import annotations

import math
from dataclasses import dataclass

SETTLED = 1e-4


@dataclass
class Ramp:
    """A setpoint `value` moving toward `target` with speed <= vmax and acceleration <= amax."""

    value: float
    target: float
    vmax: float
    amax: float
    speed: float = 0.0

    def tick(self, dt: float) -> float:
        remaining = self.target - self.value
        # the fastest speed from which the remaining distance still suffices to brake
        wanted = math.copysign(min(self.vmax, math.sqrt(2.0 * self.amax * abs(remaining))), remaining)
        step = self.amax * dt
        self.speed = min(max(wanted, self.speed - step), self.speed + step)
        if abs(remaining) <= abs(self.speed) * dt:  # arrives this tick
            self.value, self.speed = self.target, 0.0
        else:
            self.value += self.speed * dt
        return self.value

    def done(self) -> bool:
        return abs(self.target - self.value) < SETTLED and self.speed == 0.0

    def brake(self) -> None:
        """Stop as soon as the acceleration limit allows: the target becomes the braking point."""
        distance = self.speed * self.speed / (2.0 * self.amax)
        self.target = self.value + math.copysign(distance, self.speed)
