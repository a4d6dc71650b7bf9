"""The layers `LLMClient` (llm/client.py) is composed of, each one concern and its own lock:

- endpoint.py: `Endpoint`, the provider seen through typed capabilities (name, model, redaction,
  list prompts), so no layer asks a provider for an attribute it may not have.
- usage_counter.py: `UsageCounter`, calls, round trips, tokens, cache hits, failures, retries
  and refusals, for the run and per scope (object).
- admission.py: `Admission`, the request cap per scope and the token budget per run.
- breaker.py: `CircuitBreaker`, a dead or refusing endpoint ends the run in seconds.
- retry.py: `Retrier`, one round trip retried with backoff on transient failures, through the
  concurrency slots, fed to the breaker.
- single_flight.py: `SingleFlight`, identical requests in flight together make one call.
- calls.py: `ProviderCalls`, a counted round trip for one request or one list of prompts.
- batching.py: `Batcher`, independent requests grouped into list-prompt round trips.

The response cache (llm/cache.py) and the recorder (llm/replay.py's CallRecorder) are layers too;
they were already classes of their own.
"""
