"""Who may answer the robot's questions, and who may ask them: the oversight node's identities.

Pure Python (no ROS): the oversight node, the `task-learning operator` clients and the web panel
all use this module.

Operators (the people who say yes): each paired operator holds a *token*; the knowledge base holds
only its verifier, sha256 of the token's secret, never the token. A token is made in one of two
ways, both needing the robot's knowledge base:
- locally, by whoever can open that file (`task-learning operator --pair`, or `task-learning
  operator` pairing itself on first use): the token goes into a token file only its user can read;
- from a one-time pairing code (`OperatorRegistry.create_pairing_code`, shown on the robot's
  terminal) redeemed once, before it expires, within a rate limit on attempts (`redeem`). The web
  panel redeems a code over HTTPS and keeps the token as a bearer credential (`verify_token`).
Over ROS the token never travels: every answer carries an HMAC, keyed with the verifier, of the
question id, the answer, the description, the operator and the answering client (`sign`); the
oversight node recomputes it from the knowledge base. An eavesdropper on the DDS domain sees
signatures, which fit only the answer they were made for, to a question that is then closed.

Askers (the stack's nodes that put questions: planner, goal elicitation, anticipation) share one
*stack key*, a random file readable only by its owner (`StackKey.load_or_create`, by default under
ROS_HOME). Their Confirm requests, the oversight node's replies and the planner's confirmation
checks are signed with it, with a fresh nonce and time that the receiver checks once
(`NonceGuard`), so a question from anyone else is refused and a recorded request cannot be
replayed.

What this does not protect against (docs/oversight-security.md): anyone who can read the
knowledge base file or the stack key file (they are inside the robot's trust boundary: they could
write goals straight into the knowledge base); the content of questions and answers, which crosses
the DDS domain in clear; a flood that delays (never forges) answers. SROS2 replaces it when the
middleware has security plugins.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Protocol

from task_learning.errors import TaskLearningError

TOKEN_PREFIX = "tlop1"
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$")
CODE_TTL_S = 600.0
CODE_ID = re.compile(r"^[0-9A-F]{4}$")  # create_pairing_code: 2 random bytes, hex
CODE_SECRET = re.compile(r"^[0-9A-F]{16}$")  # 8 random bytes, hex
SIGNATURE_CHARS = 64  # hex sha256
NONCE_WINDOW_S = 300.0  # how far a signed request's time may be from ours (clock skew, queueing)


class PairingError(TaskLearningError):
    """A pairing, a token or a key that cannot be used; the message says why in one line."""


class PairingRateLimited(PairingError):
    """Too many pairing attempts (per client or in all): try again later."""


def check_name(name: str) -> str:
    """An operator or asker name: letters, digits, '_', '.', '-', at most 40 characters."""
    if not isinstance(name, str) or not NAME.match(name):
        raise PairingError(f"operator name {name!r}: use 1-40 letters, digits, '_', '.' or '-', "
                           f"starting with a letter or digit")
    return name


def verifier_of(secret: str) -> str:
    """What the knowledge base keeps of a secret: its sha256, hex. Secrets are 256 random bits,
    so a fast hash is enough (nothing to brute-force)."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def sign(key: bytes, *fields: Any) -> str:
    """HMAC-SHA256 over the fields (JSON, so no two field lists sign alike), hex."""
    payload = json.dumps([str(f) for f in fields], ensure_ascii=False, separators=(",", ":"))
    return hmac.new(key, payload.encode("utf-8"), hashlib.sha256).hexdigest()


def signature_ok(key: bytes | None, signature: str, *fields: Any) -> bool:
    """Constant-time check of `sign(key, *fields)`; False without a key or a well-formed signature."""
    if key is None or not isinstance(signature, str) or len(signature) != SIGNATURE_CHARS:
        return False
    return hmac.compare_digest(sign(key, *fields), signature)


def answer_fields(request_id: str, answer: str, description: str, operator: str,
                  client: str) -> tuple[str, ...]:
    """What an operator signs when answering (the oversight node checks the same)."""
    return ("answer-v1", request_id, answer, description, operator, client)


@dataclass(frozen=True)
class OperatorCredentials:
    """An operator's side of a pairing: the name and the key that signs answers."""

    name: str
    key: bytes

    @classmethod
    def from_token(cls, token: str) -> "OperatorCredentials":
        """From `tlop1:<name>:<secret>` (what pairing returns and a token file holds)."""
        parts = token.strip().split(":")
        if len(parts) != 3 or parts[0] != TOKEN_PREFIX or not parts[2]:
            raise PairingError("not an operator token (expected tlop1:<name>:<secret>)")
        name = check_name(parts[1])
        return cls(name, bytes.fromhex(verifier_of(parts[2])))

    def sign_answer(self, request_id: str, answer: str, description: str, client: str) -> str:
        return sign(self.key, *answer_fields(request_id, answer, description, self.name, client))


def make_token(name: str) -> tuple[str, str]:
    """A new token for `name` and the verifier the knowledge base keeps of it."""
    secret = secrets.token_urlsafe(32)
    return f"{TOKEN_PREFIX}:{check_name(name)}:{secret}", verifier_of(secret)


def write_private(path: Path, text: str) -> None:
    """Write `text` to `path` readable by its owner only (0600), atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def read_private(path: Path, what: str) -> str:
    """A secret file's text; refused when others may read it (a leaked secret is no secret)."""
    try:
        mode = path.stat().st_mode
        text = path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise PairingError(f"{path}: cannot read the {what} ({exc.strerror or exc})") from None
    if mode & 0o077:
        raise PairingError(f"{path}: the {what} is readable by others (mode {mode & 0o777:o}); "
                           f"chmod 600 it, or pair again")
    return text


def default_secrets_dir() -> Path:
    """Where the stack key and the operators' token files live: $ROS_HOME/task_learning (ROS's own
    per-user folder, ~/.ros by default)."""
    home = os.environ.get("ROS_HOME") or str(Path.home() / ".ros")
    return Path(home) / "task_learning"


def default_token_file(name: str) -> Path:
    return default_secrets_dir() / f"operator-{check_name(name)}.token"


def load_token_file(path: Path) -> OperatorCredentials:
    return OperatorCredentials.from_token(read_private(path, "operator token"))


# --- askers: the stack key -----------------------------------------------------------------------

class StackKey:
    """The key the stack's own nodes sign questions, replies and checks with."""

    def __init__(self, key: bytes, path: str = "") -> None:
        if len(key) < 32:
            raise PairingError(f"{path or 'stack key'}: too short ({len(key)} bytes, at least 32)")
        self.key = key
        self.path = path

    @classmethod
    def load_or_create(cls, path: str | Path | None = None) -> "StackKey":
        """Read the key file, creating it first when absent (the first node to start makes it;
        two at once cannot make two keys: the file is created with O_EXCL)."""
        file = Path(path) if path else default_secrets_dir() / "stack.key"
        if not file.exists():
            file.parent.mkdir(parents=True, exist_ok=True)
            try:
                fd = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                pass  # another node made it meanwhile: read theirs
            else:
                with os.fdopen(fd, "w", encoding="utf-8") as handle:
                    handle.write(secrets.token_hex(32) + "\n")
        text = read_private(file, "stack key")
        try:
            return cls(bytes.fromhex(text), str(file))
        except ValueError:
            raise PairingError(f"{file}: not a stack key (expected hex)") from None

    def sign(self, *fields: Any) -> str:
        return sign(self.key, *fields)

    def verify(self, signature: str, *fields: Any) -> bool:
        return signature_ok(self.key, signature, *fields)


def new_nonce() -> str:
    return secrets.token_hex(16)


class NonceGuard:
    """Accepts each (nonce, time) once, and only near our clock: a recorded signed request sent
    again is refused."""

    def __init__(self, window_s: float = NONCE_WINDOW_S, clock: Callable[[], float] = time.time) -> None:
        self.window_s = window_s
        self._clock = clock
        self._seen: dict[str, float] = {}
        self._lock = threading.Lock()

    def check(self, nonce: str, sent_at: float) -> str:
        """"" when fresh; else why not."""
        now = self._clock()
        if not nonce or len(nonce) > 64:
            return "no nonce"
        if not abs(now - sent_at) <= self.window_s:  # also NaN
            return f"sent at a time {now - sent_at:+.0f} s from ours (at most {self.window_s:g} s apart)"
        with self._lock:
            for old, at in list(self._seen.items()):
                if now - at > 2 * self.window_s:
                    del self._seen[old]
            if nonce in self._seen:
                return "replayed (this nonce was used before)"
            self._seen[nonce] = now
        return ""


# --- rate limits ---------------------------------------------------------------------------------

class RateLimiter:
    """At most `limit` events per `window_s` per key (sliding window)."""

    def __init__(self, limit: int, window_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = int(limit)
        self.window_s = float(window_s)
        self._clock = clock
        self._events: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def allow(self, key: str) -> float:
        """0 when the event may happen (and it is counted); else seconds until one may."""
        now = self._clock()
        with self._lock:
            events = self._events.setdefault(key, deque())
            while events and now - events[0] >= self.window_s:
                events.popleft()
            if len(events) >= self.limit:
                return max(0.001, self.window_s - (now - events[0]))
            events.append(now)
            if len(self._events) > 10000:  # forget idle keys rather than grow without bound
                for other in [k for k, v in self._events.items() if not v or now - v[-1] >= self.window_s]:
                    del self._events[other]
            return 0.0


# --- operators: the registry in the knowledge base -------------------------------------------------

class OperatorStore(Protocol):
    """What the registry needs of the knowledge base (task_learning.kb.store.KnowledgeBase)."""

    def save_operator(self, name: str, verifier: str, created_by: str) -> None: ...
    def operator_verifier(self, name: str) -> str | None: ...
    def operator_by_verifier(self, verifier: str) -> str | None: ...
    def revoke_operator(self, name: str) -> bool: ...
    def operator_records(self) -> list[dict[str, Any]]: ...
    def save_pairing_code(self, code_id: str, verifier: str, name: str, expires_at: float) -> None: ...
    def use_pairing_code(self, code_id: str, verifier: str, now: float) -> str | None: ...


class OperatorRegistry:
    """Paired operators, their verification, and pairing with rate limits on attempts."""

    def __init__(self, kb: OperatorStore, *, attempts_per_client: int = 5, attempts_total: int = 20,
                 window_s: float = 60.0, clock: Callable[[], float] = time.time) -> None:
        self.kb = kb
        self._clock = clock
        self._per_client = RateLimiter(attempts_per_client, window_s, clock)
        self._total = RateLimiter(attempts_total, window_s, clock)

    def pair_locally(self, name: str, created_by: str = "local") -> str:
        """A new token for `name` (replacing any earlier one), for a caller that can open the
        knowledge base itself. Returns the token: shown once, kept in a token file."""
        token, verifier = make_token(name)
        self.kb.save_operator(name, verifier, created_by)
        return token

    def create_pairing_code(self, name: str, ttl_s: float = CODE_TTL_S) -> str:
        """A one-time code for `name`, valid `ttl_s` seconds: `XXXX-<secret>`. Only its verifier is
        stored; redeeming it (once) gives the operator a token."""
        check_name(name)
        code_id = secrets.token_hex(2).upper()
        secret = secrets.token_hex(8).upper()
        self.kb.save_pairing_code(code_id, verifier_of(secret), name, self._clock() + ttl_s)
        return f"{code_id}-{secret}"

    def redeem(self, code: str, client: str = "") -> str:
        """Trade a pairing code for a token; PairingError when it is wrong, used, expired, or when
        attempts are over the rate limit.

        The limits count the attempts at one code id (the code's first part): per client and in
        all. Guessing a code's secret (64 bits) is thus held to `attempts_total` a window wherever
        the guesses come from, while a flood of wrong codes from another process on the same
        address (every local process is 127.0.0.1) does not lock the real operator out: the flood
        does not know the id of the code on the robot's terminal. A text that is no code at all is
        refused before it is counted (nothing is looked up for it)."""
        code_id, _, secret = code.strip().upper().partition("-")
        if not CODE_ID.match(code_id) or not CODE_SECRET.match(secret):
            raise PairingError("not a pairing code (expected XXXX-XXXXXXXXXXXXXXXX)")
        wait = self._per_client.allow(f"{client or '?'} {code_id}") or self._total.allow(code_id)
        if wait:
            raise PairingRateLimited(f"too many pairing attempts; try again in {wait:.0f} s")
        name = self.kb.use_pairing_code(code_id, verifier_of(secret), self._clock())
        if name is None:
            raise PairingError("pairing code unknown, already used or expired")
        return self.pair_locally(name, created_by=f"code {code_id}" + (f" from {client}" if client else ""))

    def verify_token(self, token: str) -> str | None:
        """The operator a bearer token belongs to (web panel), or None."""
        try:
            creds = OperatorCredentials.from_token(token)
        except (PairingError, ValueError):
            return None
        stored = self.kb.operator_verifier(creds.name)
        return creds.name if stored is not None and hmac.compare_digest(stored, creds.key.hex()) else None

    def key_of(self, name: str) -> bytes | None:
        if not isinstance(name, str) or not NAME.match(name):
            return None
        stored = self.kb.operator_verifier(name)
        return bytes.fromhex(stored) if stored else None

    def verify_answer(self, signature: str, request_id: str, answer: str, description: str,
                      operator: str, client: str) -> bool:
        """Was this answer signed by the paired operator it names?"""
        return signature_ok(self.key_of(operator), signature,
                            *answer_fields(request_id, answer, description, operator, client))

    def credentials(self, name: str) -> OperatorCredentials | None:
        """The signing credentials of a paired operator, for a process that holds the knowledge
        base (a web panel serving that operator)."""
        key = self.key_of(name)
        return OperatorCredentials(name, key) if key else None

    def revoke(self, name: str) -> bool:
        return self.kb.revoke_operator(name)

    def operators(self) -> list[dict[str, Any]]:
        return self.kb.operator_records()


# --- what the stack's nodes sign (the oversight node checks the same fields) --------------------

def candidate_digest(candidate: Any) -> str:
    """sha256 of a GoalCandidate's data (text, literals, ...): a reply that names a candidate is
    bound to all of it."""
    data = candidate.to_dict() if candidate is not None else None
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode("utf-8")).hexdigest()


def request_digest(request: Any) -> str:
    """sha256 of a ConfirmationRequest as the asker sent it (not `asked_by`, which the node sets)."""
    data = {
        "request_id": request.request_id, "question": request.question, "object_id": request.object_id,
        "object_description": request.object_description,
        "candidate": candidate_digest(request.candidate),
        "candidates": [candidate_digest(c) for c in request.candidates],
        "wants_description": bool(request.wants_description), "timeout_s": repr(float(request.timeout_s)),
    }
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode("utf-8")).hexdigest()


def confirm_fields(asker: str, nonce: str, sent_at: float, request: Any) -> tuple[str, ...]:
    return ("confirm-v1", asker, nonce, repr(float(sent_at)), request_digest(request))


def confirm_reply_fields(nonce: str, question_id: str, answer: str, description: str, answered_by: str,
                         confirmation_id: str) -> tuple[str, ...]:
    return ("confirm-reply-v1", nonce, question_id, answer, description, answered_by, confirmation_id)


def check_fields(asker: str, nonce: str, sent_at: float, confirmation_id: str,
                 consume: bool) -> tuple[str, ...]:
    return ("check-v1", asker, nonce, repr(float(sent_at)), confirmation_id, str(bool(consume)))


def check_reply_fields(nonce: str, valid: bool, confirmation_id: str, question_id: str, answer: str,
                       description: str, answered_by: str, candidate: Any) -> tuple[str, ...]:
    return ("check-reply-v1", nonce, str(bool(valid)), confirmation_id, question_id, answer, description,
            answered_by, candidate_digest(candidate))


def withdraw_fields(asker: str, nonce: str, sent_at: float, asker_request_id: str,
                    reason: str) -> tuple[str, ...]:
    return ("withdraw-v1", asker, nonce, repr(float(sent_at)), asker_request_id, reason)


TOKEN_FILE_ENV = "TASK_LEARNING_OPERATOR_TOKEN_FILE"


def operator_credentials(name: str, *, token_file: str | Path | None = None, db: str | Path | None = None,
                         pair: bool = False, wait_s: float = 0.0) -> tuple[OperatorCredentials | None, str]:
    """The credentials an operator client answers with, and a line saying where they came from.

    From the token file (`token_file`, $TASK_LEARNING_OPERATOR_TOKEN_FILE, or the default one for
    `name`); when there is none (or `pair`) and the robot's knowledge base `db` is given, the
    client pairs itself there (whoever can open that file is inside the robot's trust boundary)
    and writes the token file (waiting up to `wait_s` for that file: the oversight node makes it
    when it starts). A token given with a `db` that never paired its operator (a fresh knowledge
    base: the demo's, a new robot's) is replaced by a pairing there; one that `db` paired with
    another token or revoked is kept as it is (its answers are refused: no client undoes a
    revocation on its own). None when neither is possible: the client may list questions, and the
    oversight node refuses its answers."""
    path = Path(token_file or os.environ.get(TOKEN_FILE_ENV) or default_token_file(name))
    if path.exists() and not pair and db is None:
        creds = load_token_file(path)
        return creds, f"answering as paired operator {creds.name!r} (token {path})"
    if db is None:
        return None, (f"not paired: no operator token at {path}; pair once with `task-learning operator "
                      f"--pair --name {name} --db <the oversight node's knowledge base>`")
    from task_learning.kb.store import KnowledgeBase

    deadline = time.monotonic() + wait_s
    while str(db) != ":memory:" and not Path(db).is_file() and time.monotonic() < deadline:
        time.sleep(0.1)
    if str(db) != ":memory:" and not Path(db).is_file():  # a typo must not pair into a new, unused file
        raise PairingError(f"no knowledge base at {db}: give the oversight node's db_path (start the node first)")
    with KnowledgeBase(db) as kb:
        registry = OperatorRegistry(kb)
        if path.exists() and not pair:
            creds = load_token_file(path)
            if registry.key_of(creds.name) == creds.key:
                return creds, f"answering as paired operator {creds.name!r} (token {path})"
            if any(r["name"] == creds.name for r in kb.operator_records()):
                # Paired there with another token, or revoked: not undone by a client on its own.
                return creds, (f"the token at {path} is not {creds.name!r}'s in {db} (paired again or "
                               f"revoked there): its answers will be refused; pair with --pair")
            # A knowledge base that never saw this operator (a fresh one, e.g. the demo's): pair here.
        token = registry.pair_locally(name, created_by=f"local ({path})")
    write_private(path, token + "\n")
    return OperatorCredentials.from_token(token), f"paired operator {name!r} in {db} (token {path})"
