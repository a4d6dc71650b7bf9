"""`replay_episode`: run a recorded episode again with no model and no operator, and check that
it does the same.

The episode's metadata says how the run was made (scene, condition, engine, seed, backend,
elicitation mode); its `/llm/calls` are the cassette the LLM client answers from (a request the
file does not hold fails, it is never sent anywhere); its `/oversight/answer`s answer the
questions, each matched to a recorded question of the same words about the same object, in
order; its knowledge-base snapshot is the knowledge the run starts from. Then the learned goals
(`/learned_goal`) and the actions sent to the world (`/action`) are compared with the file's.
"""
from __future__ import annotations

import tempfile
import time
from collections import defaultdict, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from task_learning.episode import messages as msgs
from task_learning.episode.bus import EpisodeBus, MemorySink
from task_learning.episode.reader import Episode, EpisodeError, open_episode
from task_learning.llm.replay import write_cassette
from task_learning.oversight.operator import timeout_answer
from task_learning.types import AnswerKind, ConfirmationAnswer, ConfirmationRequest

# Metadata keys an in-process episode carries (episode.session_metadata writes them).
REQUIRED = ("scene", "condition", "engine", "backend", "elicitation")


class RecordedOperator:
    """Answers questions with the answers an episode recorded for the same question (same words,
    same object), each used once, in order. A question the episode does not hold times out (no
    consent) and is listed in `unmatched`: the replay then differs from the recording."""

    name = "replay"

    def __init__(self, pairs: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]]) -> None:
        self._answers: dict[tuple[str, str], deque[Mapping[str, Any]]] = defaultdict(deque)
        for question, answer in pairs:
            self._answers[(question["question"], question["object_id"])].append(answer)
        self.answered = 0
        self.unmatched: list[str] = []

    def ask(self, request: ConfirmationRequest) -> ConfirmationAnswer:
        queue = self._answers.get((request.question, request.object_id))
        if not queue:
            self.unmatched.append(request.question)
            return timeout_answer(request)
        recorded = queue.popleft()
        self.answered += 1
        try:
            kind = AnswerKind(str(recorded["answer"]))
        except ValueError:
            self.unmatched.append(request.question)
            return timeout_answer(request)
        return ConfirmationAnswer(request.request_id, kind, str(recorded.get("description") or ""),
                                  str(recorded.get("answered_by") or "replay"), time.time())


def question_answer_pairs(episode: Episode) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Each recorded answer with the question it answered (matched by request id)."""
    questions: dict[str, dict[str, Any]] = {}
    pairs = []
    for topic, request_id, message in read_topic(episode, [msgs.QUESTION, msgs.ANSWER],
                                                 lambda m: str(m["request_id"])):
        if topic == msgs.QUESTION:
            questions[request_id] = message
        elif request_id in questions:
            pairs.append((questions.pop(request_id), message))
    return pairs


def read_topic(episode: Episode, topics: list[str], parse: Any) -> list[tuple[str, Any, dict[str, Any]]]:
    """(topic, parse(message), message) of each message on `topics`. A message whose fields are
    not what the channel's type has (a file's schema is the file's word) is EpisodeError naming
    the topic and the message, not a KeyError from deep in the comparison."""
    found = []
    counts: dict[str, int] = defaultdict(int)
    for topic, _t, message in episode.messages(topics):
        counts[topic] += 1
        try:
            found.append((topic, parse(message), message))
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            problem = f"no field {exc}" if isinstance(exc, KeyError) else f"{type(exc).__name__}: {exc}"
            raise EpisodeError(f"{episode.path}: {topic} message {counts[topic]}: not a message of its "
                               f"type ({problem})") from None
    return found


def learned(message: Mapping[str, Any]) -> dict[str, Any]:
    """What is compared of a /learned_goal message."""
    goal = message["goal"]
    return {"object_id": message["object_id"], "goal": goal["text"],
            "literals": [f"{lit['predicate']}({', '.join(lit['args'])}){'' if lit['truth'] == 'true' else ' ' + lit['truth']}"
                         for lit in goal["literals"]],
            "outcome": message["outcome"], "goal_source": message["goal_source"],
            "confirmed_by": message["confirmed_by"]}


def action(message: Mapping[str, Any]) -> str:
    params = ", ".join(f"{p['key']}={p['value']}" for p in message["params"])
    return f"{message['action']}({message['object_id']}{', ' + params if params else ''})"


@dataclass
class ReplayReport:
    episode: str
    same_goals: bool
    same_actions: bool
    goals: list[dict[str, Any]]
    actions: int
    llm_answers_in_file: int
    llm_answers_served: int
    model_calls: int  # requests that reached a model: always 0 (the client only has the file)
    llm_failures: int  # requests the file did not hold
    operator_questions: int  # questions put to a person: always 0
    answers_from_file: int
    unmatched_questions: list[str] = field(default_factory=list)
    differences: list[str] = field(default_factory=list)

    @property
    def same(self) -> bool:
        return self.same_goals and self.same_actions and not self.unmatched_questions and not self.llm_failures

    def to_dict(self) -> dict[str, Any]:
        data = dict(vars(self))
        data["same"] = self.same
        return data


def _differences(kind: str, recorded: list[Any], replayed: list[Any], limit: int = 5) -> list[str]:
    out = []
    for i in range(max(len(recorded), len(replayed))):
        a = recorded[i] if i < len(recorded) else "(none)"
        b = replayed[i] if i < len(replayed) else "(none)"
        if a != b:
            out.append(f"{kind} {i + 1}: recorded {a}; replayed {b}")
            if len(out) >= limit:
                break
    return out


MAX_WORKERS = 64  # as `run --workers` allows


def _metadata_int(episode: Episode, key: str, default: int | None, high: int) -> int | None:
    """An integer of the episode's metadata (`default` when empty or "None"); EpisodeError naming
    the key when it is not an integer between 0 (1 for workers) and `high`."""
    from task_learning.inputs.numbers import number_problem

    text = str(episode.metadata.get(key, "") or "").strip()
    if text in ("", "None"):
        return default
    try:
        value = int(text, 10)
    except ValueError:
        raise EpisodeError(f"{episode.path}: metadata {key}: expected an integer, got {text[:40]!r}") from None
    problem = number_problem(value, low=1 if key == "workers" else 0, high=high, integer=True)
    if problem:
        raise EpisodeError(f"{episode.path}: metadata {key}: {problem}")
    return value


def replay_episode(path: str | Path) -> ReplayReport:
    """Replay the episode at `path` in-process (see the module's docstring)."""
    from task_learning.llm.client import make_client
    from task_learning.planning.session import RunSpec, run_in_process

    episode = open_episode(path)
    meta = episode.metadata
    missing = [k for k in REQUIRED if not meta.get(k)]
    if missing:
        raise EpisodeError(f"{episode.path}: its metadata lacks {', '.join(missing)} (not an episode of "
                           "`task-learning run --record` or a PerformTask)")
    seed = _metadata_int(episode, "seed", None, 2**32 - 1)
    workers = _metadata_int(episode, "workers", 4, MAX_WORKERS) or 4
    entries = episode.llm_entries()
    recorded_goals = [goal for _t, goal, _m in read_topic(episode, [msgs.LEARNED_GOAL], learned)]
    recorded_actions = [call for _t, call, _m in read_topic(episode, [msgs.ACTION], action)]
    operator = RecordedOperator(question_answer_pairs(episode))
    memory = MemorySink(topics={msgs.LEARNED_GOAL, msgs.ACTION})
    with tempfile.TemporaryDirectory(prefix="episode-replay-") as folder:
        cassette = write_cassette(Path(folder) / "llm.jsonl", entries)
        db = Path(folder) / "kb.sqlite"
        if episode.kb_start is not None:
            db.write_bytes(episode.kb_start)
        client = make_client(f"replay:{cassette}")
        spec = RunSpec(scene=meta["scene"], condition=meta["condition"], llm=f"replay:{cassette}",
                       operator="none", db=db, seed=seed, engine=meta["engine"], backend=meta["backend"],
                       elicitation=meta["elicitation"], max_workers=workers)
        bus = EpisodeBus([memory])
        try:
            run_in_process(spec, client=client,
                           operator=operator if meta["condition"].upper().endswith("+O") else None, bus=bus)
        finally:
            bus.close()
            served = getattr(client.provider, "served", 0)
            usage = client.usage
            client.close()
    goals = [learned(m) for m in memory.on(msgs.LEARNED_GOAL)]
    actions = [action(m) for m in memory.on(msgs.ACTION)]
    differences = _differences("goal", recorded_goals, goals) + _differences("action", recorded_actions, actions)
    return ReplayReport(str(episode.path), goals == recorded_goals, actions == recorded_actions, goals,
                        len(actions), len(entries), int(served), 0, int(usage.failures), 0, operator.answered,
                        list(operator.unmatched), differences)
