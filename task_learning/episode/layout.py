"""The Foxglove layout shipped in config/foxglove/task_learning.json, built with foxglove-sdk's
layout types so it stays a layout Foxglove imports:

    python -m task_learning.episode.layout > config/foxglove/task_learning.json

(a test keeps the file in step). Left: the camera with the current object boxed, and the world
(objects, where they are, open or closed); middle: the STARS candidate tree of the current object
and BCR's tree with the chosen action; right: the question waiting and its answer, the goals
learned, and /diagnostics. It fits the live view (`run --live-view`, live_view_node) and an
episode file opened in Foxglove alike: the topics are the same.
"""
from __future__ import annotations

from typing import Any, Literal

from task_learning.episode import messages as msgs
from task_learning.episode.observe import HIGHLIGHTED


def build_layout() -> str:
    import foxglove.layouts as fl

    def split(direction: Literal["row", "column"], *items: tuple[float, Any]) -> Any:
        return fl.SplitContainer(direction=direction, items=[fl.SplitItem(proportion=p, content=c) for p, c in items])

    def raw(topic_path: str, title: str) -> Any:
        return fl.RawMessagesPanel(title=title, config=fl.RawMessagesConfig(topic_path=topic_path, expansion="all"))

    def table(topic_path: str, title: str) -> Any:
        return fl.TablePanel(title=title, config=fl.TableConfig(topic_path=topic_path))

    camera = fl.ImagePanel(title="camera (current object boxed)", config=fl.ImageConfig(
        image_mode=fl.ImageModeConfig(image_topic=HIGHLIGHTED)))
    layout = fl.Layout(content=split(
        "row",
        (1.0, split("column", (1.0, camera), (1.2, table(f"{msgs.WORLD_STATE}.objects", "world: objects")))),
        (1.2, split("column", (1.3, raw(f"{msgs.STARS_TREE}.nodes", "STARS candidate tree (p, level, verdict)")),
                    (1.0, raw(msgs.BCR_TREE, "BCR candidate tree (selected = chosen action)")))),
        (1.0, split("column", (0.8, raw(msgs.QUESTION, "question to the operator")),
                    (0.4, raw(msgs.ANSWER, "answer")),
                    (1.0, table(msgs.LEARNED_GOAL, "learned goals")),
                    (0.8, fl.DiagnosticsSummaryPanel(title="diagnostics", config=fl.DiagnosticsSummaryConfig(
                        topic_to_render=msgs.DIAGNOSTICS, sort_by_level=True))))),
    ))
    return layout.to_json()


if __name__ == "__main__":
    import json

    print(json.dumps(json.loads(build_layout()), indent=2))
