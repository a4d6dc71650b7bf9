"""The real model through the real server: Gemma 3 270M (base, Q4_K_M) on llama.cpp's llama-server,
built and installed by `make llm` (`make test` runs it first), through the `local` provider and
LLMClient, for every prompt type the stack sends: STARS tree levels, repair and selection, BCR's
choice, LLM-State, the production prompts, anticipation. Then what a run meets when the server
dies or hangs.

No fake anywhere. Temperature 0 throughout. The assertions are about structure and behaviour that
hold for any answer this model gives (logprobs present and well formed, the prefix cache used,
the stack's parsers taking or refusing an answer without a provider error, a dead server named),
not about its wording: a 270M base model is often wrong, and these tests do not pretend otherwise.
The prompts are the stack's own; only the answers of the long-answer prompt types (BCR: 300
tokens, LLM-State: 1500, productions: 900, anticipation: 250) are cut to a few dozen tokens
(`Capped`), so the tests stay fast on 2 cores: a base model rarely stops on its own.
"""
from __future__ import annotations

import json
import math
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import replace
from typing import Iterator

import pytest

from task_learning.errors import LLMUnavailableError
from task_learning.llm.base import ConnectionProviderError, LLMRequest
from task_learning.llm.client import LLMClient, make_client
from task_learning.llm.constraints import Constraint
from task_learning.llm.local_install import local_paths
from task_learning.llm.local_provider import LocalProvider
from task_learning.llm.local_server import LocalServer
from task_learning.stars.prompts import GoalContext, load_templates
from task_learning.types import MismatchKind

pytestmark = [pytest.mark.llm, pytest.mark.slow, pytest.mark.timeout(600)]

MUG = GoalContext(task="tidy kitchen", location="kitchen", object="mug", relation="in", place="dish rack")


@pytest.fixture(scope="module")
def server() -> Iterator[LocalServer]:
    if not local_paths().installed():
        pytest.fail("the local model is not installed: run `make llm` (make test does it first)")
    with LocalServer() as running:
        yield running


def client_on(server: LocalServer, **options) -> LLMClient:
    options.setdefault("cache", None)
    return make_client("local", local_server=server, **options)


class Capped:
    """An LLMClient whose requests ask for at most `max_tokens` tokens (everything else as is)."""

    def __init__(self, client: LLMClient, max_tokens: int = 40) -> None:
        self._client = client
        self.max_tokens = max_tokens
        self.requests: list[LLMRequest] = []

    def complete(self, request: LLMRequest):
        self.requests.append(request)
        return self._client.complete(replace(request, max_tokens=min(request.max_tokens, self.max_tokens)))

    def __getattr__(self, name: str):
        return getattr(self._client, name)


def check_logprobs(response) -> None:
    assert response.ok, response.error
    assert response.tokens, f"no tokens for {response.text!r}"
    for token in response.tokens:
        assert token.logprob <= 0 and math.isfinite(token.logprob)
        assert 1 <= len(token.top) <= 5
        assert [lp for _t, lp in token.top] == sorted((lp for _t, lp in token.top), reverse=True)
    assert "".join(t.token for t in response.tokens).strip() in response.text.strip() or response.text.strip() in \
        "".join(t.token for t in response.tokens)


# ------------------------------------------------------------------------------------- STARS
def test_a_goal_prompt_gives_logprobs_and_the_repeat_hits_the_prefix_cache(server):
    templates = load_templates()
    with client_on(server) as client:
        request = templates.goal_request(MUG, "initial", scope="Mug|1")
        first = client.complete(request)
        check_logprobs(first)
        again = client.complete(templates.goal_request(MUG, "recurse", " The goal is that the mug", scope="Mug|1"))
        check_logprobs(again)
    assert first.prompt_tokens > 100 and first.completion_tokens >= 1
    # the second prompt shares the first one's few-shot prefix: the server re-used it
    assert again.cached_prompt_tokens >= first.prompt_tokens - 10, (again.cached_prompt_tokens, first.prompt_tokens)
    assert client.usage.cached_prompt_tokens >= again.cached_prompt_tokens


def test_the_search_tree_on_the_mug_example_through_the_real_server(server):
    """The search tree branches on the model's real alternatives, level by level, as list
    prompts; every candidate is analysed; the outcome is whatever the model earned (a 270M base
    model). Capped at 24 requests (repair and selection have tests of their own)."""
    from task_learning.stars import ElicitationSetup, TreeSettings, elicit_goal
    from task_learning.testing import mug_example as mug

    with client_on(server) as client:
        result = elicit_goal(mug.TASK, mug.OBJECT_ID, mug.mug_metadata(), None, "ST", client,
                             setup=ElicitationSetup(settings=TreeSettings(max_requests=24), batched=True))
    usage = result.usage.by_type
    assert result.usage.failures == 0, result.errors
    assert usage["initial"].calls == 1
    assert usage["recurse"].calls >= 1  # the model is unsure somewhere: the tree branched
    assert result.candidates and all(c.viable is not None for c in result.candidates)
    assert all(c.text.startswith("the goal is") for c in result.candidates[:3]), [c.text for c in result.candidates]
    assert result.outcome in ("ok", "no_viable_goal", "no_response"), result.outcome
    assert usage["recurse"].requests < usage["recurse"].calls  # a level went out as one list


def test_a_repair_prompt(server):
    templates = load_templates()
    request = templates.goal_request(MUG, "repair", repair_of="the goal is that the mug is in the kitchen",
                                     feedback="No. Cannot see a kitchen.", repair_kind=MismatchKind.UNGROUNDED_OBJECT,
                                     scope="Mug|1")
    with client_on(server) as client:
        check_logprobs(client.complete(request))


def test_a_selection_prompt_is_answered_or_asked_again_then_decided(server):
    from task_learning.stars.selection import parse_answer, select_goal
    from task_learning.types import CandidateSource, GoalCandidate

    options = ["the goal is that the mug is in the dishwasher", "the goal is that the mug is in the cupboard"]
    candidates = [GoalCandidate(candidate_id=i + 1, text=t, score=0.8 + i / 100, source=CandidateSource.RECURSE,
                                viable=True) for i, t in enumerate(options)]
    templates = load_templates()
    with client_on(server) as client:
        response = client.complete(templates.selection_request(MUG, options, scope="Mug|1"))
        assert response.ok, response.error
        number, _why = parse_answer(response.text, len(options))
        assert number is None or 1 <= number <= 2
        outcome = select_goal(client, templates, MUG, candidates)
    assert outcome.chosen is not None and outcome.chosen.text in options  # a number, else the highest score


# -------------------------------------------------------------------------------------- BCR
def test_a_bcr_choice_is_parsed_or_asked_again_and_the_trial_ends(server):
    from task_learning.bcr.runner import run_trial

    with client_on(server) as client:
        capped = Capped(client)
        result = run_trial("bcr_kitchen", "make_coffee", "llm", capped, seed=0, max_actions=2)
        usage = client.usage.by_type["bcr_selection"]
    assert usage.calls >= 1 and usage.failures == 0
    assert capped.requests[0].messages and "$$ <selected action> $$" in capped.requests[0].messages[-1][1]
    assert result.actions <= 2 and (result.success or result.failure)  # ended, with a named reason



def test_a_bounded_bcr_choice_stops_at_the_lines_end(server):
    """Bounded answers (the default with --llm local): the base model's answer is one line, not
    300 tokens of continuation (docs/llm.md "Bounded answers")."""
    from task_learning.bcr.runner import run_trial

    with client_on(server) as client:
        result = run_trial("bcr_kitchen", "make_coffee", "llm", client, seed=0, max_actions=2, mode="paper",
                           answers="bounded")
        usage = client.usage.by_type["bcr_selection"]
    assert usage.calls >= 1 and usage.failures == 0
    assert usage.completion_tokens <= 48 * usage.calls
    assert all("\n" not in a["answer"] for a in result.model_answers)  # cut at the line's end
    assert result.actions <= 2 and (result.success or result.failure)


# ---------------------------------------------------------------------------------- LLM-State
def test_an_llm_state_episode_step(server):
    from task_learning.llm_state.agent import LLMStateAgent
    from task_learning.llm_state.household import HouseholdWorld, load_household

    house = load_household()
    task = house.task("heat_milk")
    world = HouseholdWorld(house, "map1", task, hands=2)
    with client_on(server) as client:
        result = LLMStateAgent(Capped(client), "ours").run(world, task, cap=2, trial=0)
        usage = client.usage
    assert result.llm_calls >= 1 and result.llm_errors == 0 and usage.failures == 0
    assert result.steps <= 2 and result.end_reason  # a cap, a goal, or the model's own stop


# -------------------------------------------------------------------------------- productions
def test_a_production_selection_prompt(server):
    from task_learning.productions.agent import Decision
    from task_learning.productions.knowledge import WorldKnowledge
    from task_learning.productions.learner import Family, LLMAdvisor
    from test.productions_helpers import lettuce_state

    decision = Decision(task="slice a/an lettuce", env=lettuce_state(), history=[],
                        options=["attend to subtask: find a/an <object>",
                                 "motor action: put Lettuce_895e9ec5 on CounterTop4",
                                 "motor action: move to CounterTop4"],
                        blacklist=["attend to subtask: slice a/an lettuce"], reason="no_production",
                        world=WorldKnowledge(oracle=lambda s: True))
    with client_on(server) as client:
        capped = Capped(client)
        advisor = LLMAdvisor(capped, [Family("find a/an <object>")], learn=False, max_invalid=1)  # type: ignore[arg-type]
        advice = advisor.advise(decision)  # the stack's own loop: an allowed option or None, never a crash
        usage = client.usage
    assert capped.requests[0].prompt_type == "production_selection"
    assert capped.requests[0].messages[0][0] == "system"  # a chat conversation, flattened for the base model
    assert advice is None or advisor.allowed(advice.option, decision)
    assert usage.failures == 0


def test_bounded_production_learning_asks_one_line_per_answer(server):
    """Selection, English rule and, when the model writes one, the rule and its revision: every request
    bounded as config/prompts/bounded_answers.yaml says, and what comes back is a production that
    passed its replay check or nothing, never a provider error."""
    from task_learning.llm.answer_bounds import load_bounds
    from task_learning.productions.agent import Decision
    from task_learning.productions.knowledge import WorldKnowledge
    from task_learning.productions.language import MatchContext, check_replay
    from task_learning.productions.learner import BOUNDED, Family, LLMAdvisor
    from test.productions_helpers import lettuce_state

    world = WorldKnowledge(oracle=lambda s: True)
    decision = Decision(task="slice a/an lettuce", env=lettuce_state(), history=[],
                        options=["motor action: put Lettuce_895e9ec5 on CounterTop4", "motor action: move to CounterTop4"],
                        blacklist=[], reason="no_production", world=world)
    with client_on(server) as client:
        recording = Capped(client, max_tokens=4096)  # nothing cut: the bounds' own max_tokens are sent
        advisor = LLMAdvisor(recording, [Family("find a/an <object>")], learn=True, max_revisions=1,  # type: ignore[arg-type]
                             max_invalid=1, answers="bounded")
        advice = advisor.advise(decision)
        usage = client.usage
    bounds = load_bounds()
    kinds = [r.prompt_type for r in recording.requests]
    assert kinds[0] == "production_selection" and usage.failures == 0
    for request in recording.requests:
        bound = bounds[BOUNDED[request.prompt_type]]
        assert request.max_tokens == bound.max_tokens and request.stop == bound.stop
        assert request.prompt.endswith(bound.cue)
    assert usage.completion_tokens <= sum(r.max_tokens for r in recording.requests)
    if advice is not None and advice.production is not None:  # learned: it replays to the chosen option
        assert check_replay(advice.production, MatchContext(decision.task, decision.env, world), advice.option) == ""


# ------------------------------------------------------------------------------- anticipation
def test_an_anticipation_prompt(server):
    from task_learning.anticipation.anticipator import Anticipator
    from task_learning.anticipation.config import load_anticipation_config
    from task_learning.anticipation.context import parse_context
    from task_learning.anticipation.experience import Experience, seed_experience
    from task_learning.kb.store import KnowledgeBase

    cfg = load_anticipation_config()
    with KnowledgeBase(":memory:") as kb:
        seed_experience(kb, cfg)
        experience = Experience.from_kb(kb)
    with client_on(server) as client:
        result = Anticipator(Capped(client, 64), cfg, experience).anticipate(
            parse_context("weekday, working from home", cfg))
        usage = client.usage
    assert usage.calls == 1 and usage.failures == 0 and not result.error
    assert set(result.kept) <= set(result.proposed) and set(result.kept) <= set(cfg.tasks)


# ------------------------------------------------------------------------- a server that fails
def _busy_slots(server: LocalServer) -> list[int]:
    with urllib.request.urlopen(f"{server.root_url}/slots", timeout=10.0) as answer:
        return [slot["id"] for slot in json.loads(answer.read()) if slot.get("is_processing")]


def test_a_call_cut_at_its_deadline_stops_the_servers_decoding(server):
    """A request the client gives up on must not go on decoding: llama-server cancels a request
    whose connection closed, and the client closes it at its deadline (issue 43). The grammar
    never lets the answer end, so only the cut can stop it before its 6,000 tokens."""
    provider = LocalProvider(base_url=server.base_url, model_name=server.settings.model_name)
    endless = LLMRequest(prompt_type="initial", prompt="Letters:", max_tokens=6000,
                         constraint=Constraint(grammar="root ::= [a-z] root"))
    try:
        with pytest.raises(ConnectionProviderError, match="timed out after 3 s"):
            provider.complete(endless, 3.0)
        deadline = time.monotonic() + 60.0
        while _busy_slots(server) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _busy_slots(server), "the server still decodes the answer the client gave up on"
        assert "cancel task" in server._log_text()  # the server's own word: it cancelled, not finished
    finally:
        provider.close()


def _owned_client() -> LLMClient:
    """A client that starts its own server. Its calls get the local default deadline (a first call
    on a cold server of a loaded machine can take many seconds); a test shortens it only for the
    call that must fail (`FAILING_CALL_TIMEOUT_S`)."""
    return make_client("local", cache=None, timeout_s=120.0, max_retries=2, backoff_s=0.01)


FAILING_CALL_TIMEOUT_S = 5.0


def test_a_killed_server_ends_the_run_naming_it_and_a_new_one_serves(tmp_path):
    templates = load_templates()
    with _owned_client() as client:
        assert client.complete(templates.goal_request(MUG, "initial", scope="Mug|1")).ok
        server = client.provider.server
        os.kill(server.process.pid, signal.SIGKILL)
        server.process.wait(30)
        client.timeout_s = FAILING_CALL_TIMEOUT_S
        failed = client.complete(templates.goal_request(MUG, "recurse", " The", scope="Mug|1"))
        assert "the LLM server (llama-server, pid" in failed.error and "died: killed by SIGKILL" in failed.error
        with pytest.raises(LLMUnavailableError, match=r"LLM server .* died"):
            client.raise_if_unavailable()
    with _owned_client() as again:  # a restart recovers
        assert again.complete(templates.goal_request(MUG, "initial", scope="Mug|1")).ok


def test_a_hung_server_is_named_within_the_call_deadline():
    templates = load_templates()
    with _owned_client() as client:
        assert client.complete(templates.goal_request(MUG, "initial", scope="Mug|1")).ok
        pid = client.provider.server.process.pid
        client.timeout_s = FAILING_CALL_TIMEOUT_S  # the hung call: named within this deadline
        os.kill(pid, signal.SIGSTOP)
        try:
            failed = client.complete(templates.goal_request(MUG, "recurse", " The", scope="Mug|1"))
        finally:
            os.kill(pid, signal.SIGCONT)
    assert "hangs: /health silent" in failed.error and "the LLM server (llama-server" in failed.error
    assert "LLM server" in client.unavailable


def test_llm_serve_prints_its_url_serves_and_stops_on_ctrl_c():
    proc = subprocess.Popen([sys.executable, "-m", "task_learning.apps.cli", "llm", "serve"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        url = proc.stdout.readline().strip()  # printed once /health said ok
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1"), proc.stderr.read()
        serving = next(line for line in proc.stderr if "serving at" in line)
        pid = int(re.search(r"pid (\d+)", serving).group(1))
        body = json.dumps({"prompt": "The cat sat on the", "max_tokens": 3, "temperature": 0}).encode()
        request = urllib.request.Request(f"{url}/completions", body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=120) as answer:
            assert json.load(answer)["choices"][0]["text"]
    finally:
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C in its terminal
        code = proc.wait(60)
    assert code == 0
    assert not os.path.exists(f"/proc/{pid}")  # the server went with it (reaped: no zombie either)
