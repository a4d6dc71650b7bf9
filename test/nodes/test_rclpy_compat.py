"""rclpy's private names live in one module, nodes/plumbing/rclpy_compat.py, which refuses an rclpy
it was not written for: an upgrade fails loudly at import instead of losing goals silently."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from task_learning_nodes.plumbing import rclpy_compat

ROOT = Path(__file__).resolve().parents[2]
PRIVATE = re.compile(r"\._(client_handle|pending_goal_requests|goal_sequence_number_to_goal_id|feedback_callbacks"
                     r"|generate_random_uuid|remove_pending_goal_request)\b|implementation_singleton"
                     r"|getattr\([^)]*\"_executor\"")


def test_the_installed_rclpy_is_a_tested_one() -> None:
    rclpy_compat.check_rclpy()  # what importing the module did already


@pytest.mark.parametrize("version", ["10.0.1", "7.1.5", "9.2.0", "unknown"])
def test_another_rclpy_fails_loudly_naming_both_versions(version: str) -> None:
    with pytest.raises(rclpy_compat.UnsupportedRclpy, match=rf"rclpy {re.escape(version)} is installed.*9\.1\.x"):
        rclpy_compat.check_rclpy(version)


def test_a_renamed_private_attribute_fails_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    class Renamed:
        def __init__(self) -> None:
            self._client_handle_v2 = None

    monkeypatch.setattr(rclpy_compat, "PRIVATE_NAMES", {Renamed: ("_client_handle",)})
    with pytest.raises(rclpy_compat.UnsupportedRclpy, match="Renamed lacks _client_handle"):
        rclpy_compat.check_rclpy("9.1.2")


def test_no_other_module_uses_rclpys_private_names() -> None:
    offenders = [str(path.relative_to(ROOT)) for top in ("nodes", "task_learning")
                 for path in sorted((ROOT / top).rglob("*.py"))
                 if path.name != "rclpy_compat.py" and PRIVATE.search(path.read_text(encoding="utf-8"))]
    assert offenders == []
