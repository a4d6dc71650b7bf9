"""How the AI2-THOR Controller is configured: the perception node's `ai2thor.*` parameters.

One source of truth: `config/nodes/perception.yaml` (perception: ros__parameters: ai2thor: ...).
The node reads them as ROS parameters; in-process commands (`task-learning run/scene --backend
ai2thor`) read the same file.
"""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Annotated, Any, Mapping

from pydantic import AfterValidator

from task_learning.errors import ConfigError
from task_learning.inputs.config import config_path, load_yaml
from task_learning.inputs.schema import Schema, bounded, invalid, validate

PLATFORMS = ("", "Linux64", "OSXIntel64", "CloudRendering")
# The range of every numeric setting: checked here and declared on the perception node's
# `ai2thor.*` parameters (one table, so the node and the in-process commands agree).
RANGES: dict[str, tuple[float, float]] = {
    "grid_size": (0.01, 5.0),
    "width": (16, 8192),
    "height": (16, 8192),
    "field_of_view": (1.0, 179.0),
    "visibility_distance": (0.01, 100.0),
    "server_timeout_s": (0.1, 3600.0),
    "server_start_timeout_s": (0.1, 3600.0),
}


def _in_range(name: str) -> Any:
    low, high = RANGES[name]
    return bounded(low=low, high=high, integer=isinstance(low, int))


def _platform(value: str) -> str:
    if value not in PLATFORMS:
        raise invalid(f"must be one of {', '.join(repr(p) for p in PLATFORMS)}")
    return value


class ThorSettings(Schema):
    """The AI2-THOR Controller's settings (task_learning.inputs.schema: unknown keys refused with a
    'did you mean', types strict, numbers in RANGES)."""

    grid_size: Annotated[float, _in_range("grid_size")] = 0.25
    width: Annotated[int, _in_range("width")] = 300
    height: Annotated[int, _in_range("height")] = 300
    field_of_view: Annotated[float, _in_range("field_of_view")] = 90.0
    render_image: bool = True
    render_depth_image: bool = True
    render_instance_segmentation: bool = False
    visibility_distance: Annotated[float, _in_range("visibility_distance")] = 1.5
    # "": ai2thor's choice (Linux64 with an X display); CloudRendering: no X, GPU
    platform: Annotated[str, AfterValidator(_platform)] = ""
    x_display: str = ""  # "": $DISPLAY, else a private Xvfb if one is installed
    # The simulator executable: "" lets ai2thor find (and download) its Unity build; a command on
    # PATH or in this venv (task-learning-thor-standin: the project's stand-in) or a path.
    local_executable_path: str = ""
    server_timeout_s: Annotated[float, _in_range("server_timeout_s")] = 5.0  # per step, once the scene is loaded
    server_start_timeout_s: Annotated[float, _in_range("server_start_timeout_s")] = 60.0

    @classmethod
    def from_params(cls, params: Mapping[str, Any], source: str = "ai2thor") -> "ThorSettings":
        """From a mapping of field names (e.g. the node's `ai2thor.*` parameters); errors name
        `source` and the parameter."""
        return validate(cls, dict(params), file=source)

    def with_overrides(self, **changes: Any) -> "ThorSettings":
        """A copy with some settings changed, checked as the file's are."""
        return validate(ThorSettings, {**self.model_dump(), **changes}, file="ai2thor overrides")

    def executable(self) -> str | None:
        """The simulator command for `local_executable_path`, resolved (None: ai2thor's build)."""
        text = self.local_executable_path.strip()
        if not text:
            return None
        if os.sep in text:
            path = Path(text).expanduser()
            if not path.is_file() or not os.access(path, os.X_OK):
                raise ConfigError("ai2thor", "local_executable_path", f"{text} is not an executable file")
            return str(path.resolve())
        beside = Path(sys.executable).parent / text  # this venv's console scripts
        found = str(beside) if beside.is_file() else shutil.which(text)
        if not found:
            raise ConfigError("ai2thor", "local_executable_path", f"no executable {text!r} on PATH or in "
                              f"{beside.parent} (run `make setup`, or set a path)")
        return found


def load_thor_settings(path: str | Path | None = None) -> ThorSettings:
    """The `ai2thor` section of the perception node's parameter file."""
    file = Path(path) if path is not None else config_path("nodes", "perception.yaml")
    data = load_yaml(file) or {}
    params = ((data.get("perception") or {}).get("ros__parameters") or {}) if isinstance(data, Mapping) else {}
    return validate(ThorSettings, params.get("ai2thor") or {}, file=file, key="perception.ros__parameters.ai2thor")
