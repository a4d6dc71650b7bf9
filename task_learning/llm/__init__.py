"""One LLM interface for the whole project: providers (openai, replay, offline) behind `LLMClient`.

- base.py: LLMRequest / LLMResponse / TokenLogprob, the LLMProvider protocol, provider errors.
- client.py: LLMClient (accounting of calls and round trips, cache, retries, timeouts, scope cap,
  token budget, recording, list-prompt batches via complete_many; never raises for provider
  failures) and make_client("offline" | "openai" | "local" |
  "replay:FILE" | "record:FILE", **options).
- layers/: what the client is composed of (endpoint, usage counter, admission, circuit breaker,
  retrier, single flight, provider calls, batcher), one concern each.
- settings.py: config/llm.yaml (typed models on the shared loader, task_learning.schema).
  openai_provider.py: any OpenAI-compatible endpoint.
- replay.py: cassettes (CassetteRecorder, ReplayProvider, cassette_entry, match_entry,
  write_cassette). cache.py: ResponseCache. latency.py: FixedLatencyProvider (benches).
  prefix_cache.py: the share of prompt text a server's prefix cache could serve (benches).
- local_install.py: `task-learning llm install` (the model and llama-server, cached per machine);
  local_server.py: llama-server as a child process; local_provider.py: the `local` provider
  (make_client("local")): the openai provider on a server it starts, or on a given one.
- fake_server.py: a scripted OpenAI-compatible server on loopback (tests, demos).
- offline/: the deterministic offline stand-in (not a language model; separate owner).

Nothing here is imported eagerly: importing `task_learning.llm` does not load `openai`.
"""
