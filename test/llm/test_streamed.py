"""The `local` provider streams its completions (llm/streamed.py), so a call cut at its deadline
stops llama-server's decoding: the request says `"stream": true`, the answer put back together
is the one sent whole (text, log probabilities, usage; each prompt of a list its own usage), and
a stream cut mid-answer is a timeout the client retries, not a malformed answer. Against the real
server: test_llm_local_model.py."""
from __future__ import annotations

import json
import math
import socket
import threading

import pytest

from task_learning.llm.base import ConnectionProviderError, LLMRequest
from task_learning.llm.local_provider import LocalProvider
from task_learning.llm.openai_provider import OpenAIProvider
from task_learning.llm.streamed import assemble
from task_learning.testing.fake_server import (
    COMPLETIONS,
    FakeOpenAIServer,
    ScriptedReply,
    as_event_stream,
    batch_completion_body,
    completion_body,
)

TOKENS = [(" in", math.log(0.9), {" in": math.log(0.9), " on": math.log(0.05)}),
          (" the fridge", math.log(0.6), {" the fridge": math.log(0.6), " the bag": math.log(0.3)})]


def request(i: int = 0) -> LLMRequest:
    return LLMRequest(prompt_type="initial", prompt=f"The goal is that the yogurt is {i}", logprobs=2, max_tokens=4)


def test_a_streamed_answer_is_the_answer_sent_whole():
    with FakeOpenAIServer() as server:
        server.set_default(COMPLETIONS, ScriptedReply(body=completion_body(TOKENS, layout="llamacpp", prompt_tokens=40)))
        provider = LocalProvider(base_url=server.base_url, model_name="m")
        streamed = provider.complete(request(), 10.0)
        provider.stream = False
        whole = provider.complete(request(), 10.0)
        bodies = [r.body for r in server.requests_to(COMPLETIONS)]
    assert bodies[0]["stream"] is True and "stream" not in bodies[1]
    assert streamed.text == whole.text == " in the fridge" and streamed.finish_reason == "stop"
    assert streamed.tokens == whole.tokens and len(streamed.tokens) == 2
    assert (streamed.prompt_tokens, streamed.completion_tokens) == (whole.prompt_tokens, whole.completion_tokens) == (40, 2)


def test_each_prompt_of_a_streamed_list_has_its_own_answer_and_usage():
    answers = [TOKENS, TOKENS[:1], TOKENS[1:]]
    with FakeOpenAIServer() as server:
        server.set_default(COMPLETIONS, ScriptedReply(body=batch_completion_body(answers, prompt_tokens=30)))
        provider = LocalProvider(base_url=server.base_url, model_name="m")
        responses = provider.complete_batch([request(i) for i in range(3)], 10.0)
    assert [r.text for r in responses] == [" in the fridge", " in", " the fridge"]
    assert [len(r.tokens) for r in responses] == [2, 1, 1]
    assert all(r.prompt_tokens == 30 for r in responses)


def test_the_chunks_of_two_prompts_interleaved_are_put_back_per_prompt():
    body = batch_completion_body([TOKENS, TOKENS], prompt_tokens=5)
    events = [json.loads(line[6:]) for line in as_event_stream(body).splitlines()
              if line.startswith("data: ") and line != "data: [DONE]"]
    first, second = [e for e in events if e and e["choices"][0]["index"] == 0], [e for e in events if e and e["choices"][0]["index"] == 1]
    mixed = [None, *[x for pair in zip(first, second) for x in pair]]
    answers = assemble(mixed)
    assert [a.choices[0].text for a in answers] == [" in the fridge", " in the fridge"]
    assert all(a.usage is not None and a.choices[0].finish_reason == "stop" for a in answers)


def test_a_stream_cut_at_its_deadline_is_a_timeout_and_closes_the_connection():
    """Headers and a first event at once, then nothing: the cut comes while the stream is read
    (past the SDK's own timeout mapping), and the connection is closed, which is what makes the
    server stop."""
    listener = socket.create_server(("127.0.0.1", 0))
    closed = threading.Event()

    def serve() -> None:
        connection, _ = listener.accept()
        with connection:
            connection.settimeout(60.0)
            received = b""
            while b"\r\n\r\n" not in received:
                received += connection.recv(65536)
            connection.sendall(b"HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: null\n\n")
            try:
                while connection.recv(65536):
                    pass
                closed.set()
            except ConnectionResetError:
                closed.set()

    threading.Thread(target=serve, daemon=True).start()
    # the provider the local one is (without its look at a silent /health, which this server lacks)
    provider = OpenAIProvider(base_url=f"http://127.0.0.1:{listener.getsockname()[1]}/v1", completion_model="m",
                              stream=True)
    try:
        with pytest.raises(ConnectionProviderError, match="timed out after 1 s"):
            provider.complete(request(), 1.0)
        assert closed.wait(30.0), "the client gave up but kept the connection open"
    finally:
        listener.close()
