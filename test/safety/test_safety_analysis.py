"""Issue 10: a goal elicited for object X must be about X. A model that answers about another
object ("the cheese is in the fridge" when asked about the plastic cups) no longer has its answer
stored as a viable goal for every object; the mismatch says so in a sentence the LLM can act on."""
from __future__ import annotations

import json

from task_learning.apps.cli import main as cli_main
from task_learning.grounding import analyze_goal
from task_learning.grounding.scene_state import scene_world_state
from task_learning.llm.base import LLMResponse, TokenLogprob
from task_learning.stars.elicit import elicit_goal
from task_learning.types import MismatchKind
from task_learning.world.scene import load_scene


def test_a_goal_about_another_object_is_not_viable():
    state = scene_world_state("store_groceries")
    analysis = analyze_goal("the goal is that the butter is in the fridge", state, "Cheese|1")
    assert not analysis.viable and analysis.kind is MismatchKind.WRONG_OBJECT
    assert analysis.feedback == "No. The goal must be about the cheese."
    # Without an object in context there is nothing to be about; about the object: viable.
    assert analyze_goal("the goal is that the butter is in the fridge", state).viable
    own = analyze_goal("the goal is that the cheese is in the fridge", state, "Cheese|1")
    assert own.viable and any("Cheese|1" in lit.args for lit in own.literals)


def test_analyze_cli_says_not_viable(capsys):
    code = cli_main(["analyze", "--scene", "store_groceries", "--object", "cheese", "--json",
                     "the goal is that the butter is in the fridge"])
    out = capsys.readouterr().out
    data = json.loads(out)
    assert code == 0 and data["viable"] is False
    assert data["mismatches"][0]["kind"] == "wrong_object"


class CheeseModel:
    """A model that always answers about the cheese, whatever it is asked about."""

    answer = " the cheese is in the fridge"

    def __init__(self) -> None:
        from task_learning.types import LLMUsage

        self.usage = LLMUsage()
        self.requests = []

    def complete(self, request):
        self.requests.append(request)
        if request.prompt_type.startswith("selection"):
            return LLMResponse(text=" 1", tokens=[])
        words = self.answer.split(" ")[1:]
        tokens = [TokenLogprob(" " + w, -0.1, ((" " + w, -0.1),)) for w in words]
        return LLMResponse(text=self.answer, tokens=tokens)


def test_a_model_answering_about_the_wrong_object_gives_no_goal_and_is_told_why():
    scene = load_scene("store_groceries")
    model = CheeseModel()
    result = elicit_goal(scene.task, "PlasticCups|1", {"objects": scene.objects}, scene, "STARS", model)
    assert result.chosen is None and result.outcome == "no_viable_goal"
    kinds = {m.kind for c in result.candidates for m in c.mismatches}
    assert MismatchKind.WRONG_OBJECT in kinds
    repairs = [r for r in model.requests if r.prompt_type.startswith("repair")]
    assert repairs and "The goal must be about the plastic cups." in repairs[0].prompt
    # For the cheese itself the same answer is the goal.
    cheese = elicit_goal(scene.task, "Cheese|1", {"objects": scene.objects}, scene, "STARS", CheeseModel())
    assert cheese.chosen is not None and "cheese" in cheese.chosen.text
