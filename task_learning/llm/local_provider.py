"""The `local` provider: a language model on this machine, served by llama.cpp's `llama-server`.

`make_client("local")` starts a server with the installed model (`task-learning llm install`) on a
free loopback port at the first call (a run that makes none, like Trial #2, starts none), talks to
it through the OpenAI-compatible provider, and stops it when the client closes. Given a base URL (`--base-url`, `local.base_url`, $TASK_LEARNING_LOCAL_LLM_URL, or a
`LocalServer` someone else owns: experiments share one across their runs, the ROS graph has the
`llm_server` node), it uses that server and stops nothing.

Every prompt type goes to the completions API with the one model (the installed one is a base
model: no chat template to lean on, and goal retrieval needs logprobs anyway).

What a run meets when the server goes away is named as the LLM server: a call that cannot reach
it, or gets no answer by its deadline, is looked into. The process died: "the LLM server
(llama-server, pid N, URL) died: killed by SIGKILL (log: FILE)". It is alive but its /health stays
silent for `local.health_timeout_s`: it hangs. Nothing listens at an external URL: it is not
running. Each is a FatalProviderError: the client's breaker opens at once, the run ends (exit 2)
with that reason instead of retrying for minutes; what was confirmed before is in the knowledge
base, and running the command again (a fresh server) goes on from there. A call that timed out
while /health still answers is only slow: retried as usual.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Mapping, TypeVar

from task_learning.errors import TaskLearningError
from task_learning.llm.base import ConnectionProviderError, FatalProviderError, LLMRequest, LLMResponse
from task_learning.llm.constraints import ConstraintStyle
from task_learning.llm.local_server import LocalServer, probe_health, root_of
from task_learning.llm.openai_provider import OpenAIProvider
from task_learning.llm.settings import LocalSettings

ENV_LOCAL_URL = "TASK_LEARNING_LOCAL_LLM_URL"
_T = TypeVar("_T")


class LLMServerDown(FatalProviderError):
    """The local LLM server died, hangs, or is not running."""


class LocalProvider(OpenAIProvider):
    name = "local"

    def __init__(self, *, base_url: str, model_name: str, server: LocalServer | None = None,
                 owns_server: bool = False, health_timeout_s: float = 5.0, timeout_per_prompt_s: float = 0.0,
                 timeout_per_token_s: float = 0.0, **options: Any) -> None:
        super().__init__(base_url=with_api_path(base_url), completion_model=model_name, selection_model=model_name,
                         selection_api="completions", selection_prompt_types=(),
                         constraints=ConstraintStyle.LLAMA_CPP, stream=True, **options)
        self.server = server
        self.owns_server = owns_server
        self.health_timeout_s = float(health_timeout_s)
        self.timeout_per_prompt_s = float(timeout_per_prompt_s)
        self.timeout_per_token_s = float(timeout_per_token_s)
        self._start_lock = threading.Lock()
        self._start_error = ""

    def __repr__(self) -> str:
        return f"LocalProvider(base_url={self.base_url!r}, model={self.model!r}, server={self.server!r})"

    def complete(self, request: LLMRequest, timeout_s: float) -> LLMResponse:
        deadline = self.call_deadline(timeout_s, request.max_tokens)
        return self._diagnosed(lambda: super(LocalProvider, self).complete(request, deadline))

    def complete_batch(self, requests: list[LLMRequest], timeout_s: float) -> list[LLMResponse]:
        """A list's deadline grows with its length: the server decodes `-np` prompts at a time, so a
        list of 32 on two loaded cores needs several times a single prompt's (docs/llm.md: a list of
        32 exceeded a flat 120 s at load 8-9; measured per prompt, not guessed per list)."""
        deadline = self.list_deadline(self.call_deadline(timeout_s, max(r.max_tokens for r in requests)),
                                      len(requests))
        return self._diagnosed(lambda: super(LocalProvider, self).complete_batch(requests, deadline))

    def call_deadline(self, timeout_s: float, max_tokens: int) -> float:
        """A call may generate `max_tokens` tokens, and a base model often does (it does not stop
        where an answer ends): at 6 tokens/s on a loaded core, 900 tokens take 150 s, past a flat
        120 s, and a call cut at its deadline is sent again from the start (docs/llm.md)."""
        return timeout_s + self.timeout_per_token_s * max(0, int(max_tokens))

    def list_deadline(self, timeout_s: float, prompts: int) -> float:
        return timeout_s + self.timeout_per_prompt_s * max(0, prompts - 1)

    def _diagnosed(self, call: Callable[[], _T]) -> _T:
        self._ensure_started()
        try:
            return call()
        except ConnectionProviderError as exc:
            raise self.diagnose(str(exc)) from None

    def _ensure_started(self) -> None:
        """An owned server starts at the first call (a run that needs none, Trial #2, starts
        none); a server that cannot start fails this call and every later one with its reason."""
        if not self.owns_server or self.server is None:
            return
        with self._start_lock:
            if self._start_error:
                raise LLMServerDown(self._start_error)
            if self.server.process is not None:
                return
            try:
                self._connect(self.server.start())
            except TaskLearningError as exc:
                self._start_error = str(exc)
                raise LLMServerDown(self._start_error) from None

    def diagnose(self, failure: str) -> ConnectionProviderError | LLMServerDown:
        """What a call that could not reach the server (or timed out) means for the run."""
        server = self.server
        if server is not None:
            code = server.exit_code()
            if code is not None:
                from task_learning.lifecycle.child_process import describe_exit

                return LLMServerDown(f"{server.describe()} died: {describe_exit(code)} "
                                     f"(log: {server.log_path}); the call: {failure}")
        health = probe_health(root_of(self.base_url), self.health_timeout_s)
        where = server.describe() if server is not None else f"the LLM server at {self.base_url}"
        if health.state == "silent":
            return LLMServerDown(f"{where} hangs: /health silent for {self.health_timeout_s:g} s "
                                 f"(local.health_timeout_s); the call: {failure}")
        if health.state == "refused":
            return LLMServerDown(f"{where} refuses connections (not running?); the call: {failure}")
        if health.state == "loading":  # a restarted server still loading its model: try again
            return ConnectionProviderError(f"{where} is loading its model; the call: {failure}")
        return ConnectionProviderError(f"{where}: {failure} (its /health: {health.state})")

    def close(self) -> None:
        super().close()
        if self.owns_server and self.server is not None:
            self.server.stop()


def with_api_path(base_url: str) -> str:
    """llama-server prints its root URL (http://127.0.0.1:PORT); its OpenAI-compatible API is
    under /v1. A root URL given to `local` is that server's: /v1 is added (a root URL gets "has
    no choices" and retries)."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(base_url)
    if parts.scheme in ("http", "https") and parts.path.strip("/") == "":
        return urlunsplit((parts.scheme, parts.netloc, "/v1", "", ""))
    return base_url


def local_provider(settings: LocalSettings, env: Mapping[str, str], options: Mapping[str, Any]) -> LocalProvider:
    """The provider `make_client("local", ...)` uses. options: base_url (a running server),
    local_server (a running LocalServer owned by the caller), completion_model (a GGUF file to
    serve, or the model's name at a given URL), max_response_bytes."""
    shared: LocalServer | None = options.get("local_server")
    base_url = options.get("base_url") or env.get(ENV_LOCAL_URL) or settings.base_url
    model = str(options.get("completion_model") or "")
    common: dict[str, Any] = {"health_timeout_s": settings.health_timeout_s,
              "timeout_per_prompt_s": settings.timeout_per_prompt_s,
              "timeout_per_token_s": settings.timeout_per_token_s,
              "max_response_bytes": int(options.get("max_response_bytes") or 8_000_000),
              "default_timeout_s": settings.timeout_s}
    if shared is not None:
        return LocalProvider(base_url=shared.base_url, model_name=settings.model_name, server=shared, **common)
    if base_url:
        return LocalProvider(base_url=str(base_url), model_name=model or settings.model_name, **common)
    server = LocalServer(settings, model=model)  # the files are checked now, the server starts at the first call
    return LocalProvider(base_url="http://127.0.0.1:0/v1", model_name=settings.model_name, server=server,
                         owns_server=True, **common)


@contextmanager
def shared_server(spec: str | None, options: Mapping[str, Any], settings: LocalSettings | None = None
                  ) -> Iterator[dict[str, Any]]:
    """For commands that make many clients (experiments: one per run): with `--llm local` and no
    base URL, one server for all of them, stopped at the end; the options to pass to make_client.
    Any other spec: the options unchanged."""
    options = dict(options)
    if (spec or "").strip().lower() != "local" or options.get("base_url") or options.get("local_server"):
        yield options
        return
    import os

    if os.environ.get(ENV_LOCAL_URL):
        yield options
        return
    if settings is None:
        from task_learning.llm.settings import load_llm_settings

        settings = load_llm_settings(options.get("config")).local
    if settings.base_url:
        yield options
        return
    server = LocalServer(settings, model=str(options.pop("completion_model", "") or ""))
    server.start()
    try:
        yield {**options, "local_server": server}
    finally:
        server.stop()
