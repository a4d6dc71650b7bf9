"""Response cache: a rerun of the same requests costs no model call.

In memory, optionally persisted to a JSONL file (one `{"key", "response"}` per line, appended as
responses arrive, so a crashed run keeps what it paid for). Only successful responses are stored:
a failure must be retried next time, not replayed forever. A damaged line in the file is skipped
with a warning; the cache is an optimisation, never a reason to stop.
"""
from __future__ import annotations

import json
import logging
import threading
from pathlib import Path

from task_learning.errors import ConfigError
from task_learning.inputs.files import LineAppender, OutputError, read_input_bytes
from task_learning.llm.base import LLMResponse
from task_learning.llm.codec import copy_response, response_from_dict, response_to_dict

log = logging.getLogger(__name__)


class ResponseCache:
    """Thread-safe map from `LLMRequest.cache_key(...)` to a response."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self._entries: dict[str, LLMResponse] = {}
        self._lock = threading.Lock()
        self._file = LineAppender(self.path) if self.path is not None else None
        if self.path is not None:
            self._load(self.path)

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def __repr__(self) -> str:
        return f"ResponseCache(path={str(self.path) if self.path else None!r}, entries={len(self)})"

    def get(self, key: str) -> LLMResponse | None:
        """A copy marked `cached=True`, or None."""
        with self._lock:
            found = self._entries.get(key)
        return copy_response(found, cached=True) if found is not None else None

    def put(self, key: str, response: LLMResponse) -> None:
        if not response.ok:
            return
        stored = copy_response(response, cached=False)
        with self._lock:
            if key in self._entries:
                return
            self._entries[key] = stored
            if self._file is not None:
                try:  # a failed line is cut back off: the file never ends in half a line
                    self._file.append(json.dumps({"key": key, "response": response_to_dict(stored)}))
                except OutputError as exc:
                    log.warning("%s (the cache continues in memory)", exc)
                    self._file.close()
                    self._file = None

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()

    def _load(self, path: Path) -> None:
        if not path.exists():
            return
        try:
            lines = read_input_bytes(path).decode("utf-8", errors="replace").splitlines()
        except ConfigError as exc:
            log.warning("cannot read LLM cache: %s (starting empty)", exc)
            return
        skipped = 0
        for line in lines:
            if not line.strip():
                continue
            try:
                item = json.loads(line)
                response = response_from_dict(item["response"])
                key = str(item["key"])
            except (ValueError, KeyError, TypeError):
                skipped += 1
                continue
            if response.ok:
                self._entries.setdefault(key, response)
        if skipped:
            log.warning("LLM cache %s: skipped %d damaged line(s)", path, skipped)
        log.debug("LLM cache %s: %d response(s) loaded", path, len(self._entries))
