"""--decoding grounded with the real model (Gemma 3 270M on llama.cpp's llama-server, `make llm`):
every goal the model writes under the grammar parses and grounds, for objects of a paper's scene
and of a held-out one; the Search Tree's token alternatives come back with the grammar (logprobs
are well formed, each alternative followed is one the grammar allows); Selection's answer is one of its
options (its sentence: selection.yaml grounded_answer) and BCR's answer one of its candidates.

No fake anywhere, temperature 0. As in test_llm_local_model.py the assertions hold for any answer
of this model (inside the grammar, viable, a distribution summing to 1), never its wording or
whether it names the user's preferred place: that is measured in docs/llm.md, not asserted."""
from __future__ import annotations

import math
import os
from typing import Any, Iterator

import pytest

from task_learning.grounding import analyze_goal
from task_learning.llm.client import make_client
from task_learning.llm.local_install import local_paths
from task_learning.llm.local_provider import ENV_LOCAL_URL
from task_learning.llm.local_server import LocalServer
from task_learning.stars.elicit import ElicitationSetup, elicit_goal
from task_learning.stars.grounded import GoalSpace
from task_learning.world.resolve import describe_object
from task_learning.world.scene import load_scene
from task_learning.world.state import world_state_from_metadata

pytestmark = [pytest.mark.llm, pytest.mark.slow, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def server() -> Iterator[dict[str, Any]]:
    """The client options of the model server: one started here, or a running llama-server at
    $TASK_LEARNING_LOCAL_LLM_URL (the variable every command reads; its root URL: a machine whose cores already serve the model
    should not start a second one)."""
    url = os.environ.get(ENV_LOCAL_URL, "").strip().rstrip("/")
    if url:
        yield {"base_url": url if url.endswith("/v1") else f"{url}/v1"}
        return
    if not local_paths().installed():
        pytest.fail("the local model is not installed: run `make llm` (make test does it first)")
    with LocalServer() as running:
        yield {"local_server": running}


class Recording:
    def __init__(self, client) -> None:
        self.client = client
        self.requests: list = []
        self.responses: list = []

    def complete(self, request):
        response = self.client.complete(request)
        self.requests.append(request)
        self.responses.append(response)
        return response

    def complete_many(self, requests):
        """Batched elicitation sends a tree level's requests together: record them as well."""
        responses = self.client.complete_many(requests)
        self.requests.extend(requests)
        self.responses.extend(responses)
        return responses

    def __getattr__(self, name: str):
        return getattr(self.client, name)


@pytest.mark.parametrize("scene_name, count", [("store_groceries", 2), ("heldout_bedroom", 1)])
def test_every_grounded_goal_parses_and_grounds(server, scene_name, count):
    scene = load_scene(scene_name)
    metadata = {"sceneName": scene.name, "objects": scene.objects}
    state = world_state_from_metadata(metadata)
    with make_client("local", cache=None, **server) as inner:
        client = Recording(inner)
        for object_id in scene.task_objects[:count]:
            name = describe_object(metadata, object_id)[0]
            space = GoalSpace.build(state, object_id, name)
            result = elicit_goal(scene.task, object_id, metadata, scene, "STARS", client,
                                 setup=ElicitationSetup(decoding="grounded", batched=True))
            assert not result.errors, result.errors
            assert result.candidates, f"{object_id}: the model gave no goal"
            for cand in result.candidates:
                assert cand.text in space.by_key, cand.text  # written inside the grammar
                analysis = analyze_goal(cand.text, state, object_id)
                assert analysis.viable and cand.viable, (cand.text, analysis.mismatches)
            assert math.isclose(sum(c.score for c in result.candidates), 1.0, rel_tol=1e-6)
            assert result.chosen is not None and result.chosen.text in space.by_key
            assert result.selection is None or result.selection.method in ("llm", "single_option")
    goal = [(q, r) for q, r in zip(client.requests, client.responses) if q.prompt_type in ("initial", "recurse")]
    assert goal and all(q.constraint is not None for q, _ in goal)
    for request, response in goal:
        assert response.ok and response.tokens, response.error
        written = request.constraint.after + response.text
        # the server kept to the grammar: one token where the goals part (search: decisive), or
        # written on until one goal was left (search: paths); either way inside the goals
        assert request.constraint.allows_prefix(written), written
        if request.max_tokens > 1:
            assert len([c for c in request.constraint.choices if c.startswith(written)]) == 1 or \
                request.constraint.is_choice(written), written
        for token in response.tokens:
            assert token.logprob <= 0 and math.isfinite(token.logprob) and token.top


def test_bcr_grounded_choice_is_always_a_candidate(server):
    from task_learning.bcr.runner import run_trial

    with make_client("local", cache=None, **server) as client:
        result = run_trial("bcr_kitchen", "make_coffee", "llm", client, 0, mode="paper", answers="bounded",
                           decoding="grounded", max_actions=4)
    answers = result.model_answers
    assert answers and all(a["accepted"] for a in answers), answers
