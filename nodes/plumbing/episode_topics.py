"""The episode's channels on the ROS graph (task_learning.episode.messages.CHANNELS).

- `RosSink`: an episode sink that publishes the core's message dicts as ROS messages on their
  topics, so what a node observes in-process (the planner's actions and BCR trees, goal
  elicitation's STARS tree and LLM calls, the oversight node's questions and answers) is on the
  graph for a recorder, the live view, `ros2 topic echo` or `ros2 bag record`.
- `GraphTap`: subscribes to every channel serialized (raw CDR, as it came off the wire), once for
  the node's life; `GraphRecording` writes what it hears during one PerformTask into an MCAP
  episode with the core's McapSink.
- `TaskEpisode`: one PerformTask of the planner, its observers on the graph and its recording.
- `message_class(msgtype)`: the rclpy class of a channel's type.
"""
from __future__ import annotations

import importlib
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Collection, Mapping

from rclpy.callback_groups import CallbackGroup
from rclpy.duration import Duration
from rclpy.event_handler import SubscriptionEventCallbacks
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rclpy.subscription import Subscription
from rosidl_runtime_py import set_message_fields

from task_learning.episode.bus import EpisodeBus
from task_learning.episode.messages import BY_TOPIC, CHANNELS, LEARNED_GOAL, LLM_CALLS, WORLD_STATE, object_outcome
from task_learning.episode.observe import BcrTreePublisher, kb_observer
from task_learning.episode.recorder import McapSink, snapshot_kb
from task_learning.errors import TaskLearningError
from task_learning.inputs.safe_text import printable

if TYPE_CHECKING:
    from task_learning.planning.loop import TaskLearner

# Deep enough that a tree level's burst is not dropped; reliable so a recorder loses nothing.
QOS = QoSProfile(depth=200, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE)
# /llm/calls comes in bursts as large as one merged request level: with cross-object elicitation
# (the planner's default) every object's prompts of a tree level at once, 457 on store groceries
# and 948 on the kitchen. Deeper, and RosSink waits for its subscribers' acknowledgements every
# ACK_EVERY messages, so a recorder's history is never overrun by a burst (a reliable KEEP_LAST
# history drops the oldest samples it holds when a burst is deeper than it).
BURST_QOS = QoSProfile(depth=2000, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE)
BURST_TOPICS = frozenset({LLM_CALLS})
ACK_EVERY = 500
ACK_WAIT_S = 5.0


def qos_for(topic: str) -> QoSProfile:
    return BURST_QOS if topic in BURST_TOPICS else QOS


def message_class(msgtype: str) -> Any:
    package, _kind, name = msgtype.split("/")
    return getattr(importlib.import_module(f"{package}.msg"), name)


class RosSink:
    """Publishes message dicts on their ROS topics (an EpisodeBus sink)."""

    def __init__(self, node: Node, topics: Collection[str]) -> None:
        self.topics = set(topics)
        self._publishers = {topic: node.create_publisher(message_class(BY_TOPIC[topic].msgtype), topic,
                                                         qos_for(topic))
                            for topic in self.topics}
        self._lock = threading.Lock()
        self._sent: dict[str, int] = dict.fromkeys(self.topics, 0)

    def write(self, topic: str, message: Mapping[str, Any], log_time_ns: int) -> None:
        publisher = self._publishers.get(topic)
        if publisher is None:
            return
        msg = message_class(BY_TOPIC[topic].msgtype)()
        set_message_fields(msg, dict(message))
        publisher.publish(msg)
        if topic in BURST_TOPICS:
            with self._lock:
                self._sent[topic] += 1
                pace = self._sent[topic] % ACK_EVERY == 0
            if pace:  # a burst: let the subscribers catch up (at once when there are none)
                publisher.wait_for_all_acked(Duration(seconds=ACK_WAIT_S))

    def close(self) -> None:
        pass


class GraphTap:
    """Every channel of the graph, subscribed serialized (raw CDR, as it came off the wire), once
    for the node's life: a `GraphRecording` attaches on a task's entry and detaches on its exit.
    The subscriptions are never destroyed while the node spins: destroying them from the task's
    thread raced the executor's wait set (rclpy's InvalidHandle killed a planner at load 30).
    Made on the first recorded task, so a node that never records subscribes to nothing."""

    def __init__(self, node: Node, *, callback_group: CallbackGroup | None = None) -> None:
        self._node = node
        self._lock = threading.Lock()
        self._recording: GraphRecording | None = None
        self._matched: dict[str, int] = {c.topic: 0 for c in CHANNELS}
        self._subscriptions: list[Subscription] = [
            node.create_subscription(message_class(c.msgtype), c.topic, self._writer(c.topic, c.msgtype),
                                     qos_for(c.topic),
                                     raw=True, callback_group=callback_group,
                                     event_callbacks=SubscriptionEventCallbacks(matched=self._on_matched(c.topic)))
            for c in CHANNELS]

    def _on_matched(self, topic: str) -> Any:
        def matched(info: Any) -> None:
            self._matched[topic] = int(info.current_count)
        return matched

    def wait_matched(self, timeout_s: float = 10.0) -> list[str]:
        """Wait until every publisher the graph has on the channels is matched with the tap
        (so the run's first messages are not lost to discovery); returns the topics still
        unmatched at the deadline."""
        deadline = time.monotonic() + timeout_s
        while True:
            missing = [topic for topic, count in self._matched.items()
                       if count < self._node.count_publishers(topic)]
            if not missing or time.monotonic() >= deadline:
                return missing
            time.sleep(0.05)

    def attach(self, recording: GraphRecording) -> None:
        with self._lock:
            if self._recording is not None:
                raise TaskLearningError("an episode is already being recorded from this node")
            self._recording = recording

    def detach(self, recording: GraphRecording) -> None:
        with self._lock:
            if self._recording is recording:
                self._recording = None

    def _writer(self, topic: str, msgtype: str) -> Any:
        def write(raw: bytes) -> None:
            with self._lock:  # one message at a time, and none after its recording detached
                if self._recording is not None:
                    self._recording.write(topic, msgtype, raw)
        return write


class GraphRecording:
    """One episode from a GraphTap into an MCAP file (the core's McapSink; metadata and the
    knowledge base's snapshot as an in-process episode has them). `close()` detaches and finishes
    the file (OutputError when it could not be written)."""

    def __init__(self, tap: GraphTap, path: str | Path, metadata: Mapping[str, str], *,
                 kb_start: bytes | None = None, log: Callable[[str], object] | None = None) -> None:
        self._tap = tap
        self._metadata = dict(metadata)
        self._log = log
        self.sink = McapSink(path, self._metadata, kb_start=kb_start)
        self._failure: Exception | None = None
        self._last_message = time.monotonic()
        tap.attach(self)

    def write(self, topic: str, msgtype: str, raw: bytes) -> None:
        """One message as it came (called by the tap, under its lock)."""
        if self._failure is not None:
            return
        self._last_message = time.monotonic()
        try:
            self.sink.write_raw(topic, msgtype, raw, time.time_ns())
        except Exception as exc:  # noqa: BLE001 - a full disk: the episode is lost, the run goes on
            self._failure = exc
            if self._log is not None:
                self._log(f"episode recording stopped: {exc}")
            return
        if topic == WORLD_STATE and "backend" not in self._metadata:
            from rclpy.serialization import deserialize_message

            state = deserialize_message(raw, message_class(msgtype))
            self._metadata["backend"] = state.backend or "symbolic"

    def close(self, settle_s: float = 0.5, limit_s: float = 5.0) -> None:
        """Wait until nothing arrived for `settle_s` (messages still on their way from the nodes,
        at most `limit_s`), then detach and finish the file."""
        deadline = time.monotonic() + limit_s
        while time.monotonic() < deadline and time.monotonic() - self._last_message < settle_s:
            time.sleep(0.05)
        self._tap.detach(self)
        if self._failure is not None:
            self.sink.discard()
            raise self._failure
        self.sink.add_metadata(self._metadata)
        self.sink.close()


class TaskEpisode:
    """One PerformTask as the graph sees it, a context manager around the task's run: `bus`
    carries the planner's own messages (actions and outcomes, BCR trees, learned goals,
    knowledge-base changes) to their topics, and when `path` is given a GraphRecording writes every
    channel of the graph into that MCAP file from entry to exit (a file that cannot be made
    refuses the task on entry: it does not run unrecorded). After exit `summary` says what became
    of the recording, for the task's result ("" when none was asked for)."""

    def __init__(self, node: Node, sink: RosSink, path: Path | None, metadata: Mapping[str, str], *,
                 db_path: str, tap: Callable[[], GraphTap]) -> None:
        """`tap`: the node's GraphTap (made on the first call), used only when `path` is given."""
        self._node = node
        self._path = path
        self._metadata = dict(metadata)
        self._db_path = db_path
        self._tap = tap
        self._recorder: GraphRecording | None = None
        self.bus = EpisodeBus([sink])
        self.summary = ""

    def __enter__(self) -> TaskEpisode:
        if self._path is not None:
            tap = self._tap()
            self._recorder = GraphRecording(tap, self._path, self._metadata, kb_start=snapshot_kb(self._db_path),
                                            log=self._node.get_logger().error)
            unmatched = tap.wait_matched()  # the nodes' publishers, before the task's first message
            if unmatched:
                self._node.get_logger().warning(f"episode: publishers on {', '.join(unmatched)} not matched yet; "
                                                "their first messages may be missing from the episode")
        return self

    def observe(self, learner: TaskLearner) -> None:
        """Publish what a TaskLearner writes, decides and learns (its world is observed by whoever
        made it: `ObservedWorld` on this `bus`)."""
        learner.kb.on_change = kb_observer(self.bus)
        learner.executor.on_decision = BcrTreePublisher(self.bus)
        learner.on_report = lambda report: self.bus.publish(LEARNED_GOAL, object_outcome(report))

    def __exit__(self, *exc_info: Any) -> None:
        recorder, self._recorder = self._recorder, None
        if recorder is None:
            return
        try:
            recorder.close()
        except TaskLearningError as exc:
            self._node.get_logger().error(f"episode not recorded: {exc}")
            self.summary = f"episode not recorded: {printable(str(exc))}"
            return
        self._node.get_logger().info(f"episode recorded: {recorder.sink.path}")
        self.summary = f"episode {recorder.sink.path}"
