"""`--decoding grounded` where the endpoint cannot constrain (OpenAI's completions API,
config/llm.yaml `openai.constraints: none`): the bootstrapped productions and LLM-State say so in
one line on stderr and decode freely, sending no grammar; never silently. A scripted server
stands in for the endpoint (fast)."""
from __future__ import annotations

from typing import Any

import pytest

from task_learning.apps.cli import main
from task_learning.testing.fake_server import (
    CHAT,
    COMPLETIONS,
    FakeOpenAIServer,
    ScriptedReply,
    chat_body,
    completion_body,
)


def _reply(text: str) -> ScriptedReply:
    return ScriptedReply(body=lambda body: completion_body([(text, -0.1, {})], model=body.get("model", "m"),
                                                           with_logprobs=False))


def _one_notice(capsys: Any) -> None:
    err = [line for line in capsys.readouterr().err.splitlines() if "cannot constrain decoding" in line]
    assert len(err) == 1 and "falls back to free decoding" in err[0]


@pytest.mark.parametrize("argv", [
    ["bootstrap", "--families", "explore", "--max-instances", "1", "--answers", "bounded"],
    ["llm-state", "--scene", "map1", "--task", "open_fridge", "--method", "no_states", "--cap", "1",
     "--answers", "bounded"],
])
def test_an_endpoint_without_constraints_gets_one_line_and_no_grammar(argv, tmp_path, capsys):
    if argv[0] == "bootstrap":
        argv = argv + ["--db", str(tmp_path / "kb.sqlite")]
    with FakeOpenAIServer() as server:
        server.set_default(COMPLETIONS, _reply(" special action: 'done'"))
        server.set_default(CHAT, ScriptedReply(body=chat_body("special action: 'done'")))
        main(argv + ["--llm", "openai", "--base-url", server.base_url, "--decoding", "grounded", "--json"])
        sent = server.requests_to(COMPLETIONS) + server.requests_to(CHAT)
        assert sent and all("grammar" not in r.body for r in sent)
    _one_notice(capsys)
