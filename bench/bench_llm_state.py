"""LLM-State (the LLM-State paper): prompt size and wall time per step as the history grows.

The paper rebuilds the state from the whole history at every rebuild (C(ŝ_t, A_h, O_t) with A_h
since step 0), so the estimator's prompt grows with every action, and the policy's prompt too
(its history block). This bench takes one long run (the offline model's w/o States policy on
"make 6 slices of toasts", which does not stop by itself, capped at 150 steps), and at 10, 50 and
150 steps of history measures for one loop iteration (attention, estimator, policy: prompts
built, answered by the offline model, parsed, the state rebuilt):
* prompt tokens of the estimator and the policy (cl100k_base), and of the whole iteration;
* wall time of the iteration (the offline model's own time: a real model adds its latency,
  which grows with the prompt too);
for the paper's mode and for this project's windowed mode (`history_window`: the estimator reads
the last state plus the last N actions, the policy the last N actions). It then reports where the
paper mode's estimator prompt passes the 8,192-token context of gpt-4-0613 (the paper's model),
extrapolating linearly from the measured growth, and the success of both modes on the paper's
tasks with the offline model (not a language model).

Run: .venv/bin/python bench/bench_llm_state.py [--window 20] [--repeat 5]
"""
from __future__ import annotations

import argparse
import statistics
import time

from task_learning.llm.client import make_client
from task_learning.llm_state.agent import LLMStateAgent, TrialResult
from task_learning.llm_state.calls import parse_attention, parse_estimator, parse_plan
from task_learning.llm_state.household import HouseholdWorld, load_household
from task_learning.llm_state.prompts import HistoryEntry, attention_prompt, estimator_prompt, policy_prompt
from task_learning.llm_state.state import OpenState

GPT4_0613_CONTEXT = 8192
POINTS = (10, 50, 150)


def long_history(house, client) -> tuple[list[HistoryEntry], HouseholdWorld]:
    task = house.task("six_toasts")
    world = HouseholdWorld(house, "map1", task)
    result = LLMStateAgent(client, "no_states").run(world, task, cap=max(POINTS))
    history = []
    for line in result.action_log:
        text = line.split(" [", 1)[0]
        ok = text.endswith("(Success)")
        parts = [p.strip(" '") for p in text[1:text.index("]")].split(",")]
        from task_learning.llm_state.calls import Call

        history.append(HistoryEntry(Call(parts[0], tuple(parts[1:])), ok))
    return history, world


def one_iteration(client, state: OpenState, history, obs, goal, window: int | None) -> tuple[dict[str, int], float]:
    started = time.perf_counter()
    tokens = {}
    text, ctx = attention_prompt(state, obs, goal)
    from task_learning.llm.base import LLMRequest

    answer = client.complete(LLMRequest("llm_state_attention", text, context=ctx))
    tokens["attention"] = answer.prompt_tokens
    state.add_key_objects(parse_attention(answer.text).calls, obs.known)
    recent = history[-window:] if window else history
    previous = None
    if window and len(history) > window:  # as the agent does: the window applies once history is longer
        previous = OpenState(list(state.key_objects), dict(state.entries), state.summary)
    text, ctx = estimator_prompt(state, recent, obs, goal, previous=previous)
    answer = client.complete(LLMRequest("llm_state_estimator", text, context=ctx))
    tokens["estimator"] = answer.prompt_tokens
    state.rebuild(parse_estimator(answer.text).calls, obs.known)
    text, ctx = policy_prompt(goal, obs, recent, state)
    answer = client.complete(LLMRequest("llm_state_policy", text, context=ctx))
    tokens["policy"] = answer.prompt_tokens
    parse_plan(answer.text)
    return tokens, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--window", type=int, default=20, help="history window of the windowed mode")
    parser.add_argument("--repeat", type=int, default=5, help="timed repetitions per point (median)")
    args = parser.parse_args()
    house = load_household()
    client = make_client("offline", cache=False)
    history, world = long_history(house, client)
    obs = world.observe()
    goal = house.task("six_toasts").goal
    print(f"history of {len(history)} actions (w/o States on six_toasts, map1); offline model, NOT an LLM")
    print(f"{'steps':>6s} {'mode':>10s} {'attention':>10s} {'estimator':>10s} {'policy':>8s} {'total':>8s} {'ms/iter':>8s}")
    growth = {}
    for n in POINTS:
        for mode, window in (("paper", None), (f"window{args.window}", args.window)):
            times = []
            tokens: dict[str, int] = {}
            for _ in range(args.repeat):
                state = OpenState()
                tokens, elapsed = one_iteration(client, state, history[:n], obs, goal, window)
                times.append(elapsed)
            total = sum(tokens.values())
            if window is None:
                growth[n] = (tokens["estimator"], tokens["policy"])
            print(f"{n:6d} {mode:>10s} {tokens['attention']:10d} {tokens['estimator']:10d} {tokens['policy']:8d} "
                  f"{total:8d} {1000 * statistics.median(times):8.1f}")
    for i, prompt in enumerate(("estimator", "policy")):
        first, last = growth[POINTS[0]][i], growth[POINTS[-1]][i]
        per_step = (last - first) / (POINTS[-1] - POINTS[0])
        limit = POINTS[0] + (GPT4_0613_CONTEXT - first) / per_step if per_step > 0 else float("inf")
        print(f"paper mode: the {prompt} prompt grows by {per_step:.1f} tokens per action of history; it "
              f"passes gpt-4-0613's {GPT4_0613_CONTEXT} tokens at about {limit:.0f} actions.")
    print(f"window{args.window}: the prompts stop growing once the history is longer than the window.")

    results: dict[str, list[TrialResult]] = {"paper": [], f"window{args.window}": []}
    started = time.perf_counter()
    for mode, window in (("paper", None), (f"window{args.window}", args.window)):
        for task in house.paper_tasks:
            for map_name in house.paper_maps:
                spec = house.task(task)
                agent = LLMStateAgent(client, "ours", history_window=window)
                results[mode].append(agent.run(HouseholdWorld(house, map_name, spec), spec))
    print(f"\nsuccess of Ours on the paper's 15 tasks x 5 maps (offline model), {time.perf_counter() - started:.1f} s:")
    for mode, runs in results.items():
        print(f"  {mode:>10s}: {sum(r.success for r in runs)}/{len(runs)} reached the goal, "
              f"{sum(r.tokens for r in runs)} tokens, mean {statistics.mean(r.steps for r in runs):.1f} steps")


if __name__ == "__main__":
    main()
