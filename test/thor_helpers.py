"""Shared set-up for tests that run the real ai2thor Controller against the project's stand-in
simulator (not a test module itself)."""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

from task_learning.world.thor.display import acquire_display
from task_learning.world.thor.settings import ThorSettings, load_thor_settings

STANDIN = Path(sys.executable).parent / "task-learning-thor-standin"
# Keys that depend on where the agent stands or what it holds, not on the world's state.
POSE_KEYS = ("distance", "isInteractable")


def settings(**changes: Any) -> ThorSettings:
    """The perception node's AI2-THOR settings with the stand-in and short timeouts."""
    values: dict[str, Any] = {"local_executable_path": str(STANDIN), "server_timeout_s": 10.0,
                              "server_start_timeout_s": 20.0}
    values.update(changes)
    return load_thor_settings().with_overrides(**values)


@pytest.fixture(scope="module")
def thor_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """One X display (a private Xvfb unless DISPLAY is set) and a private HOME (ai2thor logs
    under ~/.ai2thor) for a test module."""
    if not STANDIN.is_file():
        pytest.skip("the stand-in simulator is not installed (run `make setup`)")
    saved = {k: os.environ.get(k) for k in ("HOME", "DISPLAY")}
    display = acquire_display("", "")
    os.environ["HOME"] = str(tmp_path_factory.mktemp("thor-home"))
    if display is not None:
        os.environ["DISPLAY"] = display.name
    try:
        yield
    finally:
        if display is not None:
            display.close()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def state_of(metadata: dict[str, Any]) -> dict[str, Any]:
    """The world's state in a metadata dict: every object key except those that depend on the
    agent's pose (distance, isInteractable, where a held or dropped object is), plus the
    inventory, the agent's location and the result of the last action."""
    held = {o["objectId"] for o in metadata.get("inventoryObjects") or []}
    objects = {}
    for record in metadata.get("objects") or []:
        # where a held or dropped object is follows where the agent stood
        follows_agent = record["objectId"] in held or any(
            p.startswith("Floor|") for p in record.get("parentReceptacles") or []) and record.get("pickupable")
        skip = set(POSE_KEYS) | ({"position"} if follows_agent else set())
        objects[record["objectId"]] = {k: v for k, v in record.items() if k not in skip}
    return {"objects": objects, "held": sorted(held), "location": (metadata.get("agent") or {}).get("location"),
            "result": (metadata.get("lastAction"), metadata.get("lastActionSuccess"), metadata.get("errorMessage"))}
