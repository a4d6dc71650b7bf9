"""Cassettes: record real model calls to JSONL and replay them deterministically.

A cassette is a JSONL file, one entry per line, of two kinds:

* exact entries `{"key", "request", "response", "provider", "model"}`, written by
  `CassetteRecorder` (via `LLMClient(recorder=...)`) or by `cassette_entry(request, response)`.
  `key` is `cassette_key(request)`: the request's cache key with no provider or model in it, so a
  run recorded against one endpoint replays whatever model served it. A request matches when
  everything it sends (type, prompt or messages, sampling parameters, stop, context) is equal.
* match entries `{"match": {...}, "response"}`, written by `match_entry(...)`, for cassettes built
  by hand from published figures where the exact prompt text is not the point. `match` may hold
  `prompt_type`, `prompt` (equal), `prompt_suffix` (the prompt ends with it) and `context` (each
  listed key equal to the request's context value, e.g. {"object": "mug", "prefix": " the goal"}).

Lookup: the exact key first; otherwise the match entry with the most conditions that all hold,
the earliest in the file on a tie. Several exact entries for one key (a cassette appended to by
two runs) resolve to the first successful one. A recorded failure replays as a ProviderError; a
request found nowhere raises a ProviderError naming its type, object and prefix.
"""
from __future__ import annotations

import json
import logging
import threading
from pathlib import Path
from typing import Any, Iterable, Mapping, Protocol

from task_learning.errors import ConfigError
from task_learning.inputs.files import LineAppender, read_input_bytes, write_text_atomic
from task_learning.llm.base import LLMRequest, LLMResponse, ProviderError
from task_learning.llm.codec import copy_response, jsonable, request_to_dict, response_from_dict, response_to_dict

log = logging.getLogger(__name__)

CASSETTE_PROVIDER = "cassette"


def cassette_key(request: LLMRequest) -> str:
    """The key a cassette files a request under (independent of provider and model)."""
    return request.cache_key(CASSETTE_PROVIDER, "")


def cassette_entry(request: LLMRequest, response: LLMResponse, *, provider: str = "", model: str = "") -> dict[str, Any]:
    """An exact entry: replays `response` for a request equal to `request`."""
    return {
        "key": cassette_key(request),
        "request": request_to_dict(request),
        "response": response_to_dict(response),
        "provider": provider,
        "model": model,
    }


def match_entry(
    response: LLMResponse,
    *,
    prompt_type: str | None = None,
    prompt: str | None = None,
    prompt_suffix: str | None = None,
    context: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A loose entry: replays `response` for any request meeting every given condition."""
    match: dict[str, Any] = {}
    if prompt_type is not None:
        match["prompt_type"] = prompt_type
    if prompt is not None:
        match["prompt"] = prompt
    if prompt_suffix is not None:
        match["prompt_suffix"] = prompt_suffix
    if context:
        match["context"] = jsonable(dict(context))
    if not match:
        raise ValueError("match_entry needs at least one condition")
    return {"match": match, "response": response_to_dict(response)}


def write_cassette(path: str | Path, entries: Iterable[Mapping[str, Any]]) -> Path:
    """Write entries (from `cassette_entry`/`match_entry`) as a new cassette file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, "".join(json.dumps(entry, ensure_ascii=False) + "\n" for entry in entries))
    return path


class CallRecorder(Protocol):
    """What `LLMClient(recorder=...)` records every answered call with: a cassette file
    (`CassetteRecorder`) or an episode (task_learning.episode.observe.LLMCallPublisher)."""

    def record(self, request: LLMRequest, response: LLMResponse, *, provider: str = "", model: str = "") -> None: ...

    def close(self) -> None: ...


class CassetteRecorder:
    """Appends every real call (request and final response) to a cassette; thread-safe.

    Appending (not truncating) keeps earlier recordings: a replay uses the first successful entry
    per request, so a rerun that records again does no harm. A line that cannot be written (a
    full disk) is cut back off and raises OutputError naming the file: the run stops rather
    than go on with calls its cassette does not hold.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._file = LineAppender(self.path, create_folder=False)
        # Opened now: /dev/full, a directory, a missing or read-only folder are refused before
        # the first call is paid for (a run that could not record went on, 15 errors, exit 0).
        self._file.open()
        self.recorded = 0

    def __repr__(self) -> str:
        return f"CassetteRecorder(path={str(self.path)!r}, recorded={self.recorded})"

    def record(self, request: LLMRequest, response: LLMResponse, *, provider: str = "", model: str = "") -> None:
        line = json.dumps(cassette_entry(request, response, provider=provider, model=model), ensure_ascii=False)
        with self._lock:
            self._file.append(line)
            self.recorded += 1

    def close(self) -> None:
        with self._lock:
            self._file.close()


class ReplayProvider:
    """Serves responses from a cassette; never talks to a model. Deterministic and thread-safe."""

    name = "replay"

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._exact: dict[str, LLMResponse] = {}
        self._loose: list[tuple[dict[str, Any], LLMResponse]] = []
        models: set[str] = set()
        self._load(models)
        self.model = models.pop() if len(models) == 1 else ""
        self._lock = threading.Lock()
        self.served = 0

    def __repr__(self) -> str:
        return f"ReplayProvider(path={str(self.path)!r}, exact={len(self._exact)}, match={len(self._loose)})"

    def __len__(self) -> int:
        return len(self._exact) + len(self._loose)

    def complete(self, request: LLMRequest, timeout_s: float) -> LLMResponse:
        found = self.lookup(request)
        if found is None:
            ctx = request.context or {}
            raise ProviderError(
                f"replay {self.path.name}: no recorded response for a {request.prompt_type!r} request"
                f" (object={ctx.get('object', '')!r}, prefix={ctx.get('prefix', '')!r})"
            )
        if not found.ok:
            raise ProviderError(f"replay {self.path.name}: recorded failure: {found.error}")
        with self._lock:
            self.served += 1
        return copy_response(found, cached=False)

    def complete_batch(self, requests: list[LLMRequest], timeout_s: float) -> list[LLMResponse]:
        """A recorded batch replays prompt by prompt (cassettes hold one entry per prompt, however
        the prompts travelled), so a cassette recorded with lists replays without them and back."""
        return [self.complete(request, timeout_s) for request in requests]

    def lookup(self, request: LLMRequest) -> LLMResponse | None:
        exact = self._exact.get(cassette_key(request))
        if exact is not None:
            return exact
        best: tuple[int, LLMResponse] | None = None
        for match, response in self._loose:
            weight = _match_weight(match, request)
            if weight and (best is None or weight > best[0]):
                best = (weight, response)
        return best[1] if best else None

    def _load(self, models: set[str]) -> None:
        try:
            lines = read_input_bytes(self.path).decode("utf-8").splitlines()
        except ConfigError as exc:
            raise ConfigError(self.path, None, "cannot read cassette: " + exc.message.removeprefix("cannot read: ")) \
                from None
        except UnicodeDecodeError as exc:
            raise ConfigError(self.path, None, f"not UTF-8 text (invalid byte at offset {exc.start})") from None
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            where = f"line {number}"
            try:
                entry = json.loads(line)
            except ValueError as exc:
                raise ConfigError(self.path, where, f"not JSON: {exc}") from None
            if not isinstance(entry, dict) or "response" not in entry or not ("key" in entry or "match" in entry):
                raise ConfigError(self.path, where, "expected an object with 'response' and 'key' or 'match'")
            try:
                response = response_from_dict(entry["response"])
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                raise ConfigError(self.path, f"{where}.response", f"malformed response: {exc!r}") from None
            if "key" in entry:
                key = str(entry["key"])
                previous = self._exact.get(key)
                if previous is None or (not previous.ok and response.ok):
                    self._exact[key] = response
                if entry.get("model"):
                    models.add(str(entry["model"]))
            else:
                match = entry["match"]
                if not isinstance(match, dict) or not match or set(match) - {"prompt_type", "prompt", "prompt_suffix", "context"}:
                    raise ConfigError(self.path, f"{where}.match", "expected conditions among prompt_type, prompt, prompt_suffix, context")
                if "context" in match and not isinstance(match["context"], dict):
                    raise ConfigError(self.path, f"{where}.match.context", "expected a mapping")
                self._loose.append((match, response))
        log.debug("cassette %s: %d exact, %d match entries", self.path, len(self._exact), len(self._loose))


def _match_weight(match: Mapping[str, Any], request: LLMRequest) -> int:
    """Number of conditions met, or 0 if any fails."""
    weight = 0
    if "prompt_type" in match:
        if match["prompt_type"] != request.prompt_type:
            return 0
        weight += 1
    if "prompt" in match:
        if match["prompt"] != request.prompt:
            return 0
        weight += 1
    if "prompt_suffix" in match:
        if not request.prompt.endswith(str(match["prompt_suffix"])):
            return 0
        weight += 1
    context = jsonable(dict(request.context or {}))
    for key, value in (match.get("context") or {}).items():
        if key not in context or context[key] != value:
            return 0
        weight += 1
    return weight
