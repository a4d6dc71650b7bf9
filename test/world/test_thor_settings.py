"""The AI2-THOR Controller's settings (task_learning/world/thor/settings.py): one typed schema for
the perception node's `ai2thor.*` parameters and config/nodes/perception.yaml, refused with one
line naming the file (or parameters) and the key."""
from __future__ import annotations

from pathlib import Path

import pytest

from task_learning.errors import ConfigError
from task_learning.world.thor.settings import RANGES, ThorSettings, load_thor_settings

SOURCE = "perception parameters ai2thor.*"


def test_the_project_file_loads_and_an_int_is_taken_for_a_float() -> None:
    settings = load_thor_settings()
    assert settings.width >= RANGES["width"][0] and settings.platform == ""
    grid = ThorSettings.from_params({"grid_size": 1}, source=SOURCE).grid_size
    assert grid == 1.0 and isinstance(grid, float)


@pytest.mark.parametrize("params, expected", [
    ({"widht": 300}, "widht: unknown key (did you mean 'width'?)"),
    ({"width": 0}, "width: must be between 16 and 8192, got 0"),
    ({"width": 300.0}, "width: expected an integer, got 300.0"),
    ({"width": "300"}, "width: expected an integer"),
    ({"grid_size": True}, "grid_size: expected a number, got bool True"),
    ({"server_timeout_s": float("nan")}, "server_timeout_s: must be a finite number"),
    ({"platform": "Windows"}, "platform: must be one of '', 'Linux64'"),
    ({"render_image": "yes"}, "render_image: expected bool"),
])
def test_a_bad_setting_is_one_line_naming_the_key(params: dict, expected: str) -> None:
    with pytest.raises(ConfigError) as err:
        ThorSettings.from_params(params, source=SOURCE)
    assert str(err.value).startswith(f"{SOURCE}: ") and expected in str(err.value), str(err.value)
    assert "\n" not in str(err.value)


def test_a_bad_file_names_the_file_and_the_key_path(tmp_path: Path) -> None:
    path = tmp_path / "perception.yaml"
    path.write_text("perception:\n  ros__parameters:\n    ai2thor:\n      gird_size: 0.5\n")
    with pytest.raises(ConfigError, match=r"perception\.ros__parameters\.ai2thor\.gird_size: unknown key "
                                          r"\(did you mean 'grid_size'\?\)"):
        load_thor_settings(path)
    path.write_text("perception:\n  ros__parameters:\n    ai2thor: 5\n")
    with pytest.raises(ConfigError, match=r"perception\.ros__parameters\.ai2thor: expected a mapping"):
        load_thor_settings(path)


def test_overrides_are_checked_as_the_file_is() -> None:
    assert load_thor_settings().with_overrides(width=640).width == 640
    with pytest.raises(ConfigError, match="height: must be between 16 and 8192"):
        load_thor_settings().with_overrides(height=8)
