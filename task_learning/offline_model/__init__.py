"""The `offline` provider: a deterministic stand-in for a language model, NOT a language model.

It stands in for an LLM in demos and tests, with one responder per method: STARS goal sentences
token by token with cl100k_base tokens and top alternatives (including plausible answers the robot
cannot use), sampled above temperature 0, and integer answers to Selection (stars/); BCR action
choices (bcr.py); bootstrapped productions (productions.py); task anticipation (anticipation.py);
LLM-State (llm_state.py). Its knowledge is editable data in config/offline_model/, hand-written
with the papers' tables at hand; it reads no scene's preferences or other ground truth at run time.

It sits above the methods (its responders read their prompt formats) and is reached from `llm/`
only through the provider registry (llm/registry.py), by module path.
"""
from task_learning.offline_model.counting import count_prompt_tokens
from task_learning.offline_model.provider import LABEL, OfflineProvider

__all__ = ["LABEL", "OfflineProvider", "count_prompt_tokens"]
