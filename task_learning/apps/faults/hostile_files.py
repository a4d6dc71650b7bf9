"""Hostile data files, built small and without the memory they claim: episodes whose zstd chunk
decompresses to a gigabyte (streamed into the compressor, never held), episodes with malformed
channels and metadata, YAML alias bombs, and sweep grids of millions of trials. The fault probes
(`data_probes`) and the tests build their cases here, so both try the same files.
"""
from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from task_learning.episode.recorder import McapSink

GIB = 1024**3
_MESSAGE = 0x05  # MCAP opcodes
_CHUNK = 0x06


def _bomb_chunk(channel: int, claimed: int | None, size: int) -> bytes:
    """An MCAP chunk record holding one message of `size` zero bytes, zstd-compressed as a stream
    (a few hundred KB for a gigabyte); its header claims `claimed` bytes (the truth when None)."""
    import zstandard

    body = struct.pack("<HIQQ", channel, 0, 1, 1)
    record_head = struct.pack("<BQ", _MESSAGE, len(body) + size) + body
    compressor = zstandard.ZstdCompressor(level=1).compressobj()
    parts = [compressor.compress(record_head)]
    block = bytes(1024**2)
    left = size
    while left:
        step = min(left, len(block))
        parts.append(compressor.compress(block[:step]))
        left -= step
    parts.append(compressor.flush())
    data = b"".join(parts)
    total = len(record_head) + size
    compression = b"zstd"
    fields = (struct.pack("<QQQI", 1, 1, total if claimed is None else claimed, 0)
              + struct.pack("<I", len(compression)) + compression + struct.pack("<Q", len(data)) + data)
    return struct.pack("<BQ", _CHUNK, len(fields)) + fields


def _metadata(**changes: str) -> dict[str, str]:
    meta = {"scene": "tidy_kitchen", "task": "", "condition": "STARS", "llm": "offline", "operator": "none",
            "engine": "heuristic", "seed": "", "backend": "symbolic", "elicitation": "batched", "workers": "4",
            "recorded_by": "task-learning faults"}
    meta.update(changes)
    return meta


def bomb_episode(path: Path, *, size: int = GIB, honest: bool = True) -> Path:
    """An episode whose one chunk decompresses to `size` bytes; its header says so when `honest`,
    else it claims 1 KB (the data must then be measured while it is decompressed)."""
    from mcap.writer import CompressionType, Writer

    from task_learning.episode.recorder import FORMAT_VERSION, METADATA_NAME
    from task_learning.episode.schema import msgdef

    with open(path, "wb") as handle:
        writer = Writer(handle, compression=CompressionType.NONE)
        writer.start(profile="ros2", library="task_learning faults")
        writer.add_metadata(METADATA_NAME, {"format": FORMAT_VERSION, **_metadata()})
        schema = writer.register_schema("std_msgs/msg/String", "ros2msg", msgdef("std_msgs/msg/String").encode())
        channel = writer.register_channel("/llm/calls", "cdr", schema)
        writer.flush()
        handle.write(_bomb_chunk(channel, None if honest else 1024, size))
        writer.finish()
    return path


def crowded_episode(path: Path, *, chunk_bytes: int = 8 * 1024**2 - 4096) -> Path:
    """An episode whose one chunk is `chunk_bytes` of the smallest messages a std_msgs/String
    channel can carry (an empty string, 40 bytes a record): hundreds of thousands of messages that
    a reader giving them in log-time order holds at once."""
    import zstandard
    from mcap.writer import CompressionType, Writer

    from task_learning.episode.recorder import FORMAT_VERSION, METADATA_NAME, _encoder
    from task_learning.episode.schema import msgdef

    data = _encoder("std_msgs/msg/String", msgdef("std_msgs/msg/String"))({"data": ""})
    with open(path, "wb") as handle:
        writer = Writer(handle, compression=CompressionType.NONE)
        writer.start(profile="ros2", library="task_learning faults")
        writer.add_metadata(METADATA_NAME, {"format": FORMAT_VERSION, **_metadata()})
        schema = writer.register_schema("std_msgs/msg/String", "ros2msg", msgdef("std_msgs/msg/String").encode())
        channel = writer.register_channel("/kb/changes", "cdr", schema)
        writer.flush()
        record = len(struct.pack("<BQHIQQ", 0, 0, 0, 0, 0, 0)) + len(data)
        count = chunk_bytes // record
        raw = b"".join(struct.pack("<BQ", _MESSAGE, record - 9) + struct.pack("<HIQQ", channel, i, i + 1, i + 1) + data
                       for i in range(count))
        compressed = zstandard.ZstdCompressor(level=1).compress(raw)
        fields = (struct.pack("<QQQI", 1, count, len(raw), 0) + struct.pack("<I", 4) + b"zstd"
                  + struct.pack("<Q", len(compressed)) + compressed)
        handle.write(struct.pack("<BQ", _CHUNK, len(fields)) + fields)
        writer.finish()
    return path


def _episode(path: Path, meta: dict[str, str], write: Callable[[McapSink], None]) -> Path:
    from task_learning.episode.recorder import McapSink

    sink = McapSink(path, meta, topics=None)
    write(sink)
    sink.close()
    return path


def _string(topic: str, data: str) -> Callable[[McapSink], None]:
    return lambda sink: sink.write(topic, {"data": data}, 1_000)


def _raw_topic(topic: str) -> Callable[[McapSink], None]:
    from task_learning.episode.recorder import _encoder
    from task_learning.episode.schema import msgdef

    def write(sink: McapSink) -> None:
        encode = _encoder("std_msgs/msg/String", msgdef("std_msgs/msg/String"))
        sink.write_raw(topic, "std_msgs/msg/String", encode({"data": "{}"}), 1_000)
    return write


def _nothing(_sink: McapSink) -> None:
    return None


# name -> (build(path), the words its one-line error must hold)
MALFORMED_EPISODES: dict[str, tuple[Callable[[Path], Path], str]] = {
    "non-JSON /llm/calls": (lambda p: _episode(p, _metadata(), _string("/llm/calls", "{not json")), "/llm/calls"),
    "non-JSON /kb/changes": (lambda p: _episode(p, _metadata(), _string("/kb/changes", "not json")), "/kb/changes"),
    "a list for an /llm/calls entry": (lambda p: _episode(p, _metadata(), _string("/llm/calls", "[1, 2]")),
                                       "/llm/calls"),
    "a list for a /kb/changes entry": (lambda p: _episode(p, _metadata(), _string("/kb/changes", "[1]")),
                                       "/kb/changes"),
    "metadata seed: abc": (lambda p: _episode(p, _metadata(seed="abc"), _nothing), "seed"),
    "metadata workers: nan": (lambda p: _episode(p, _metadata(workers="nan"), _nothing), "workers"),
    "metadata workers: 100000": (lambda p: _episode(p, _metadata(workers="100000"), _nothing), "workers"),
    "a NUL byte in a topic name": (lambda p: _episode(p, _metadata(), _raw_topic("/a\x00b")), "control characters"),
}


def alias_bomb(levels: int = 9, width: int = 9) -> str:
    """A YAML 'billion laughs': each level an alias list of the level below (width**levels leaves)."""
    lines = ["a0: &a0 [" + ", ".join(["lol"] * width) + "]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]" for i in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


def huge_grid(llm_entries: int = 2000, seeds: int = 1000) -> str:
    """A sweep file of a few dozen KB whose grid holds llm_entries x 3 x seeds trials."""
    entries = "\n".join(f"      - {{provider: replay, cassette: c{i}.jsonl, label: m{i}}}" for i in range(llm_entries))
    return ("name: huge\nexperiments:\n  - kind: stars\n    scenes: [tidy_kitchen]\n"
            f"    conditions: [STARS, TBP, STARS+O]\n    seeds: {seeds}\n    llm:\n{entries}\n")
