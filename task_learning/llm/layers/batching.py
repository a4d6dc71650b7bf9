"""Independent requests (one search-tree level, of one object or of many) in as few round trips
as the provider allows.

Requests are grouped by batch signature (the provider's `batch_key`, else base.batch_signature),
in order of first appearance, and cut into chunks of at most `max_batch_size` prompts; the chunks
go out concurrently. A provider that cannot answer lists, or refused one for good, gets the
requests one by one, concurrently (bounded by the retrier's slots).
"""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Hashable, TypeVar

from task_learning.llm.base import LLMRequest, LLMResponse
from task_learning.llm.layers.calls import ProviderCalls

A = TypeVar("A")
B = TypeVar("B")
Chunk = tuple[list[int], list[LLMRequest]]  # indices into the caller's list, and their requests


class WorkerPools:
    """Thread pools by name, made on first use. Chunks and single calls have pools of their own:
    a chunk falling back to single calls waits on the other pool, never on its own (no deadlock
    when every worker is busy)."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._lock = threading.Lock()
        self._pools: dict[str, ThreadPoolExecutor] = {}

    def map(self, fn: Callable[[A], B], items: list[A], pool: str) -> list[B]:
        """fn over items, concurrently when there is more than one; results in item order."""
        if len(items) <= 1:
            return [fn(item) for item in items]
        with self._lock:
            if pool not in self._pools:
                self._pools[pool] = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix=f"llm-{pool}")
            executor = self._pools[pool]
        return list(executor.map(fn, items))

    def close(self) -> None:
        with self._lock:
            pools = list(self._pools.values())
        for executor in pools:
            executor.shutdown(wait=True)


class Batcher:
    def __init__(self, calls: ProviderCalls, max_batch_size: int, pools: WorkerPools) -> None:
        if max_batch_size < 0:
            raise ValueError(f"max_batch_size must be >= 0, got {max_batch_size}")
        self.calls = calls
        self.max_batch_size = int(max_batch_size) or 1  # prompts per round trip (1: no lists)
        self.pools = pools

    def send(self, items: list[tuple[int, LLMRequest]]) -> list[tuple[list[int], list[LLMResponse]]]:
        """Every (index, request) answered: (indices, their responses) per chunk."""
        chunks = self.chunks(items)
        sent = self.pools.map(self._send_chunk, [requests for _, requests in chunks], pool="chunks")
        return [(indices, responses) for (indices, _), responses in zip(chunks, sent)]

    def chunks(self, items: list[tuple[int, LLMRequest]]) -> list[Chunk]:
        """Group by batch signature (first appearance order), then cut into max_batch_size."""
        groups: dict[Hashable, list[tuple[int, LLMRequest]]] = {}
        for n, (i, request) in enumerate(items):
            signature = self.calls.endpoint.batch_key(request)
            groups.setdefault(("single", n) if signature is None else signature, []).append((i, request))
        size = self.max_batch_size
        chunks = []
        for members in groups.values():
            for start in range(0, len(members), size):
                part = members[start:start + size]
                chunks.append(([i for i, _ in part], [r for _, r in part]))
        return chunks

    def _send_chunk(self, chunk: list[LLMRequest]) -> list[LLMResponse]:
        """One round trip for a chunk, or one per request when lists are not possible."""
        if len(chunk) == 1 or not self.calls.endpoint.answers_lists or self.calls.batches_refused:
            return self.pools.map(self.calls.call, chunk, pool="calls")
        responses = self.calls.call_list(chunk)
        if responses is None:  # refused: remembered, and this chunk goes out one by one
            return self.pools.map(self.calls.call, chunk, pool="calls")
        return responses
