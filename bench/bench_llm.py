"""Bench of the LLM layer (prints figures; not a test).

1. Overhead of LLMClient + OpenAIProvider + the real `openai` client against a loopback
   OpenAI-compatible server (per call, sequential).
2. Sequential versus concurrent requests with a fixed provider latency (what a Search Tree level
   gains by going out concurrently), and the peak calls in flight.
3. A rerun with the cache: calls made.

Run: .venv/bin/python bench/bench_llm.py [--latency 0.2] [--requests 16] [--workers 8]
"""
from __future__ import annotations

import argparse
import math
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

from task_learning.llm.base import LLMRequest, LLMResponse, TokenLogprob
from task_learning.llm.cache import ResponseCache
from task_learning.llm.client import LLMClient
from task_learning.llm.latency import FixedLatencyProvider
from task_learning.llm.openai_provider import OpenAIProvider
from task_learning.testing.fake_server import COMPLETIONS, FakeOpenAIServer, ScriptedReply, completion_body


class Constant:
    """A provider answering instantly (the latency comes from FixedLatencyProvider)."""

    name = "constant"
    model = "constant"

    def complete(self, request: LLMRequest, timeout_s: float) -> LLMResponse:
        return LLMResponse(text=" x", tokens=[TokenLogprob(" x", -0.1)], prompt_tokens=100, completion_tokens=1)


def request(i: int) -> LLMRequest:
    return LLMRequest(prompt_type="recurse", prompt=f"prompt {i}", logprobs=5, context={"prefix": f" p{i}"}, scope="Mug|1")


def bench_loopback(calls: int) -> None:
    tokens = [(f" t{i}", math.log(0.9), {f" t{i}": math.log(0.9), " alt": math.log(0.08)}) for i in range(12)]
    with FakeOpenAIServer() as server:
        server.set_default(COMPLETIONS, ScriptedReply(body=completion_body(tokens)))
        provider = OpenAIProvider(base_url=server.base_url, api_key="bench", completion_model="fake")
        client = LLMClient(provider, timeout_s=5)
        client.complete(request(-1))  # warm up
        times = []
        for i in range(calls):
            started = time.perf_counter()
            assert client.complete(request(i)).ok
            times.append(time.perf_counter() - started)
    print(f"loopback openai client: {calls} calls, median {statistics.median(times) * 1000:.2f} ms/call, "
          f"max {max(times) * 1000:.2f} ms (12 tokens x 2 alternatives each)")


def bench_concurrency(latency: float, n: int, workers: int) -> None:
    figures = {}
    for label, pool_size in (("sequential", 1), ("concurrent", workers)):
        provider = FixedLatencyProvider(Constant(), latency)
        client = LLMClient(provider, cache=ResponseCache())
        started = time.perf_counter()
        with ThreadPoolExecutor(pool_size) as pool:
            results = list(pool.map(client.complete, [request(i) for i in range(n)]))
        elapsed = time.perf_counter() - started
        assert all(r.ok for r in results)
        figures[label] = elapsed
        print(f"{label:>10}: {n} requests at {latency * 1000:.0f} ms: {elapsed:.3f} s, calls {client.usage.calls}, "
              f"peak in flight {provider.max_in_flight}")
        started = time.perf_counter()
        with ThreadPoolExecutor(pool_size) as pool:
            list(pool.map(client.complete, [request(i) for i in range(n)]))
        print(f"{'':>10}  rerun with cache: {time.perf_counter() - started:.4f} s, "
              f"calls {provider.calls - n} new, cache hits {client.usage.cache_hits}")
    print(f"speed-up concurrent/sequential: {figures['sequential'] / figures['concurrent']:.1f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--requests", type=int, default=16)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--loopback-calls", type=int, default=100)
    args = parser.parse_args()
    bench_loopback(args.loopback_calls)
    bench_concurrency(args.latency, args.requests, args.workers)


if __name__ == "__main__":
    main()
