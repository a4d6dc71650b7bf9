"""STARS* exactly as the STARS paper (footnote 3): three sentences, as the system prompt of Selection
only, on tidy kitchen only; the richer user context is STARS+CTX, an extension."""
from __future__ import annotations

import pytest

from task_learning.errors import TaskLearningError
from task_learning.llm.base import LLMRequest, LLMResponse
from task_learning.llm.client import LLMClient, make_client
from task_learning.stars.elicit import elicit_goal
from task_learning.world.scene import load_scene
from task_learning.world.state import world_state_from_metadata

FOOTNOTE_3 = ["Assume that dishware on the table or counter are dirty.",
              "Assume that bottles and cans are empty.",
              "Non-perishable food belongs in the pantry."]


class Spy:
    """The offline model, with every request kept."""

    def __init__(self) -> None:
        self.inner = make_client("offline", cache=False).provider
        self.name, self.model = "spy", "spy"
        self.requests: list[LLMRequest] = []

    def complete(self, request: LLMRequest, timeout_s: float) -> LLMResponse:
        self.requests.append(request)
        return self.inner.complete(request, timeout_s)


def elicit(scene_name: str, condition: str, object_prefix: str):
    scene = load_scene(scene_name)
    state = world_state_from_metadata({"sceneName": scene.name, "objects": scene.objects})
    spy = Spy()
    oid = next(o for o in scene.task_objects if o.startswith(object_prefix))
    result = elicit_goal(scene.task, oid, state, scene, condition, LLMClient(spy))
    return spy.requests, result


def test_tidy_kitchen_carries_footnote_3():
    assert load_scene("tidy_kitchen").selection_context == FOOTNOTE_3


def test_stars_star_gives_footnote_3_to_selection_only():
    requests, result = elicit("tidy_kitchen", "STARS*", "Mug|")
    goal = [r for r in requests if r.prompt_type != "selection"]
    selection = [r for r in requests if r.prompt_type == "selection"]
    assert goal and selection and result.chosen is not None
    assert all(not r.context.get("system_context") for r in goal)
    assert all("Assume that" not in r.prompt for r in goal)
    for r in selection:
        assert list(r.context["system_context"]) == FOOTNOTE_3
        assert " ".join(FOOTNOTE_3) in r.prompt


def test_stars_ctx_gives_the_scene_context_to_every_prompt():
    scene = load_scene("tidy_kitchen")
    requests, _ = elicit("tidy_kitchen", "STARS+CTX", "Mug|")
    assert requests and all(list(r.context["system_context"]) == scene.context for r in requests)


def test_stars_star_is_refused_off_tidy_kitchen():
    with pytest.raises(TaskLearningError, match=r"tidy kitchen only.*STARS\+CTX"):
        elicit("store_groceries", "STARS*", "Yogurt|")
    from task_learning.planning.session import RunSpec, run_in_process

    with pytest.raises(TaskLearningError, match="tidy kitchen only"):
        run_in_process(RunSpec(scene="organize_office", condition="STARS*", operator="none"))


def test_simulated_operator_says_on_for_a_surface_destination():
    from task_learning.oversight.simulated import SimulatedOperator

    operator = SimulatedOperator.from_scene(load_scene("heldout_kitchen"))
    assert operator.describe("Kettle|1") == "the goal is that the kettle is on the stove burner"
    assert operator.describe("Egg|1").startswith("the goal is that the egg is in the ")
