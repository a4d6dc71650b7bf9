"""Episodes: what one run saw, thought, asked and did, in one MCAP file that replays
deterministically, and the live view of the same messages (docs/episodes.md).

- `messages`: the channels (topic, ROS 2 type) and builders of their message dicts;
- `schema`: the ROS 2 message definitions (this project's msg/ and rosbags' standard ones);
- `bus`: hands a run's messages to sinks; `observe`: what publishes them from an in-process run;
- `recorder`: the MCAP sink; `reader`: reading an episode back; `replay`: running it again;
- `live`: the live view (Foxglove's WebSocket protocol, through foxglove-sdk).
"""
from __future__ import annotations

import datetime
from typing import Any

from task_learning.episode.recorder import McapSink, snapshot_kb


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
