"""LLM-State (the LLM-State paper): an open state an LLM grows and rebuilds, and a policy that plans from it.

state.py (key objects, entries, summary), calls.py (the strict function-call parser),
prompts.py (attention, estimator, policy and the baselines' prompts), agent.py (Algorithm 1 and
the baselines), household.py (the open-world household the experiments run in).
"""
