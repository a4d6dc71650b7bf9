"""Reading an episode MCAP file: its metadata, its knowledge-base snapshot, its messages as dicts.

Any MCAP file with ros2msg schemas reads here (one recorded from the ROS graph as well as one
written in-process); a file that is not MCAP, or is cut short, is one clear error naming it.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from task_learning.episode import messages as msgs
from task_learning.episode.chunks import topic_problem
from task_learning.episode.recorder import KB_ATTACHMENT, METADATA_NAME
from task_learning.errors import TaskLearningError
from task_learning.inputs.files import require_regular_file

MAX_EPISODE_BYTES = 4 * 1024**3


class EpisodeError(TaskLearningError):
    """An episode file that cannot be read (names the file and why)."""


def to_dict(value: Any) -> Any:
    """A message decoded by mcap-ros2-support (objects with __slots__) as plain dicts and lists."""
    slots = getattr(type(value), "__slots__", None)
    if slots and not isinstance(value, (str, bytes)):
        return {name: to_dict(getattr(value, name)) for name in slots}
    if isinstance(value, (list, tuple)):
        return [to_dict(v) for v in value]
    return value


@dataclass
class Episode:
    path: Path
    metadata: dict[str, str]
    kb_start: bytes | None
    topics: dict[str, dict[str, Any]] = field(default_factory=dict)  # topic -> type, count
    start_ns: int = 0
    end_ns: int = 0

    @property
    def duration_s(self) -> float:
        return max(0, self.end_ns - self.start_ns) / 1e9

    def messages(self, topics: list[str] | None = None) -> Iterator[tuple[str, int, dict[str, Any]]]:
        """(topic, log time ns, message dict) in log-time order; each chunk is decompressed
        within chunks.MAX_CHUNK_BYTES, so a small file cannot claim gigabytes."""
        from task_learning.episode.chunks import MessageSource

        try:
            for topic, log_time, decoded in MessageSource(self.path, topics):
                yield topic, log_time, to_dict(decoded)
        except TaskLearningError as exc:
            raise EpisodeError(f"{self.path}: cannot read its messages: {exc}") from None
        except (OSError, ValueError, EOFError, KeyError) as exc:
            raise EpisodeError(f"{self.path}: cannot read its messages: {exc}") from None
        except Exception as exc:  # noqa: BLE001 - the mcap library's own errors (a damaged chunk, a bad CRC)
            raise EpisodeError(f"{self.path}: cannot read its messages: {type(exc).__name__}: {exc}") from None

    def llm_entries(self) -> list[dict[str, Any]]:
        """Every LLM call of the episode as a cassette entry (what replay answers from)."""
        return self.json_objects(msgs.LLM_CALLS)

    def kb_changes(self) -> list[dict[str, Any]]:
        return self.json_objects(msgs.KB_CHANGES)

    def json_objects(self, topic: str) -> list[dict[str, Any]]:
        """The JSON objects a std_msgs/String topic carries; EpisodeError naming the topic and
        the message when one is not a JSON object (text, a list, a number)."""
        found = []
        for number, (_t, _n, message) in enumerate(self.messages([topic]), start=1):
            data = message.get("data") if isinstance(message, dict) else None
            try:
                value = json.loads(data) if isinstance(data, str) else None
            except ValueError as exc:
                raise EpisodeError(f"{self.path}: {topic} message {number}: not JSON ({exc})") from None
            if not isinstance(value, dict):
                raise EpisodeError(f"{self.path}: {topic} message {number}: expected a JSON object, got "
                                   f"{type(value).__name__ if data is not None else 'no text'}")
            found.append(value)
        return found


def open_episode(path: str | Path) -> Episode:
    """Read an episode's summary, metadata and attachments; EpisodeError when it is not one."""
    from mcap.reader import make_reader

    path = Path(path)
    try:
        require_regular_file(path)
    except TaskLearningError as exc:
        raise EpisodeError(str(exc)) from None
    if path.stat().st_size > MAX_EPISODE_BYTES:
        raise EpisodeError(f"{path}: larger than {MAX_EPISODE_BYTES} bytes")
    try:
        with open(path, "rb") as handle:
            reader = make_reader(handle)
            summary = reader.get_summary()
            metadata: dict[str, str] = {}
            for record in reader.iter_metadata():
                if record.name == METADATA_NAME:
                    metadata = dict(record.metadata)
            kb_start = next((a.data for a in reader.iter_attachments() if a.name == KB_ATTACHMENT), None)
    except Exception as exc:  # noqa: BLE001 - not MCAP, cut short, damaged: the library raises its own errors
        raise EpisodeError(f"{path}: not a readable MCAP file ({type(exc).__name__}: {exc})") from None
    if summary is None:
        raise EpisodeError(f"{path}: the MCAP file has no summary (was its recording cut short?)")
    stats = summary.statistics
    counts = dict(stats.channel_message_counts) if stats is not None else {}
    topics = {}
    for channel_id, channel in sorted(summary.channels.items()):
        problem = topic_problem(channel.topic)
        if problem:
            raise EpisodeError(f"{path}: {problem}")
        schema = summary.schemas.get(channel.schema_id)
        topics[channel.topic] = {"type": schema.name if schema else "", "count": int(counts.get(channel_id, 0))}
    return Episode(path, metadata, bytes(kb_start) if kb_start is not None else None, topics,
                   stats.message_start_time if stats else 0, stats.message_end_time if stats else 0)
