"""LLM-State (the LLM-State paper): an open state an LLM grows and rebuilds, and a policy that plans from it.

state.py (key objects, entries, summary), calls.py (the strict function-call parser),
prompts.py (attention, estimator, policy and the baselines' prompts), agent.py (Algorithm 1 and
the baselines), household.py (the open-world household the experiments run in).
"""
from task_learning import lazy_exports

_EXPORTS = {
    "Completer": "task_learning.llm_state.agent",
    "LLMStateAgent": "task_learning.llm_state.agent",
    "METHODS": "task_learning.llm_state.agent",
    "TrialResult": "task_learning.llm_state.agent",
    "run_trial": "task_learning.llm_state.agent",
    "Call": "task_learning.llm_state.calls",
    "parse_attention": "task_learning.llm_state.calls",
    "parse_estimator": "task_learning.llm_state.calls",
    "parse_plan": "task_learning.llm_state.calls",
    "Household": "task_learning.llm_state.household",
    "HouseholdWorld": "task_learning.llm_state.household",
    "load_household": "task_learning.llm_state.household",
    "HistoryEntry": "task_learning.llm_state.prompts",
    "PROMPT_TYPES": "task_learning.llm_state.prompts",
    "attention_prompt": "task_learning.llm_state.prompts",
    "estimator_prompt": "task_learning.llm_state.prompts",
    "policy_prompt": "task_learning.llm_state.prompts",
    "OpenState": "task_learning.llm_state.state",
    "LLMStateStrategy": "task_learning.llm_state.strategy",
    "STRATEGIES": "task_learning.llm_state.strategy",
    "THOR_BACKENDS": "task_learning.llm_state.thor_tasks",
    "load_thor_tasks": "task_learning.llm_state.thor_tasks",
    "run_thor_trial": "task_learning.llm_state.thor_tasks",
}

__all__, __getattr__ = lazy_exports(__name__, _EXPORTS)
