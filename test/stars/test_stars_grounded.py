"""STARS under --decoding grounded (stars/grounded.py): the tree stays inside the object's grounded
goals, every request carries the constraint for its prefix, the scores are the SayCan-style
distribution, Selection is constrained to the options; the papers' protocol is unchanged
under free decoding."""
from __future__ import annotations

import math
from typing import ClassVar

import pytest

from task_learning.llm.base import LLMRequest, LLMResponse, TokenLogprob
from task_learning.llm.client import make_client
from task_learning.stars.elicit import ElicitationSetup, elicit_goal
from task_learning.stars.grounded import GoalSpace, shared_start
from task_learning.world.scene import load_scene


@pytest.fixture(scope="module")
def groceries():
    scene = load_scene("store_groceries")
    return scene, {"sceneName": scene.name, "objects": scene.objects}


class Recording:
    """The offline stand-in, keeping every request it was asked."""

    def __init__(self) -> None:
        self.client = make_client("offline")
        self.requests: list[LLMRequest] = []
        self.usage = self.client.usage

    def complete(self, request: LLMRequest) -> LLMResponse:
        self.requests.append(request)
        return self.client.complete(request)


def test_grounded_stars_with_the_stand_in_answers_only_grounded_goals(groceries):
    scene, metadata = groceries
    yogurt = next(o for o in scene.task_objects if o.startswith("Yogurt"))
    space = GoalSpace.build(*_state(metadata), yogurt, "yogurt")
    client = Recording()
    result = elicit_goal(scene.task, yogurt, metadata, scene, "STARS", client,
                         setup=ElicitationSetup(decoding="grounded"))
    assert result.decoding.value == "grounded" and result.candidates
    allowed = set(space.by_key)
    assert all(c.text in allowed and c.viable for c in result.candidates)
    assert math.isclose(sum(c.score for c in result.candidates), 1.0, rel_tol=1e-9)
    assert math.isclose(sum(s.probability for s in result.distribution), 1.0, rel_tol=1e-9)
    assert result.distribution[0].place_id == "Fridge|1"  # the stand-in's own first choice
    goal_requests = [r for r in client.requests if r.prompt_type in ("initial", "recurse")]
    assert goal_requests and all(r.constraint is not None and r.logprobs == 20 for r in goal_requests)
    assert all(r.prompt.endswith(r.constraint.after) and r.constraint.after.startswith(space.start)
               for r in goal_requests)
    selection = [r for r in client.requests if r.prompt_type == "selection"]
    # selection.yaml `grounded_answer: sentence`: the answer is one of the options' sentences
    assert selection and all(r.constraint is not None and r.constraint.choices[0].startswith(" The goal is that")
                             for r in selection)
    options = result.selection.options  # aliases of one goal are one option, with their summed share
    assert len({tuple(sorted(map(str, o.literals))) for o in options}) == len(options)
    assert math.isclose(sum(o.score for o in options), 1.0, rel_tol=1e-9)
    data = result.to_dict()
    assert data["decoding"] == "grounded" and data["distribution"][0]["place"] == "Fridge|1"


def test_free_decoding_sends_the_papers_requests(groceries):
    scene, metadata = groceries
    yogurt = next(o for o in scene.task_objects if o.startswith("Yogurt"))
    client = Recording()
    result = elicit_goal(scene.task, yogurt, metadata, scene, "STARS", client)
    assert result.decoding.value == "free" and result.distribution == []
    assert all(r.constraint is None for r in client.requests)
    assert all(r.logprobs == 5 for r in client.requests if r.prompt_type == "initial")


class Scripted:
    """A model that answers the root with a grounded goal whose place token has alternatives in and
    out of the constraint; branches get the rest of their goal."""

    usage = None

    def __init__(self, space: GoalSpace) -> None:
        self.space = space
        self.requests: list[LLMRequest] = []

    def complete(self, request: LLMRequest) -> LLMResponse:
        self.requests.append(request)
        after = request.constraint.after if request.constraint else ""
        if after == self.space.start:
            alternatives = ((" fridge", math.log(0.5)), (" kitchen", math.log(0.3)), (" pantry", math.log(0.15)))
            return LLMResponse(text=" in the fridge and the fridge is closed", tokens=[
                TokenLogprob(" in", 0.0, ()),
                TokenLogprob(" the", math.log(0.8), ((" the", math.log(0.8)), (" th", math.log(0.2)))),
                TokenLogprob(" fridge", math.log(0.5), alternatives),
                TokenLogprob(" and the fridge is closed", 0.0, ())])
        rest = next(c for c in self.space.choices if c.startswith(after))[len(after):]
        return LLMResponse(text=rest, tokens=[TokenLogprob(rest, 0.0, ())])


def test_the_tree_follows_only_alternatives_some_grounded_goal_continues(groceries):
    scene, metadata = groceries
    yogurt = next(o for o in scene.task_objects if o.startswith("Yogurt"))
    space = GoalSpace.build(*_state(metadata), yogurt, "yogurt")
    client = Scripted(space)
    result = elicit_goal(scene.task, yogurt, metadata, scene, "STAR", client,
                         setup=ElicitationSetup(decoding="grounded", templates=_search("paths")))
    assert result.counts["outside_constraint"] >= 1  # " kitchen": the robot sees no kitchen to put it in
    # " in the pantry" leaves one goal: recorded without a request (the rest is forced); " th" at
    # the forced " the" is another spelling of the same goals: not followed
    assert [r.constraint.after[len(space.start):] for r in client.requests] == [""]
    assert result.counts["settled"] == 1 and result.counts["forced_positions"] >= 1
    shares = {s.place_id: round(s.probability, 3) for s in result.distribution}
    assert shares == {"Fridge|1": round(0.5 / 0.65, 3), "Pantry|1": round(0.15 / 0.65, 3)}
    assert result.chosen is not None and "fridge" in result.chosen.text


def _search(how: str):
    from dataclasses import replace

    from task_learning.stars.prompts import load_templates

    templates = load_templates()
    return replace(templates, grounded=replace(templates.grounded, search=how))


class OneToken:
    """A model asked for one token where the goals part: per prefix (after the shared start) the
    token it writes and the alternatives, as llama.cpp reports them (before the grammar)."""

    usage = None
    ANSWERS: ClassVar[dict[str, tuple[str, dict[str, float]]]] = {
        "": (" in", {" in": 0.7, " on": 0.2, " at": 0.05}),
        " in the": (" fridge", {" fridge": 0.5, " kitchen": 0.3, " pantry": 0.15, " garbage": 0.0005}),
        " on the": (" counter", {" counter": 0.6, " table": 0.3}),
        " on the counter": (" top", {".": 0.5, " top": 0.4}),
    }

    def __init__(self, space: GoalSpace) -> None:
        self.space = space
        self.requests: list[LLMRequest] = []

    def complete(self, request: LLMRequest) -> LLMResponse:
        self.requests.append(request)
        chosen, top = self.ANSWERS[request.constraint.after[len(self.space.start):]]
        alternatives = tuple((t, math.log(p)) for t, p in top.items())
        return LLMResponse(text=chosen, tokens=[TokenLogprob(chosen, math.log(top[chosen]), alternatives)])


def test_the_decisive_search_asks_one_token_where_the_goals_part(groceries):
    scene, metadata = groceries
    yogurt = next(o for o in scene.task_objects if o.startswith("Yogurt"))
    space = GoalSpace.build(*_state(metadata), yogurt, "yogurt")
    client = OneToken(space)
    result = elicit_goal(scene.task, yogurt, metadata, scene, "STAR", client,
                         setup=ElicitationSetup(decoding="grounded", templates=_search("decisive")))
    asked = [r.constraint.after[len(space.start):] for r in client.requests if r.prompt_type != "selection"]
    # " the" after " in" / " on" is forced: asked with the prompt, never decoded
    assert asked == ["", " in the", " on the", " on the counter"]
    assert all(r.max_tokens == 1 for r in client.requests)
    assert result.counts["outside_constraint"] == 2  # " at", " kitchen": no grounded goal goes on so
    weights = {"Fridge|1": 0.7 * 0.5, "Pantry|1": 0.7 * 0.15, "DiningTable|1": 0.2 * 0.3,
               "CounterTop|1": 0.2 * 0.6 * 0.5 + 0.2 * 0.6 * 0.4}  # "counter" ends vs " top": one place
    total = sum(weights.values())
    shares = {s.place_id: round(s.probability, 4) for s in result.distribution}
    assert shares == {k: round(v / total, 4) for k, v in weights.items()}
    assert result.chosen is not None and "fridge" in result.chosen.text


def test_the_shared_start_ends_at_a_word():
    assert shared_start([" The goal is that the eggs are in the fridge", " The goal is that the eggs are on it"]) \
        == " The goal is that the eggs are"
    assert shared_start([]) == ""


def _state(metadata):
    from task_learning.world.state import world_state_from_metadata

    return (world_state_from_metadata(metadata),)


def test_only_the_tokens_that_chose_among_the_goals_count():
    space = GoalSpace([], " The goal is that the x is", (" The goal is that the x is in the fridge and the fridge is closed",
                                                        " The goal is that the x is on the counter",
                                                        " The goal is that the x is on the counter top"), {})
    from task_learning.stars.grounded import decisive

    fridge = decisive([0.9, 0.8, 0.3, 0.5, 0.9, 0.9, 0.9, 0.9],
                      [" in", " the", " fridge", " and", " the", " fridge", " is", " closed"], space)
    assert fridge == [0.9]  # " in" chose; everything after it was forced by the grammar
    counter = decisive([0.1, 0.8, 0.7, 0.6], [" on", " the", " counter", ""], space)
    assert counter == [0.1, 0.6]  # " on", then the end against " top"
    assert decisive([0.5, 0.5], [], space) == [0.5, 0.5]  # no token texts: every token counts


def test_both_rankings_come_from_the_same_paths():
    """A long goal of likely tokens against a short one of one less likely token: the product
    ranks the short one first, the geometric mean the long one (both reported by run --json)."""
    from types import SimpleNamespace

    from task_learning.experiments.grounded import grounded_report
    from task_learning.stars.grounded import place_order
    from task_learning.types import GoalCandidate, GoalLiteral

    def cand(i, place):
        c = GoalCandidate(text=f"g{i}", score=0.0, candidate_id=i)
        c.viable, c.literals = True, [GoalLiteral("inside", ("X|1", place))]
        return c

    cands = [cand(1, "Fridge|1"), cand(2, "Pantry|1")]
    paths = {1: (math.log(0.3), 1), 2: (2 * math.log(0.5), 2)}  # 0.3 vs 0.25 (product), 0.3 vs 0.5 (mean)
    assert [p["place"] for p in place_order(cands, paths, "sum")] == ["Fridge|1", "Pantry|1"]
    assert [p["place"] for p in place_order(cands, paths, "mean")] == ["Pantry|1", "Fridge|1"]
    scene = SimpleNamespace(preferences={"X|1": ["Pantry|1"]})
    report = grounded_report({"X|1": place_order(cands, paths, "sum")}, scene, {"X|1": place_order(cands, paths, "mean")})
    assert report["objects"]["X|1"]["rank"] == 2 and report["objects"]["X|1"]["rank_mean"] == 1
    assert report["first"] == 0 and report["first_mean"] == 1


def test_no_goal_is_a_place_of_the_kind_the_object_is_in(groceries):
    """Putting away moves an object to another kind of place: the yogurt, in one of three bags,
    gets no goal "in the bag" (another bag), and still every other receptacle it can go in."""
    scene, metadata = groceries
    yogurt = next(o for o in scene.task_objects if o.startswith("Yogurt"))
    (state,) = _state(metadata)
    space = GoalSpace.build(state, yogurt, "yogurt")
    kinds = {o.object_id: o.object_type for o in state.objects}
    assert space.goals and not any(kinds[g.place_id] == "Bag" for g in space.goals)
    assert {"Fridge|1", "Pantry|1", "Cupboard|1"} <= {g.place_id for g in space.goals}
    from task_learning.grounding.goal_space import grounded_goals

    bags = [g for g in grounded_goals(state, yogurt, "yogurt") if kinds[g.place_id] == "Bag"]
    assert bags  # the robot's goal grammar itself still reads them: only the goal space leaves them out
