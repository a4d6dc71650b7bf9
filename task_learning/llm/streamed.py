"""A completions answer read as a stream (server-sent events) and put back together as the answer
the server would have sent whole, one per prompt of a list.

Why stream: a request the client gives up on must stop decoding on the server. llama-server
(llama.cpp as pinned, `tools/server/server-queue.cpp`) cancels a request whose connection closed,
but a request answered whole looks at its connection only after a full second in which *no*
request of the server got a result; while other requests finish (the other slot, a `/slots` or
`/metrics` poll) it never looks, and the answer nobody reads is decoded to its end, holding a slot
(measured 2026-12-02, docs/llm.md). A streamed request is looked at before every token it sends:
the server stops at the first token after the client closed the connection, which the client
does at its deadline (`http_guard.py`).

Each chunk carries one prompt's next piece (`index`), its tokens' log probabilities (the chat
layout `logprobs.content`, or the legacy lists), and with the prompt's last piece its
`finish_reason` and `usage` (llama.cpp sends each prompt's own usage: exact per prompt, where a
list answered whole reports only the first prompt's). Chunks with no choice (llama.cpp opens with
`data: null`) carry nothing.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

LEGACY_LISTS = ("tokens", "token_logprobs", "top_logprobs")


@dataclass
class StreamedChoice:
    """One prompt's answer, shaped as a completions choice (`text`, `index`, `finish_reason`,
    `logprobs` as a mapping in the layout the server sent)."""

    index: int
    text: str = ""
    finish_reason: str | None = None
    content: list[Any] = field(default_factory=list)
    legacy: dict[str, list[Any]] = field(default_factory=dict)
    has_logprobs: bool = False

    @property
    def logprobs(self) -> dict[str, Any] | None:
        if not self.has_logprobs:
            return None
        if self.legacy:
            return dict(self.legacy)
        return {"content": self.content}

    def add(self, choice: Any) -> None:
        self.text += _field(choice, "text") or ""
        reason = _field(choice, "finish_reason")
        if reason:
            self.finish_reason = str(reason)
        logprobs = _field(choice, "logprobs")
        if logprobs is None:
            return
        self.has_logprobs = True
        content = _field(logprobs, "content")
        if isinstance(content, list):
            self.content.extend(content)
        for name in LEGACY_LISTS:
            values = _field(logprobs, name)
            if isinstance(values, list):
                self.legacy.setdefault(name, []).extend(values)


@dataclass
class StreamedAnswer:
    """One prompt's whole answer, shaped as a one-choice completions response."""

    choices: list[StreamedChoice]
    usage: Any = None


def assemble(chunks: Iterable[Any]) -> list[StreamedAnswer]:
    """The chunks of one streamed completions request, one answer per prompt, in prompt order."""
    answers: dict[int, StreamedAnswer] = {}
    for chunk in chunks:
        choices = _field(chunk, "choices") or ()
        usage = _field(chunk, "usage")
        for choice in choices:
            index = _field(choice, "index")
            index = index if isinstance(index, int) else 0
            answer = answers.setdefault(index, StreamedAnswer([StreamedChoice(index)]))
            answer.choices[0].add(choice)
            if usage is not None:
                answer.usage = usage
    return [answers[i] for i in sorted(answers)]


def _field(item: Any, name: str) -> Any:
    """A field of a chunk part, parsed by the SDK into an object or left a dict."""
    if item is None:
        return None
    if isinstance(item, dict):
        return item.get(name)
    return getattr(item, name, None)
