"""Identical requests in flight at the same time make one call: the first claims the key, the
others wait for its answer (which the cache then holds) and count as cache hits."""
from __future__ import annotations

import threading


class SingleFlight:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[str, threading.Event] = {}

    def claim(self, key: str) -> threading.Event | None:
        """None: the caller now makes the call for `key` (and must `release` it); otherwise the
        event another caller's answer sets."""
        with self._lock:
            waiting = self._pending.get(key)
            if waiting is None:
                self._pending[key] = threading.Event()
            return waiting

    def try_claim(self, key: str) -> bool:
        """Claim `key` unless a call for it is already in flight; never waits."""
        return self.claim(key) is None

    def release(self, key: str) -> None:
        """The call for `key` is answered: its waiters go on."""
        with self._lock:
            self._pending.pop(key).set()
