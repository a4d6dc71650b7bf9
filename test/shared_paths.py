"""Where the tests' recorded data is. The project carries what its tests need in test/data/ (the
AI2-THOR fixtures gzipped, see test/data/ai2thor/SOURCE.md), so no test depends on the workspace's
`shared/` folder; a test that ever needs something only `shared/` has uses `needs_shared`, which
skips it with a one-line reason when the folder is missing."""
from __future__ import annotations

import gzip
import os
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
UNPACKED = ROOT / "build" / "test-data"
# The workspace's shared material: `shared/` beside the repository, or $TASK_LEARNING_SHARED.
SHARED = Path(os.environ.get("TASK_LEARNING_SHARED") or ROOT.parent / "shared")


def _unpacked(name: str) -> Path:
    """test/data/ai2thor/<name>.gz unpacked (once, atomically) under build/test-data/."""
    packed = DATA / "ai2thor" / f"{name}.gz"
    target = UNPACKED / name
    if not target.exists() or target.stat().st_mtime < packed.stat().st_mtime:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{name}.")
        with os.fdopen(fd, "wb") as out, gzip.open(packed, "rb") as src:
            out.write(src.read())
        os.replace(tmp, target)
    return target


FLOORPLAN1 = _unpacked("FloorPlan1_physics_objects.json")
SIX_SCENES = _unpacked("floorplans_6scenes_objects.json")
MUG_REFERENCE = DATA / "grounding" / "stars_mug_example.yaml"


def needs_shared(relative: str) -> pytest.MarkDecorator:
    """Skip (saying what is missing, in one line) unless shared/<relative> exists."""
    path = SHARED / relative
    return pytest.mark.skipif(not path.exists(), reason=f"needs {path} (the workspace's shared folder; "
                                                         f"set TASK_LEARNING_SHARED to it)")
