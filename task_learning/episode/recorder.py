"""`McapSink`: an episode written as one MCAP file, ROS 2 style.

Every channel has its full ros2msg definition as its schema and CDR-encoded messages (the profile
rosbag2 writes), so `ros2 bag info episode.mcap`, Foxglove and `rosbags` read it as it is. Beside
the messages: an `episode` metadata record (how the run was made: scene, condition, LLM, engine,
seed, ...), and the knowledge base the run started from as an attachment (`kb_start.sqlite`), so
a replay starts from the same knowledge.

The file is written under a temporary name beside the destination and renamed when it is closed
complete: a run that failed, or a disk that filled, leaves no half file (OutputError names it).
"""
from __future__ import annotations

import datetime
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Collection, Mapping

from task_learning.episode.messages import BY_TOPIC, CHANNELS
from task_learning.episode.schema import msgdef
from task_learning.errors import TaskLearningError
from task_learning.inputs.files import AtomicOutput

METADATA_NAME = "episode"
KB_ATTACHMENT = "kb_start.sqlite"
FORMAT_VERSION = "1"


def _encoder(msgtype: str, definition: str) -> Callable[[Any], bytes]:
    """A CDR encoder for message dicts of `msgtype` (mcap-ros2-support's dynamic serializer, the
    one its own Writer uses)."""
    from mcap_ros2._dynamic import serialize_dynamic

    encoders = serialize_dynamic(msgtype, definition)
    if msgtype not in encoders:
        raise TaskLearningError(f"episode: cannot encode {msgtype}")
    return encoders[msgtype]


def snapshot_kb(path: str | Path) -> bytes | None:
    """The knowledge base at `path` as it is now (SQLite's online backup, consistent while
    others write), or None when there is none yet."""
    source = Path(str(path))
    if str(path) == ":memory:" or not source.is_file():
        return None
    with tempfile.TemporaryDirectory(prefix="episode-kb-") as folder:
        copy = Path(folder) / "kb.sqlite"
        src = sqlite3.connect(f"{source.resolve().as_uri()}?mode=ro", uri=True)
        dst = sqlite3.connect(copy)
        try:
            src.backup(dst)
        finally:
            dst.close()
            src.close()
        return copy.read_bytes()


class McapSink:
    """Writes the episode's topics (the `CHANNELS` table) to an MCAP file."""

    def __init__(self, path: str | Path, metadata: Mapping[str, str], *, kb_start: bytes | None = None,
                 topics: Collection[str] | None = None) -> None:
        from mcap.writer import CompressionType, Writer

        self.path = Path(path)
        self.topics = set(topics) if topics is not None else {c.topic for c in CHANNELS}
        self.counts: dict[str, int] = {}
        self._output = AtomicOutput(self.path)
        self._schemas: dict[str, int] = {}
        self._channels: dict[str, tuple[int, Callable[[Any], bytes]]] = {}
        self._closed = False
        try:
            self._file = open(self._output.path, "wb")
            self._writer = Writer(self._file, compression=CompressionType.ZSTD)
            self._writer.start(profile="ros2", library="task_learning episode (mcap, mcap-ros2-support)")
            self._writer.add_metadata(METADATA_NAME, {"format": FORMAT_VERSION, **{k: str(v) for k, v in metadata.items()}})
            if kb_start is not None:
                now = time.time_ns()
                self._writer.add_attachment(now, now, KB_ATTACHMENT, "application/vnd.sqlite3", kb_start)
        except OSError as exc:
            raise self._output.failed(exc) from None

    def add_metadata(self, metadata: Mapping[str, str]) -> None:
        """A later `episode` metadata record (readers take the last): what was only known once
        the run went on (the graph's world backend)."""
        try:
            self._writer.add_metadata(METADATA_NAME, {"format": FORMAT_VERSION, **{k: str(v) for k, v in metadata.items()}})
        except OSError as exc:
            self._closed = True
            raise self._output.failed(exc) from None

    def _channel(self, topic: str, msgtype: str) -> tuple[int, Callable[[Any], bytes]]:
        found = self._channels.get(topic)
        if found is None:
            definition = msgdef(msgtype)
            schema = self._schemas.get(msgtype)
            if schema is None:
                schema = self._writer.register_schema(msgtype, "ros2msg", definition.encode("utf-8"))
                self._schemas[msgtype] = schema
            channel = self._writer.register_channel(topic, "cdr", schema)
            found = self._channels[topic] = (channel, _encoder(msgtype, definition))
            self.counts[topic] = 0
        return found

    def write(self, topic: str, message: Mapping[str, Any], log_time_ns: int) -> None:
        channel, encode = self._channel(topic, BY_TOPIC[topic].msgtype)
        self._add(topic, channel, encode(message), log_time_ns)

    def write_raw(self, topic: str, msgtype: str, cdr: bytes, log_time_ns: int) -> None:
        """A message already in CDR, as a ROS subscription with raw=True delivers it."""
        channel, _encode = self._channel(topic, msgtype)
        self._add(topic, channel, bytes(cdr), log_time_ns)

    def _add(self, topic: str, channel: int, data: bytes, log_time_ns: int) -> None:
        if self._closed:
            return
        try:
            self._writer.add_message(channel, log_time=log_time_ns, data=data, publish_time=log_time_ns,
                                     sequence=self.counts[topic])
        except OSError as exc:
            self._closed = True
            raise self._output.failed(exc) from None
        self.counts[topic] += 1

    def close(self) -> None:
        """Finish the file and give it its name (OutputError, nothing left, when it failed)."""
        if self._closed and not self._output.path.exists():
            return  # a write failed: its error was raised then, nothing is left
        self._closed = True
        try:
            self._writer.finish()
            self._file.close()
        except OSError as exc:
            raise self._output.failed(exc) from None
        self._output.commit()

    def discard(self) -> None:
        """Leave nothing behind (a run that failed before its end)."""
        self._closed = True
        try:
            self._file.close()
        finally:
            self._output.discard()


def run_metadata(spec: Any, *, recorded_by: str) -> dict[str, str]:
    """How a run was made (a planning.session.RunSpec), as the episode's metadata: what replay
    needs to make it again."""
    scene = spec.scene if isinstance(spec.scene, str) else getattr(spec.scene, "name", "")
    return {"scene": str(scene), "task": str(spec.task or ""), "condition": str(spec.condition).upper(),
            "llm": str(spec.llm), "operator": str(spec.operator), "engine": str(spec.engine),
            "seed": "" if spec.seed is None else str(spec.seed), "backend": str(spec.backend),
            "elicitation": str(spec.elicitation), "workers": str(spec.max_workers), "db": str(spec.db),
            "recorded_by": recorded_by,
            "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}


def recording_sink(path: Any, spec: Any, *, recorded_by: str = "task-learning run") -> McapSink:
    """The MCAP sink of an in-process run: its metadata and the knowledge base it starts from."""
    return McapSink(path, run_metadata(spec, recorded_by=recorded_by), kb_start=snapshot_kb(spec.db))
