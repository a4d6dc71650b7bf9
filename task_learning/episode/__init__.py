"""Episodes: what one run saw, thought, asked and did, in one MCAP file that replays
deterministically, and the live view of the same messages (docs/episodes.md).

- `messages`: the channels (topic, ROS 2 type) and builders of their message dicts;
- `schema`: the ROS 2 message definitions (this project's msg/ and rosbags' standard ones);
- `bus`: hands a run's messages to sinks; `observe`: what publishes them from an in-process run;
- `recorder`: the MCAP sink; `reader`: reading an episode back; `replay`: running it again;
- `live`: the live view (Foxglove's WebSocket protocol, through foxglove-sdk).
"""
from task_learning import lazy_exports

_EXPORTS = {
    "EpisodeBus": "task_learning.episode.bus",
    "MemorySink": "task_learning.episode.bus",
    "LiveView": "task_learning.episode.live",
    "BY_TOPIC": "task_learning.episode.messages",
    "CHANNELS": "task_learning.episode.messages",
    "LEARNED_GOAL": "task_learning.episode.messages",
    "LLM_CALLS": "task_learning.episode.messages",
    "STARS_TREE": "task_learning.episode.messages",
    "WORLD_STATE": "task_learning.episode.messages",
    "object_outcome": "task_learning.episode.messages",
    "BcrTreePublisher": "task_learning.episode.observe",
    "HIGHLIGHTED": "task_learning.episode.observe",
    "LLMCallPublisher": "task_learning.episode.observe",
    "ObservedOperator": "task_learning.episode.observe",
    "ObservedWorld": "task_learning.episode.observe",
    "StarsTreePublisher": "task_learning.episode.observe",
    "kb_observer": "task_learning.episode.observe",
    "Episode": "task_learning.episode.reader",
    "EpisodeError": "task_learning.episode.reader",
    "open_episode": "task_learning.episode.reader",
    "McapSink": "task_learning.episode.recorder",
    "recording_sink": "task_learning.episode.recorder",
    "run_metadata": "task_learning.episode.recorder",
    "snapshot_kb": "task_learning.episode.recorder",
}

__all__, __getattr__ = lazy_exports(__name__, _EXPORTS)
