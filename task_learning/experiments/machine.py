"""What the machine was doing while an experiment ran: its cores and the 1-minute load average,
sampled in the background, so a wall time is printed with the load it was measured under (on a
machine shared with other work, wall time measures the neighbours as much as the model)."""
from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Mapping


@dataclass
class LoadSampler:
    """`with LoadSampler() as load: ...` then `load.summary()`: min / mean / max of the 1-minute
    load average, sampled every `every_s` seconds (and once at the start and at the end)."""

    every_s: float = 15.0
    samples: list[float] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _started: float = 0.0
    wall_s: float = 0.0

    def __enter__(self) -> "LoadSampler":
        self._started = time.monotonic()
        self._sample()
        self._thread = threading.Thread(target=self._loop, name="load-sampler", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._sample()
        self.wall_s = time.monotonic() - self._started

    def _loop(self) -> None:
        while not self._stop.wait(self.every_s):
            self._sample()

    def _sample(self) -> None:
        try:
            self.samples.append(os.getloadavg()[0])
        except OSError:  # no load average on this platform
            pass

    def summary(self) -> dict[str, Any]:
        values = self.samples or [0.0]
        return {"cores": os.cpu_count() or 1, "load_1min_min": round(min(values), 2),
                "load_1min_mean": round(sum(values) / len(values), 2), "load_1min_max": round(max(values), 2),
                "samples": len(self.samples)}

    def describe_command(self, model: str) -> str:
        """The sentence every experiment prints under its tables about the whole command."""
        machine = self.summary()
        return (f"Model: {model}. Machine: {machine['cores']} cores, 1-minute load average "
                f"{machine['load_1min_min']}/{machine['load_1min_mean']}/{machine['load_1min_max']} (min/mean/max) "
                f"during the command; {self.wall_s / 60:.1f} min wall in all.")


def describe_load(machine: Mapping[str, Any]) -> str:
    """A run's load as its trials line shows it: "load min/mean/max on N cores" (from `summary()`)."""
    return (f"load {machine.get('load_1min_min')}/{machine.get('load_1min_mean')}/{machine.get('load_1min_max')} "
            f"on {machine.get('cores')} cores")
