"""Where recorded iTHOR FloorPlan metadata lives, and which FloorPlans it holds.

Scene files that name a FloorPlan (`floorplan: FloorPlan1`) and the stand-in simulator read the
objects of that FloorPlan from recorded AI2-THOR metadata (the `../shared/fixtures/ai2thor` files:
real simulator output, MIT licensed, see their SOURCE.md). They are looked up, in order, in the
folders of $TASK_LEARNING_FLOORPLANS (os.pathsep-separated), $TASK_LEARNING_SHARED/fixtures/ai2thor,
`shared/fixtures/ai2thor` beside the repository or one level further up, and last the project's
own gzipped copies in test/data/ai2thor. A file `FloorPlan<N>_physics_objects.json[.gz]` holds one
FloorPlan; any other such file whose keys are scene numbers ("6", "306") holds several.
"""
from __future__ import annotations

import functools
import gzip
import json
import os
import re
from pathlib import Path

from task_learning.errors import ConfigError

_SINGLE = re.compile(r"^(FloorPlan\d+)(?:_physics)?_objects\.json(?:\.gz)?$")
_NAME = re.compile(r"^FloorPlan(\d+)(?:_physics)?$")
_REPO = Path(__file__).resolve().parents[2]


def search_folders() -> list[Path]:
    folders = [Path(p) for p in os.environ.get("TASK_LEARNING_FLOORPLANS", "").split(os.pathsep) if p]
    shared = os.environ.get("TASK_LEARNING_SHARED")
    if shared:
        folders.append(Path(shared) / "fixtures" / "ai2thor")
    folders += [_REPO.parent / "shared" / "fixtures" / "ai2thor",
                _REPO.parent.parent / "shared" / "fixtures" / "ai2thor",
                _REPO / "test" / "data" / "ai2thor"]
    return folders


def canonical(name: str) -> str | None:
    """'FloorPlan1' or 'FloorPlan1_physics' -> 'FloorPlan1'; None for other names."""
    match = _NAME.match(name.strip())
    return f"FloorPlan{int(match.group(1))}" if match else None


@functools.lru_cache(maxsize=4)
def _index(folders: tuple[Path, ...]) -> dict[str, str]:
    """FloorPlan name -> scene spec load_scene accepts ('file.json' or 'file.json#key')."""
    found: dict[str, str] = {}
    for folder in folders:
        if not folder.is_dir():
            continue
        for path in sorted(list(folder.glob("*.json")) + list(folder.glob("*.json.gz"))):
            single = _SINGLE.match(path.name)
            if single:
                found.setdefault(single.group(1), str(path))
                continue
            try:
                if path.name.endswith(".gz"):
                    with gzip.open(path, "rt", encoding="utf-8") as handle:
                        data = json.loads(handle.read())
                else:
                    data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError, EOFError):
                continue
            if isinstance(data, dict) and data and all(str(k).isdigit() for k in data):
                for key in data:
                    found.setdefault(f"FloorPlan{int(key)}", f"{path}#{key}")
    return found


def available_floorplans() -> dict[str, str]:
    return dict(_index(tuple(search_folders())))


def floorplan_source(name: str) -> str:
    """The scene spec of a FloorPlan's recorded metadata; ConfigError naming what exists."""
    key = canonical(name)
    known = available_floorplans()
    if key is None or key not in known:
        have = ", ".join(sorted(known, key=lambda n: int(n[9:]))) or "none"
        raise ConfigError("floorplan", None, f"no recorded metadata for {name!r} (recorded FloorPlans: {have}; "
                          "folders searched: " + ", ".join(str(f) for f in search_folders()) + ")")
    return known[key]
