"""How the AI2-THOR Controller is configured: the perception node's `ai2thor.*` parameters.

One source of truth: `config/nodes/perception.yaml` (perception: ros__parameters: ai2thor: ...).
The node reads them as ROS parameters; in-process commands (`task-learning run/scene --backend
ai2thor`) read the same file.
"""
from __future__ import annotations

import dataclasses
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from task_learning.config import config_path, load_yaml
from task_learning.errors import ConfigError
from task_learning.numbers import number_problem

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


@dataclass(frozen=True)
class ThorSettings:
    grid_size: float = 0.25
    width: int = 300
    height: int = 300
    field_of_view: float = 90.0
    render_image: bool = True
    render_depth_image: bool = True
    render_instance_segmentation: bool = False
    visibility_distance: float = 1.5
    platform: str = ""  # "": ai2thor's choice (Linux64 with an X display); CloudRendering: no X, GPU
    x_display: str = ""  # "": $DISPLAY, else a private Xvfb if one is installed
    # The simulator executable: "" lets ai2thor find (and download) its Unity build; a command on
    # PATH or in this venv (task-learning-thor-standin: the project's stand-in) or a path.
    local_executable_path: str = ""
    server_timeout_s: float = 5.0  # per step, once the scene is loaded
    server_start_timeout_s: float = 60.0

    @classmethod
    def from_params(cls, params: Mapping[str, Any], source: str = "ai2thor") -> "ThorSettings":
        """From a mapping of field names (e.g. the node's `ai2thor.*` parameters); errors name
        the parameter."""
        fields = {f.name: f for f in dataclasses.fields(cls)}
        values: dict[str, Any] = {}
        for key, value in params.items():
            if key not in fields:
                raise ConfigError(source, key, f"unknown AI2-THOR setting (known: {', '.join(fields)})")
            default = fields[key].default
            kind = type(default)
            if kind is float and isinstance(value, int) and not isinstance(value, bool):
                value = float(value)
            if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
                raise ConfigError(source, key, f"expected {kind.__name__}, got {value!r}")
            values[key] = value
        settings = cls(**values)
        settings.validate(source)
        return settings

    def validate(self, source: str = "ai2thor") -> None:
        for name, (low, high) in RANGES.items():
            value = getattr(self, name)
            problem = number_problem(value, low=low, high=high, integer=isinstance(low, int))
            if problem:
                raise ConfigError(source, name, problem)
        if self.platform not in PLATFORMS:
            raise ConfigError(source, "platform", f"must be one of {', '.join(repr(p) for p in PLATFORMS)}")

    def with_overrides(self, **changes: Any) -> "ThorSettings":
        return dataclasses.replace(self, **changes)

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
    section = params.get("ai2thor") or {}
    if not isinstance(section, Mapping):
        raise ConfigError(file, "perception.ros__parameters.ai2thor", "expected a mapping of settings")
    return ThorSettings.from_params(section, source=f"{file}: perception.ros__parameters.ai2thor")
