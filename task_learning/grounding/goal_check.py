"""Re-grounding an imported goal: does its text mean the literals it carries, in its scene?

A knowledge-base export is just a file: anyone can write "the cheese is in the fridge" as the text
and inside(?object, GarbageCan) as the literals, and the robot acts on the literals while a person
reviewing it reads the text. `kb import` therefore analyses every goal's text again against the
scene the goal belongs to, with the goal's own object in context (the same analysis STARS uses),
lifts the literals that analysis yields, and refuses the file when they differ from the entry's,
naming the entry. A text that is not viable there (a wrong object included) is refused too.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from task_learning.errors import ConfigError, TaskLearningError
from task_learning.grounding.analysis import analyze_goal
from task_learning.grounding.knowledge import GroundingKnowledge
from task_learning.inputs.names import normalize_name
from task_learning.kb import LearnedGoal, lift_literals
from task_learning.world import SymbolicWorld, load_scene, resolve_object
from task_learning.world.scene import Scene, available_scenes
from task_learning.world.state import world_state_from_metadata


def _literals_text(literals: Any) -> str:
    return " & ".join(sorted(str(lit) for lit in literals)) or "(none)"


@dataclass
class ImportChecker:
    """`verify(goal, key)` for KnowledgeBase.import_dict. `scene`: the scene every goal belongs
    to; None: for each goal the scene whose task is the goal's task."""

    source: str
    scene: str | None = None
    knowledge: GroundingKnowledge = field(default_factory=GroundingKnowledge.load)
    _scenes: dict[str, tuple[Scene, dict[str, Any]]] = field(default_factory=dict)

    def _scene_for(self, goal: LearnedGoal, key: str) -> tuple[Scene, dict[str, Any]]:
        names = [self.scene] if self.scene else available_scenes()
        for name in names:
            if name not in self._scenes:
                scene = load_scene(name)
                self._scenes[name] = (scene, copy.deepcopy(SymbolicWorld(scene).metadata))
            scene, metadata = self._scenes[name]
            if normalize_name(scene.task) == normalize_name(goal.task):
                return scene, metadata
        where = f"scene {self.scene!r} defines the task {self._scenes[self.scene][0].task!r}" \
            if self.scene else "no scene defines it (name one with --scene)"
        raise ConfigError(self.source, key, f"task {goal.task!r}: {where}")

    def __call__(self, goal: LearnedGoal, key: str) -> None:
        scene, metadata = self._scene_for(goal, key)
        try:
            object_id = resolve_object(metadata, goal.context)
        except TaskLearningError as exc:
            raise ConfigError(self.source, key, f"context {goal.context!r} names no object of scene "
                                                f"{scene.name!r}: {exc}") from None
        type_of = {o["objectId"]: o["objectType"] for o in metadata.get("objects") or []}
        if type_of[object_id] != goal.object_type:
            raise ConfigError(self.source, key, f"object_type {goal.object_type!r} but the context "
                                                f"{goal.context!r} is a {type_of[object_id]}")
        analysis = analyze_goal(goal.text, world_state_from_metadata(metadata), object_id, self.knowledge)
        if not analysis.viable:
            raise ConfigError(self.source, key, f"text {goal.text!r} is not a viable goal for the "
                                                f"{goal.context} in scene {scene.name!r}: "
                                                f"{analysis.feedback}")
        meant = lift_literals(list(analysis.literals), object_id, type_of)
        if set(meant) != set(goal.literals):
            raise ConfigError(self.source, key, f"literals {_literals_text(goal.literals)} do not "
                                                f"match the text {goal.text!r}, which means "
                                                f"{_literals_text(meant)}")
