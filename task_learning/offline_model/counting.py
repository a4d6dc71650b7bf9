"""The prompt side of a response's usage, counted as a hosted model would count it, so that the
stand-in's token figures are comparable with a real model's."""
from __future__ import annotations

from task_learning.llm.base import LLMRequest
from task_learning.llm.tokens import count_chat_tokens, count_tokens


def count_prompt_tokens(request: LLMRequest) -> int:
    """The request's prompt tokens as cl100k_base counts them (chat: with OpenAI's per-message
    overhead)."""
    if request.is_chat:
        return count_chat_tokens(request.messages)
    return count_tokens(request.prompt)
