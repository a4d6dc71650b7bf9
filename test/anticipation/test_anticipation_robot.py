"""The robot's day (task anticipation on the planner's side): every task maps to goal literals
the executor reaches in the symbolic world; only confirmed tasks are performed."""
from __future__ import annotations

import json

import pytest

from task_learning.anticipation.config import load_anticipation_config
from task_learning.anticipation.experience import Experience
from task_learning.anticipation.household import load_household
from task_learning.anticipation.proposals import RoutineOperator
from task_learning.anticipation.robot_day import load_robot_goals, run_robot_day
from task_learning.apps.cli import main
from task_learning.bcr.domain import load_domain
from task_learning.bcr.engines import HeuristicEngine
from task_learning.kb.store import KnowledgeBase
from task_learning.llm.client import make_client
from task_learning.oversight.operator import ScriptedOperator
from task_learning.planning.executor import GoalExecutor
from task_learning.world.factory import make_backend


@pytest.fixture(scope="module")
def cfg():
    return load_anticipation_config()


@pytest.fixture(scope="module")
def goals(cfg):
    return load_robot_goals(tasks=cfg.tasks)


def _day(cfg, name):
    return next(d for d in load_household(tasks=cfg.tasks).days if d["name"] == name)


def test_every_task_is_reachable_by_the_planner(cfg, goals):
    executor = GoalExecutor(load_domain("household"), HeuristicEngine, None)
    for task in cfg.tasks:
        world = make_backend("symbolic", str(goals.scene), seed=0)
        assert executor.reach(world, list(goals.tasks[task])).success, task


def test_only_confirmed_tasks_are_performed_and_policies_are_reused(cfg, goals):
    day = _day(cfg, "trace_03")
    with KnowledgeBase(":memory:") as kb:
        operator = ScriptedOperator(["no", "yes"])  # then every question times out
        first = run_robot_day(cfg, Experience(cfg.experience), day, client=make_client("offline"),
                              operator=operator, kb=kb, goals=goals)
        assert first.finished and first.unconfirmed_executions == 0
        assert len(first.confirmed) == 1 and first.refused
        assert [p["task"] for p in first.performed] == first.confirmed
        second = run_robot_day(cfg, Experience(cfg.experience), day, client=make_client("offline"),
                               operator=RoutineOperator(day["tasks"]), kb=kb, goals=goals)
    assert {p["task"] for p in second.performed} <= set(second.confirmed)
    assert any(p["policy_reused"] for p in second.performed if p["task"] in first.confirmed)
    assert all(p["success"] for p in first.performed + second.performed)


def test_cli_robot_day(capsys):
    assert main(["anticipate", "--day", "trace_01", "--robot", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["finished"] and data["unconfirmed_executions"] == 0
    assert {p["task"] for p in data["performed"]} <= set(data["confirmed"])
    assert data["done_by_robot"]


def test_a_stopped_day_ends_before_its_next_action_and_asks_nothing_more(cfg, goals):
    """Issue 31 point 5, in process: the stop (a cancelled AnticipateDay) arrives while the robot
    performs its first task; the day returns what happened so far, no further primitive action
    runs (the human's included) and no further question is asked."""
    from task_learning.lifecycle.cancellation import StopToken

    day = _day(cfg, "trace_01")
    world = make_backend("symbolic", str(goals.scene), seed=0)
    steps: list[str] = []
    real_step = world.step

    def counting_step(action, **params):
        steps.append(action)
        return real_step(action, **params)

    world.step = counting_step
    stop = StopToken()
    operator = RoutineOperator(day["tasks"])

    def perform(task, literals, _confirmation_id):
        stop.request("canceled by the client")  # the cancel lands while the robot acts
        return {"task": task, "success": False, "actions": 0, "policy_reused": False, "message": "canceled"}

    with KnowledgeBase(":memory:") as kb:
        result = run_robot_day(cfg, Experience(cfg.experience), day, client=make_client("offline"),
                               operator=operator, kb=kb, goals=goals, world=world, perform=perform, stop=stop)
        asked = len(operator.asked)
        assert result.stopped == "canceled by the client" and not result.finished
        assert steps == [] and result.human_actions == 0 and len(result.performed) == 1
        assert asked == len(result.asked)
        stop_now = StopToken()
        stop_now.request("stopped")
        again = run_robot_day(cfg, Experience(cfg.experience), day, client=make_client("offline"),
                              operator=operator, kb=kb, goals=goals, world=world, stop=stop_now)
    assert again.stopped and again.asked == [] and len(operator.asked) == asked and steps == []
