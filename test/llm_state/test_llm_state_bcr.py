"""BCR's prompt with LLM-State's notes (issue 17: "BCR's prompt can include the LLM-State summary
when both are on"): without notes the request is exactly the BCR paper's; with them the open state
(entries and summary) of a real LLM-State run comes before the candidates, and in the context."""
from __future__ import annotations

from task_learning.bcr.engines import LLMEngine
from task_learning.bcr.literals import parse_literal
from task_learning.bcr.prompt import MAX_STATE_NOTES_CHARS, STATE_NOTES, build_prompt, build_request
from task_learning.llm.base import LLMRequest, LLMResponse
from task_learning.llm.client import LLMClient, make_client
from task_learning.llm_state.agent import LLMStateAgent
from task_learning.llm_state.household import HouseholdWorld, load_household
from task_learning.llm_state.state import LatestState
from test.bcr.test_bcr_engines import first_context  # the apple task's first real choice

GOAL = [parse_literal("inside(Apple|1, Fridge|1)")]


class Recorder:
    name = "recorder"
    model = "record"

    def __init__(self) -> None:
        self.requests: list[LLMRequest] = []

    def complete(self, request: LLMRequest, timeout_s: float) -> LLMResponse:
        self.requests.append(request)
        return LLMResponse(text="$$ nothing from the list $$", prompt_tokens=10, completion_tokens=5)


def llm_state_notes() -> LatestState:
    """LLM-State's own loop (offline model, not a language model) on a household task with a
    failure in it, its states collected through on_state."""
    board = LatestState()
    assert board.render() == ""
    house = load_household()
    task = house.task("heat_milk")
    world = HouseholdWorld(house, "map1", task)
    LLMStateAgent(make_client("offline"), "ours", on_state=board.update).run(world, task)
    assert board.state is not None and board.state.summary and board.state.key_objects
    return board


def test_without_notes_the_request_is_the_bcr_papers():
    args = (GOAL, [], ["PickupObject(Apple|1)"], ["NavigateToObject(Fridge|1) -> ok"], [])
    plain = build_request(*args)
    assert build_request(*args, state_notes="  ") == plain
    assert "llm_state" not in plain.context and STATE_NOTES not in plain.messages[0][1]
    assert build_prompt(*args) == plain.messages[0][1]


def test_llm_state_notes_come_before_the_candidates_in_every_ask():
    board = llm_state_notes()
    provider = Recorder()
    engine = LLMEngine(LLMClient(provider, cache=None), max_reasks=1, state_notes=board.render)
    chosen = engine.select(first_context())
    assert chosen.requests == 2 and len(provider.requests) == 2  # asked again: notes both times
    notes = board.render()
    assert "Reasoning: " in notes and f"{board.state.key_objects[0]}:" in notes
    for request in provider.requests:
        prompt = request.messages[0][1]
        assert prompt.index(STATE_NOTES) < prompt.index(notes) < prompt.index("Candidate actions")
        assert request.context["llm_state"] == notes


def test_notes_are_cut_and_a_later_state_is_read_afresh():
    notes = ["x: " + "a | " * 3000]
    provider = Recorder()
    engine = LLMEngine(LLMClient(provider, cache=None), max_reasks=0, state_notes=lambda: notes[0])
    context = first_context()
    engine.select(context)
    assert len(provider.requests[0].context["llm_state"]) <= MAX_STATE_NOTES_CHARS + 4
    notes[0] = "fridge1: closed\n\n\nReasoning: the fridge was closed"
    engine.select(context)
    assert provider.requests[1].context["llm_state"] == notes[0]
