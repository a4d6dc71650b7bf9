"""The `offline` provider: a deterministic model of household knowledge, NOT a language model.

It stands in for an LLM in demos and tests: goal sentences token by token with GPT-like tokens and
top alternatives (including plausible answers the robot cannot use), integer answers to
Selection, and (through offline/bcr.py, when present) BCR action choices. Its knowledge is
editable data in config/offline_model/; it never reads a scene's preferences or other ground truth.
"""
from task_learning.llm.offline.provider import LABEL, OfflineProvider, count_prompt_tokens

__all__ = ["LABEL", "OfflineProvider", "count_prompt_tokens"]
