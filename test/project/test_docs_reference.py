"""The docs site's generated reference pages (scripts/docs_reference.py), the README's limits, and
the requirements hash that keeps requirements.lock in step with requirements.txt.

`make test` also builds the whole site with `mkdocs build --strict`; these tests pin what the
generator must get right on its own: every field and parameter on the page, constants, defaults,
comments that continue over lines, and a clear error for a definition it cannot read.
"""
from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from task_learning.apps.bringup import load_bringup_config

ROOT = Path(__file__).resolve().parents[2]


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_reference", ROOT / "scripts" / "docs_reference.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


ref = _load()
# The node modules, imported now: cv2's loader amends LD_LIBRARY_PATH once, at first import, which
# the environment guard of test/conftest.py would otherwise count against the test.
TABLES = ref.param_tables()
for _table in TABLES:
    importlib.import_module(_table.module)


def test_a_service_definition_is_read_with_its_comments_constants_and_defaults(tmp_path: Path) -> None:
    path = tmp_path / "Ask.srv"
    path.write_text("# Ask the operator something.\n# Two lines of description.\n"
                    "string YES=\"yes\"   # the answer that confirms\n"
                    "string question          # what is asked,\n"
                    "                         # over two lines\n"
                    "float64 timeout_s 5.0\n"
                    "# Who asks.\n"
                    "string asker\n"
                    "---\n"
                    "string answer\n")
    interface = ref.parse_interface(path, "Services", ("Request", "Response"))
    assert interface.description == "Ask the operator something. Two lines of description."
    (request, groups), (response, answer_groups) = interface.parts
    assert (request, response) == ("Request", "Response")
    first, second = groups
    yes, question, timeout = first.fields
    assert (yes.name, yes.constant, yes.value, yes.comment) == ("YES", True, '"yes"', "the answer that confirms")
    assert question.comment == "what is asked, over two lines"
    assert (timeout.type, timeout.value, timeout.constant) == ("float64", "5.0", False)
    assert second.note == "Who asks." and [f.name for f in second.fields] == ["asker"]
    assert [f.name for g in answer_groups for f in g.fields] == ["answer"]


def test_a_definition_it_cannot_read_or_a_missing_part_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ref, "ROOT", tmp_path)
    bad = tmp_path / "Bad.msg"
    bad.write_text("string ok\nstring 9lives\n")
    with pytest.raises(ValueError, match=r"Bad\.msg:2: cannot read the definition"):
        ref.parse_interface(bad, "Messages", ("Fields",))
    half = tmp_path / "Half.action"
    half.write_text("string goal\n---\nbool done\n")
    with pytest.raises(ValueError, match=r"Half\.action: 2 parts, expected 3"):
        ref.parse_interface(half, "Actions", ("Goal", "Result", "Feedback"))


def _definitions(path: Path) -> list[str]:
    """Field and constant names of a definition file, read plainly."""
    names = []
    for line in path.read_text(encoding="utf-8").splitlines():
        text = line.split("#", 1)[0].strip()
        if text and text != "---":
            names.append(text.split()[1].split("=", 1)[0])
    return names


def test_the_interface_page_has_every_interface_and_every_field() -> None:
    page = ref.interfaces_page(ref.load_interfaces())
    files = sorted((ROOT / "msg").glob("*.msg")) + sorted((ROOT / "interfaces").glob("*/*.*"))
    files = [f for f in files if f.suffix in (".msg", ".srv", ".action")]
    assert len(files) > 30
    for path in files:
        section = page.split(f"\n### {path.stem}\n", 1)[1].split("\n### ", 1)[0]
        rows = re.findall(r"^\| `([A-Za-z_0-9]+)`", section, flags=re.M)
        assert rows == _definitions(path), path.name
    # a field of one of this package's messages links to that message's section
    assert "| `objects` | [`ObjectState`](#objectstate)`[]` |" in page


def test_the_parameter_page_has_every_node_and_every_parameter() -> None:
    tables = TABLES
    titles = [t.title for t in tables]
    for node in [spec.name for spec in load_bringup_config().nodes] + ["perception, backend fetch", "synthetic_robot"]:
        assert node in titles
    page = ref.parameters_page(tables)
    for table in tables:
        params = getattr(importlib.import_module(table.module), table.attribute).rows()
        section = page.split(f"\n## {table.title}\n", 1)[1].split("\n## ", 1)[0]
        assert re.findall(r"^\| `([^`]+)`", section, flags=re.M) == [p.name for p in params], table.title
    # the shipped params file's value stands beside the code's default where they differ
    assert "| `ai2thor.local_executable_path` | `''` | `task-learning-thor-standin` |" in page
    # whether `ros2 param set` changes a parameter while the node runs (issue 32: every parameter was
    # read-only, and nothing said so): the planner's condition is read per goal, its safety policy is not
    planner = page.split("\n## planner\n", 1)[1].split("\n## ", 1)[0]
    assert re.search(r"^\| `condition` \|.*\| writable \|", planner, flags=re.M)
    assert re.search(r"^\| `require_confirmation` \|.*\| read-only \|", planner, flags=re.M)


def _hash(text: str, tmp_path: Path) -> str:
    path = tmp_path / "requirements.txt"
    path.write_text(text)
    return subprocess.run(["bash", str(ROOT / "scripts" / "requirements_hash.sh"), str(path)],
                          check=True, capture_output=True, text=True).stdout.strip()


def test_the_requirements_hash_changes_with_a_requirement_not_with_comments_or_order(tmp_path: Path) -> None:
    base = _hash("# ROS\nrclpy\nnumpy>=1.24\n", tmp_path)
    assert _hash("numpy >= 1.24  # arrays\n\n# ROS, said again\nrclpy\nrclpy\n", tmp_path) == base
    assert _hash("rclpy\nnumpy>=1.25\n", tmp_path) != base
    assert _hash("rclpy\nnumpy>=1.24\nscipy\n", tmp_path) != base


@pytest.mark.parametrize("requirements, lock", [("requirements.txt", "requirements.lock"),
                                                ("requirements-sweep.txt", "requirements-sweep.lock")])
def test_the_lock_was_made_from_this_requirements_file(requirements: str, lock: str) -> None:
    text = (ROOT / lock).read_text(encoding="utf-8")
    stored = re.search(r"^# requirements-sha256: (\w+)$", text, flags=re.M)
    assert stored, f"{lock} has no requirements-sha256 line"
    current = subprocess.run(["bash", str(ROOT / "scripts" / "requirements_hash.sh"), str(ROOT / requirements)],
                             check=True, capture_output=True, text=True).stdout.strip()
    assert stored.group(1) == current, f"{requirements} changed: run `make lock` and commit {lock}"
    pins = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert pins and all(re.fullmatch(r"[A-Za-z0-9_.\-]+==[^\s=]+", pin) for pin in pins), pins


def test_the_sweep_lock_changes_no_core_version() -> None:
    def pins(name: str) -> dict[str, str]:
        lines = (ROOT / name).read_text(encoding="utf-8").splitlines()
        return dict(line.lower().split("==") for line in lines if line and not line.startswith("#"))

    core, sweep = pins("requirements.lock"), pins("requirements-sweep.lock")
    assert "ray" in sweep and not set(core) & set(sweep), set(core) & set(sweep)


def test_the_readme_is_an_entry_point_that_names_the_five_methods() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    lines = readme.splitlines()
    assert len(lines) <= 250
    opening = "\n".join(lines[:20])
    for method in ("STARS", "BCR", "production rules", "anticipation", "LLM-State"):
        assert method in opening, method
    assert not re.search(r"seed \d{3}", readme), "the README names methods, not seed numbers"
    for command in ("make demo", "make test", "make docs"):
        assert command in readme
    # and every page it points to exists
    for target in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert (ROOT / target).is_file(), target
