"""The bootstrapped-productions paper's families on the AI2-THOR bridge: productions bootstrapped in FloorPlan1 (offline
model: not a language model) run held-out instances through the real ai2thor Controller and the
project's stand-in simulator, the instance's set-up sent as SetObjectPoses; slice and clear on
FloorPlan14 succeed as the world's metadata says, with 0 LLM calls, as on the symbolic world (world
knowledge asked ahead over the training kitchen's types, the catalogue extension)."""
from __future__ import annotations

import pytest

from task_learning.llm.client import make_client
from task_learning.productions.agent import ProductionSet
from task_learning.productions.experiment import (
    BootstrapSettings,
    bootstrap,
    families_book,
    held_out_instances,
    run_trial,
)
from task_learning.productions.families import FamilyError, instance_world, load_kitchen, make_instance
from task_learning.productions.knowledge import WorldKnowledge
from task_learning.world.factory import WorldChoice

from ..thor_helpers import settings, thor_env  # noqa: F401  (thor_env: a fixture)


def test_an_unknown_backend_is_refused_by_name():
    instance = make_instance("clear", load_kitchen("FloorPlan14"), __import__("random").Random(0))
    with pytest.raises(FamilyError, match="unknown world backend 'unity'"):
        with instance_world(instance, load_kitchen("FloorPlan14"), WorldChoice("unity")):
            pass


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.usefixtures("thor_env")
def test_bootstrapped_productions_slice_and_clear_through_the_ai2thor_controller():
    pytest.importorskip("ai2thor")
    client = make_client("offline", cache=None)
    productions, knowledge = ProductionSet(), WorldKnowledge()
    book = families_book({})
    # FloorPlan1, symbolic; with the catalogue prefetch (the extension; FloorPlan14 has no receptacle
    # type FloorPlan1 lacks), so that world knowledge is no reason for an LLM call here
    bootstrap(productions, client, knowledge, book,
              settings=BootstrapSettings(seed=0, world_knowledge="catalogue"))
    for family in ("slice", "clear"):
        instance = held_out_instances(family, ["FloorPlan14"], seed=0, backend="ai2thor")[0]
        result = run_trial(instance, "bootstrapped", productions, client, book, knowledge, seed=0,
                           where=WorldChoice("ai2thor", settings()))
        assert result.world == "ai2thor" and result.outcome == "done", result
        assert result.succeeded == result.units > 0 and result.steps > 3, result
        assert result.llm_calls == 0 and result.tokens == 0, result
