"""Where the workspace's shared material is: `shared/` beside the repository (as in CI), or
$TASK_LEARNING_SHARED. Tests that read the recorded AI2-THOR fixtures use these paths."""
from __future__ import annotations

import os
from pathlib import Path

SHARED = Path(os.environ.get("TASK_LEARNING_SHARED") or Path(__file__).resolve().parents[2] / "shared")
FIXTURES = SHARED / "fixtures" / "ai2thor"
FLOORPLAN1 = FIXTURES / "FloorPlan1_physics_objects.json"
SIX_SCENES = FIXTURES / "floorplans_6scenes_objects.json"
MUG_REFERENCE = SHARED / "reference" / "stars_mug_example.yaml"
