"""What a MuJoCo run leaves to read afterwards: `truth.jsonl` in its log folder, a line each time a
door, an object's place or the hand changes, as the simulator has it (its `sim/ground_truth`) and
as perception believes it (`world_state`), side by side.

A failed goal often fails because an earlier one left the world otherwise than the robot believes
(a door believed open that is shut): without both sides over time, which one was wrong cannot be
told from the logs. Scoring and diagnosis only, like `sim/status`'s completion: the stack's nodes
never read the simulator's truth; this file is written by the run's application, after the fact
for nobody but a reader.
"""
from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any, Mapping, Sequence, TextIO

HELD = "held"


class TruthLog:
    """Keeps the last value of each (source, key) and writes a line when it changes."""

    def __init__(self, path: Path) -> None:
        self._file: TextIO | None = path.open("a", encoding="utf-8")
        self._last: dict[tuple[str, str], Any] = {}
        self._lock = threading.Lock()
        self.lines = 0

    def truth(self, snapshot: Mapping[str, Any]) -> None:
        """One `sim/ground_truth` snapshot (sim/ground_truth.py's form)."""
        t = float(snapshot.get("sim_time_s", 0.0))
        for receptacle_id, piece in (snapshot.get("receptacles") or {}).items():
            if "closed" in piece:
                self._note("sim", t, f"{receptacle_id} open", not piece["closed"])
        for item, record in (snapshot.get("objects") or {}).items():
            self._note("sim", t, f"{item} in", record.get("in") or "")
        self._note("sim", t, HELD, list(snapshot.get(HELD) or []))

    def belief(self, t: float, doors: Mapping[str, bool | None], places: Mapping[str, str],
               held: Sequence[str]) -> None:
        """One `world_state`: each openable piece open (None: not known), each object's first
        parent receptacle, what the hand holds."""
        for piece, is_open in doors.items():
            self._note("belief", t, f"{piece} open", is_open)
        for item, place in places.items():
            self._note("belief", t, f"{item} in", place)
        self._note("belief", t, HELD, list(held))

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None

    def _note(self, source: str, t: float, key: str, value: Any) -> None:
        with self._lock:
            if self._file is None or self._last.get((source, key), _UNSET) == value:
                return
            self._last[(source, key)] = value
            self._file.write(json.dumps({"t": round(t, 2), "source": source, "what": key, "now": value}) + "\n")
            self._file.flush()
            self.lines += 1


_UNSET = object()
