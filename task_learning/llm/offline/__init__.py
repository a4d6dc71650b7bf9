"""The `offline` provider: a deterministic model of household knowledge, NOT a language model.

It stands in for an LLM in demos and tests: goal sentences token by token with cl100k_base tokens
and top alternatives (including plausible answers the robot cannot use), sampled above
temperature 0, integer answers to Selection, and (through offline/bcr.py) BCR action choices. Its
knowledge is editable data in config/offline_model/, hand-written with the paper's tables at
hand; it reads no scene's preferences or other ground truth at run time.
"""
from task_learning.llm.offline.provider import LABEL, OfflineProvider, count_prompt_tokens

__all__ = ["LABEL", "OfflineProvider", "count_prompt_tokens"]
