"""An episode's messages read chunk by chunk, with what a chunk may decompress to bounded.

The mcap library decompresses a chunk in one call to the size the chunk's header claims, so a
575 KB file whose zstd chunk holds 1 GB of zeros made `replay` use 3 GB. Here every chunk is
decompressed as a stream and refused once it passes MAX_CHUNK_BYTES, whatever its header says,
and a record's length is refused when it is longer than the file; memory stays within a few
chunks whatever the file claims. Messages come in log-time order (a chunk is opened only when its
first message is due, as the library's own reader does), decoded by mcap-ros2-support.
"""
from __future__ import annotations

import dataclasses
import heapq
import io
import itertools
import struct
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from task_learning.errors import TaskLearningError

if TYPE_CHECKING:
    from mcap.records import Channel, Chunk, ChunkIndex, McapRecord, Message, Schema

# A chunk holds whole messages: a camera frame of 1920x1080 RGB (6.2 MB) fits, as do the
# recorder's 1 MB chunks; what decompresses past this is refused, not allocated. A chunk's
# messages are held at once (to give them in log-time order): 8 MiB of the smallest possible
# messages is some 270,000 of them, about 130 MB.
MAX_CHUNK_BYTES = 8 * 1024**2
_READ_BLOCK = 1024**2


class ChunkError(TaskLearningError):
    """A chunk (or record) that cannot be read within the bounds; the message says why."""


def decompress(chunk: Chunk) -> bytes:
    """The chunk's records, decompressed as a stream and refused past MAX_CHUNK_BYTES (its
    header's size is checked first, then what the data really gives)."""
    limit = MAX_CHUNK_BYTES
    if chunk.uncompressed_size > limit:
        raise ChunkError(f"a chunk that decompresses to {chunk.uncompressed_size:,} bytes (at most {limit:,} are "
                         "read): refused, not decompressed")
    if chunk.compression == "":
        return bytes(chunk.data)
    if chunk.compression == "zstd":
        import zstandard

        out = bytearray()
        with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(chunk.data), read_across_frames=True) as source:
            while block := source.read(_READ_BLOCK):
                out += block
                if len(out) > limit:
                    raise ChunkError(f"a chunk that decompresses to more than {limit:,} bytes (its header said "
                                     f"{chunk.uncompressed_size:,}): refused")
        return bytes(out)
    if chunk.compression == "lz4":
        import lz4.frame  # type: ignore[import-untyped]

        decompressor = lz4.frame.LZ4FrameDecompressor()
        data = decompressor.decompress(chunk.data, max_length=limit + 1)
        if len(data) > limit or not decompressor.eof:
            raise ChunkError(f"a chunk that decompresses to more than {limit:,} bytes (or is cut short): refused")
        return bytes(data)
    raise ChunkError(f"a chunk compressed with {chunk.compression[:40]!r} (zstd, lz4 or none are read)")


def chunk_records(chunk: Chunk) -> list[McapRecord]:
    """The records inside a chunk, decompressed within the bound."""
    from mcap.stream_reader import breakup_chunk

    return list(breakup_chunk(dataclasses.replace(chunk, compression="", data=decompress(chunk))))


def _read_chunk_at(handle: IO[bytes], offset: int, file_size: int) -> Chunk:
    """The chunk record at `offset`, its length checked against the file before it is read."""
    from mcap.data_stream import ReadDataStream
    from mcap.records import Chunk

    handle.seek(offset)
    head = handle.read(9)
    if len(head) != 9:
        raise ChunkError(f"a chunk index points past the end of the file (offset {offset})")
    _opcode, length = struct.unpack("<BQ", head)
    if length > file_size:
        raise ChunkError(f"a chunk of {length:,} bytes in a file of {file_size:,}")
    chunk: Chunk = Chunk.read(ReadDataStream(io.BytesIO(handle.read(length))))
    return chunk


Decoded = tuple[str, int, Any]


def topic_problem(topic: str) -> str | None:
    """Why a channel's topic name is refused: control characters (a NUL byte, an escape) are in
    no ROS name and would reach file names and terminals."""
    from task_learning.inputs.safe_text import has_control_characters

    if has_control_characters(topic):
        return f"a topic name with control characters ({topic[:60]!r})"
    return None


class MessageSource:
    """(topic, log time, decoded message) of every message on `topics` (None: all)."""

    def __init__(self, path: Path, topics: Iterable[str] | None) -> None:
        from mcap_ros2.decoder import DecoderFactory

        self.path = path
        self.topics = set(topics) if topics is not None else None
        self.file_size = path.stat().st_size
        self._factory = DecoderFactory()
        self._decoders: dict[int, Callable[[bytes], Any]] = {}
        self.channels: dict[int, Channel] = {}
        self.schemas: dict[int, Schema] = {}

    def __iter__(self) -> Iterator[Decoded]:
        from mcap.reader import make_reader

        with open(self.path, "rb") as handle:
            summary = make_reader(handle).get_summary()
            if summary is not None:  # channels a writer put only in the summary
                self.schemas = dict(summary.schemas)
                for channel in summary.channels.values():
                    self._add_channel(channel)
            if summary is None or not summary.chunk_indexes:
                handle.seek(0)
                yield from self._linear(handle)
                return
            yield from self._indexed(handle, summary.chunk_indexes)

    def _indexed(self, handle: IO[bytes], indexes: list[ChunkIndex]) -> Iterator[Decoded]:
        """Log-time order: a chunk is opened when its first message time comes up."""
        from mcap.records import Message

        order = itertools.count()
        queue: list[tuple[int, int, int, ChunkIndex | Message]] = [(index.message_start_time, 0, next(order), index)
                                                  for index in indexes]
        heapq.heapify(queue)
        while queue:
            _time, _kind, _n, item = heapq.heappop(queue)
            if isinstance(item, Message):  # kind 1: a message comes after a chunk opening at its time
                yield self._decode(item)
                continue
            for record in chunk_records(_read_chunk_at(handle, item.chunk_start_offset, self.file_size)):
                if isinstance(record, Message) and self._wanted(record):
                    heapq.heappush(queue, (record.log_time, 1, next(order), record))

    def _linear(self, handle: IO[bytes]) -> Iterator[Decoded]:
        """A file without chunk indexes: its records in file order."""
        from mcap.records import Channel, Chunk, Message, Schema
        from mcap.stream_reader import StreamReader

        for record in StreamReader(handle, emit_chunks=True, record_size_limit=self.file_size).records:
            for inner in chunk_records(record) if isinstance(record, Chunk) else [record]:
                if isinstance(inner, Schema):
                    self.schemas[inner.id] = inner
                elif isinstance(inner, Channel):
                    self._add_channel(inner)
                elif isinstance(inner, Message) and self._wanted(inner):
                    yield self._decode(inner)

    def _add_channel(self, channel: Channel) -> None:
        problem = topic_problem(channel.topic)
        if problem:
            raise ChunkError(problem)
        self.channels[channel.id] = channel

    def _wanted(self, message: Message) -> bool:
        channel = self.channels.get(message.channel_id)
        if channel is None:
            raise ChunkError(f"a message on channel {message.channel_id}, which the file does not define")
        return self.topics is None or channel.topic in self.topics

    def _decode(self, message: Message) -> Decoded:
        channel = self.channels[message.channel_id]
        decoder = self._decoders.get(message.channel_id)
        if decoder is None:
            schema = self.schemas.get(channel.schema_id)
            decoder = self._factory.decoder_for(channel.message_encoding, schema)
            if decoder is None:
                raise ChunkError(f"topic {channel.topic[:80]!r}: no decoder for encoding "
                                 f"{channel.message_encoding[:40]!r} (ROS 2 CDR is read)")
            self._decoders[message.channel_id] = decoder
        return channel.topic, message.log_time, decoder(message.data)
