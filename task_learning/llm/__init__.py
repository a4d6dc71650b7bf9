"""One LLM interface for the whole project: providers (openai, local, replay, and the offline stand-in
by registry) behind `LLMClient`.

- base.py: LLMRequest / LLMResponse / TokenLogprob, the LLMProvider protocol, provider errors.
- client.py: LLMClient (accounting of calls and round trips, cache, retries, timeouts, scope cap,
  token budget, recording, list-prompt batches via complete_many; never raises for provider
  failures) and make_client("offline" | "openai" | "local" |
  "replay:FILE" | "record:FILE", **options).
- layers/: what the client is composed of (endpoint, usage counter, admission, circuit breaker,
  retrier, single flight, provider calls, batcher), one concern each.
- settings.py: config/llm.yaml (typed models on the shared loader, task_learning.inputs.schema).
  openai_provider.py: any OpenAI-compatible endpoint.
- replay.py: cassettes (CassetteRecorder, ReplayProvider, cassette_entry, match_entry,
  write_cassette). cache.py: ResponseCache. latency.py: FixedLatencyProvider (benches).
  prefix_cache.py: the share of prompt text a server's prefix cache could serve (benches).
- local_install.py: `task-learning llm install` (the model and llama-server, cached per machine);
  local_server.py: llama-server as a child process; local_provider.py: the `local` provider
  (make_client("local")): the openai provider on a server it starts, or on a given one.
- registry.py: providers that live outside llm/ by module path (the offline stand-in,
  task_learning/offline_model/).

Nothing here is imported eagerly: importing `task_learning.llm` does not load `openai`.
"""
from task_learning import lazy_exports

_EXPORTS = {
    "ANSWER_PROTOCOLS": "task_learning.llm.answer_bounds",
    "AnswerBound": "task_learning.llm.answer_bounds",
    "bound_for": "task_learning.llm.answer_bounds",
    "resolve": "task_learning.llm.answer_bounds",
    "LLMRequest": "task_learning.llm.base",
    "LLMResponse": "task_learning.llm.base",
    "NEXT_TURN": "task_learning.llm.base",
    "ProviderError": "task_learning.llm.base",
    "TokenLogprob": "task_learning.llm.base",
    "flatten_conversation": "task_learning.llm.base",
    "ResponseCache": "task_learning.llm.cache",
    "LLMClient": "task_learning.llm.client",
    "make_client": "task_learning.llm.client",
    "FixedLatencyProvider": "task_learning.llm.latency",
    "MODEL_BYTES": "task_learning.llm.local_install",
    "SDIST_VERSION": "task_learning.llm.local_install",
    "cache_root": "task_learning.llm.local_install",
    "install": "task_learning.llm.local_install",
    "local_paths": "task_learning.llm.local_install",
    "server_key": "task_learning.llm.local_install",
    "shared_server": "task_learning.llm.local_provider",
    "HOST": "task_learning.llm.local_server",
    "LocalServer": "task_learning.llm.local_server",
    "LocalServerError": "task_learning.llm.local_server",
    "free_port": "task_learning.llm.local_server",
    "OpenAIProvider": "task_learning.llm.openai_provider",
    "PrefixCacheMeter": "task_learning.llm.prefix_cache",
    "cassette_entry": "task_learning.llm.replay",
    "match_entry": "task_learning.llm.replay",
    "write_cassette": "task_learning.llm.replay",
    "describe_routes": "task_learning.llm.routing",
    "routes": "task_learning.llm.routing",
    "load_llm_settings": "task_learning.llm.settings",
    "SharedAnswers": "task_learning.llm.shared_answers",
    "SharingProvider": "task_learning.llm.shared_answers",
    "TOKENIZER": "task_learning.llm.tokens",
    "count_chat_tokens": "task_learning.llm.tokens",
    "count_tokens": "task_learning.llm.tokens",
    "split_tokens": "task_learning.llm.tokens",
    "copy_usage": "task_learning.llm.usage",
    "usage_diff": "task_learning.llm.usage",
}

__all__, __getattr__ = lazy_exports(__name__, _EXPORTS)
