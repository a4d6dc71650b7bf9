"""Where the Fetch model's files are: the asset folder PyPI's `gymnasium-robotics` ships.

Only the MJCF and mesh files are used; the package is located without being imported, because
importing it loads gymnasium's environment registry (and prints its notices), none of which the
simulator needs.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path


class AssetsMissing(RuntimeError):
    """The Fetch model's files are not installed."""


def gymnasium_robotics_assets() -> Path:
    """The `envs/assets` folder of gymnasium-robotics (robot.xml, shared.xml, stls/fetch)."""
    spec = importlib.util.find_spec("gymnasium_robotics")
    if spec is None or not spec.submodule_search_locations:
        raise AssetsMissing("gymnasium-robotics is not installed (it ships the Fetch model): run `make setup`")
    root = Path(list(spec.submodule_search_locations)[0]) / "envs" / "assets"
    if not (root / "fetch" / "robot.xml").is_file():
        raise AssetsMissing(f"no Fetch model at {root / 'fetch' / 'robot.xml'}")
    return root
