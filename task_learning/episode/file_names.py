"""File names for an episode's topics (`episode export`), one per topic and never shared.

The readable name of a ROS topic is its name without the leading slash and with `_` for `/`
(`/oversight/answer` -> `oversight_answer.jsonl`), but that is not one-to-one: `/a/b` and `/a_b`
both read `a_b`, and one topic's messages overwrote the other's. A topic keeps its readable name
only when no other topic of the file (and no file the export writes itself) has it; any other
topic gets `%` and its percent-encoded name (`%2Fa%2Fb.jsonl`), which no readable name can be
(readable names hold no `%`). A topic name of any bytes (a NUL, `..`, thousands of characters)
gives a file name of at most MAX_NAME characters in the export folder.
"""
from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable
from urllib.parse import quote

SUFFIX = ".jsonl"
RESERVED = frozenset({"llm_cassette"})  # the cassette the export writes beside the topics
MAX_NAME = 200  # characters before the suffix; longer names end in "+" and a hash of the topic
_ROS_NAME = re.compile(r"/?[A-Za-z0-9_]+(/[A-Za-z0-9_]+)*")


def readable(topic: str) -> str | None:
    """`/a/b` -> `a_b` for a ROS-style name; None for anything else."""
    return topic.strip("/").replace("/", "_") if _ROS_NAME.fullmatch(topic) else None


def escaped(topic: str) -> str:
    """`%` and the percent-encoded name: one-to-one, and never a readable name."""
    return _bounded("%" + quote(topic, safe=""), topic)


def _bounded(name: str, topic: str) -> str:
    if len(name) <= MAX_NAME:
        return name
    return name[:MAX_NAME - 17] + "+" + hashlib.sha256(topic.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def topic_file_names(topics: Iterable[str]) -> dict[str, str]:
    """Each topic's file name (with SUFFIX), distinct for distinct topics."""
    topics = list(dict.fromkeys(topics))
    shared = Counter(readable(t) for t in topics)
    names = {}
    for topic in topics:
        name = readable(topic)
        if name is None or shared[name] > 1 or name in RESERVED or len(name) > MAX_NAME:
            name = escaped(topic)
        names[topic] = name + SUFFIX
    return names
