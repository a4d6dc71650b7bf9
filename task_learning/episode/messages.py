"""The episode's channels and their messages, as plain dicts shaped like the ROS 2 messages.

One table (`CHANNELS`) names every topic an episode holds and the live view shows, with its ROS 2
type; the builders below turn the core's data into dicts with that type's field names. The same
dict becomes CDR in an MCAP file (`episode.recorder`), JSON on the live view's WebSocket
(`episode.live`), and a message published by a node: one mapping, three transports.

Topic names are the graph's (`/world_state`, `/bcr_tree`, ...), so an episode recorded
in-process and one recorded from the ROS graph hold the same topics.
"""
from __future__ import annotations

import base64
import json
import math
import time
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from task_learning.types import (
    ActionCall,
    ActionOutcome,
    ConfirmationAnswer,
    ConfirmationRequest,
    GoalCandidate,
    GoalLiteral,
    Mismatch,
)

PKG = "task_learning_interfaces/msg"


@dataclass(frozen=True)
class Channel:
    topic: str
    msgtype: str  # ROS 2 type, "pkg/msg/Type"
    description: str


WORLD_STATE = "/world_state"
CAMERA = "/camera/color/image_raw"  # perception's colour camera topic (nodes/plumbing/camera_topics.py)
STARS_TREE = "/stars_tree"
BCR_TREE = "/bcr_tree"
QUESTION = "/oversight/question"
ANSWER = "/oversight/answer"
ACTION = "/action"
ACTION_OUTCOME = "/action_outcome"
LEARNED_GOAL = "/learned_goal"
LLM_CALLS = "/llm/calls"
KB_CHANGES = "/kb/changes"
DIAGNOSTICS = "/diagnostics"

CHANNELS: tuple[Channel, ...] = (
    Channel(WORLD_STATE, f"{PKG}/WorldState", "the world: objects, where they are, open or closed"),
    Channel(CAMERA, "sensor_msgs/msg/Image", "the robot's camera (backends with images)"),
    Channel(STARS_TREE, f"{PKG}/CandidateTree", "the STARS candidate tree of the current object, "
            "after each level and stage (probability, level and analysis verdict in `detail`)"),
    Channel(BCR_TREE, f"{PKG}/CandidateTree", "the BCR candidate tree at each decision"),
    Channel(QUESTION, f"{PKG}/ConfirmationRequest", "a question put to the operator"),
    Channel(ANSWER, f"{PKG}/ConfirmationAnswer", "the operator's answer"),
    Channel(ACTION, f"{PKG}/ActionCall", "a primitive action sent to the world"),
    Channel(ACTION_OUTCOME, f"{PKG}/ActionOutcome", "what it did"),
    Channel(LEARNED_GOAL, f"{PKG}/TaskObjectOutcome", "per object: the goal, who confirmed it, reached?"),
    Channel(LLM_CALLS, "std_msgs/msg/String", "every LLM request and response (a cassette entry, JSON)"),
    Channel(KB_CHANGES, "std_msgs/msg/String", "knowledge-base writes with their provenance (JSON)"),
    Channel(DIAGNOSTICS, "diagnostic_msgs/msg/DiagnosticArray", "node health (the live view)"),
)
BY_TOPIC = {c.topic: c for c in CHANNELS}


# --------------------------------------------------------------------------------------- scalars
def stamp(seconds: float | None = None) -> dict[str, int]:
    """builtin_interfaces/Time of `seconds` since the epoch (now by default)."""
    value = time.time() if seconds is None else float(seconds)
    sec = math.floor(value)
    nanosec = min(999_999_999, int(round((value - sec) * 1e9)))
    return {"sec": int(sec), "nanosec": nanosec}


def header(seconds: float | None = None, frame_id: str = "") -> dict[str, Any]:
    return {"stamp": stamp(seconds), "frame_id": frame_id}


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def string(payload: Any) -> dict[str, Any]:
    """std_msgs/String carrying JSON."""
    return {"data": _json(payload)}


# ----------------------------------------------------------------------------------------- world
def _snake_to_camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def world_state(metadata: Mapping[str, Any], *, backend: str = "", scene: str = "") -> dict[str, Any]:
    """AI2-THOR-shaped metadata -> WorldState. Every ObjectState field whose camelCase key the
    object has is filled (the message definition drives it); positions go in the pose, rotations
    are left out (the viewer and replay use where things are, not how they are turned)."""
    from task_learning.episode.schema import fields

    names = [f for f in fields(f"{PKG}/ObjectState") if f not in ("pose", "extra", "object_id", "object_type")]
    objects = []
    for record in metadata.get("objects") or ():
        obj: dict[str, Any] = {"object_id": str(record.get("objectId", "")),
                               "object_type": str(record.get("objectType", ""))}
        for name in names:
            value = record.get(_snake_to_camel(name))
            if value is not None:
                obj[name] = list(value) if isinstance(value, (list, tuple)) else value
        position = record.get("position") or {}
        obj["pose"] = {"position": {k: float(position.get(k, 0.0)) for k in ("x", "y", "z")},
                       "orientation": {"x": 0.0, "y": 0.0, "z": 0.0, "w": 1.0}}
        objects.append(obj)
    agent = metadata.get("agent") or {}
    return {"header": header(frame_id="world"), "scene": scene or str(metadata.get("sceneName") or ""),
            "backend": backend, "robot_location": str(agent.get("location") or ""),
            "held_object_ids": [str(o.get("objectId")) for o in metadata.get("inventoryObjects") or ()],
            "objects": objects, "status": str(metadata.get("perceptionStatus") or "")}


def image(frame: Any, *, frame_id: str = "camera") -> dict[str, Any]:
    """An RGB uint8 array (height x width x 3) -> sensor_msgs/Image rgb8."""
    height, width = int(frame.shape[0]), int(frame.shape[1])
    return {"header": header(frame_id=frame_id), "height": height, "width": width, "encoding": "rgb8",
            "is_bigendian": 0, "step": width * 3, "data": bytes(frame.astype("uint8").tobytes())}


# ------------------------------------------------------------------------------------ candidates
def literal(lit: GoalLiteral) -> dict[str, Any]:
    return {"predicate": lit.predicate, "args": list(lit.args), "truth": lit.truth.value}


def mismatch(m: Mismatch) -> dict[str, Any]:
    return {"kind": m.kind.value, "detail": m.detail, "feedback": m.feedback, "subject": m.subject}


def candidate(c: GoalCandidate) -> dict[str, Any]:
    return {"id": int(c.candidate_id), "text": c.text, "score": float(c.score), "source": c.source.value,
            "parent_id": int(c.parent_id), "analyzed": c.viable is not None, "viable": bool(c.viable),
            "mismatches": [mismatch(m) for m in c.mismatches], "literals": [literal(lit) for lit in c.literals],
            "repair_feedback": c.repair_feedback}


def verdict(c: GoalCandidate) -> str:
    """A candidate's analysis verdict in words: viable, the first mismatch, or not analysed yet."""
    if c.viable is None:
        return "not analysed"
    if c.viable:
        return "viable"
    return f"{c.mismatches[0].kind.value}: {c.mismatches[0].detail}" if c.mismatches else "not viable"


def stars_tree(task: str, object_id: str, stage: str, candidates: Sequence[GoalCandidate],
               levels: Mapping[int, int], chosen: GoalCandidate | None = None) -> dict[str, Any]:
    """The STARS candidate tree of one object as a CandidateTree (kind "stars"): one node per
    distinct response, under the candidate it came from; `detail` holds its probability (the
    mean token probability), the tree level it was found at and the analysis verdict; the
    status says which one was chosen. `goal` names the object and the stage just finished."""
    nodes: list[dict[str, Any]] = []
    for c in candidates:
        status = "selected" if chosen is not None and c.candidate_id == chosen.candidate_id else (
            "open" if c.viable is not False else "pruned")
        nodes.append({"id": int(c.candidate_id), "parent_id": int(c.parent_id), "label": c.text,
                      "kind": "candidate", "status": status,
                      "detail": f"p={c.score:.3f} level={levels.get(c.candidate_id, 0)} "
                                f"{c.source.value}; {verdict(c)}"})
    edges = [{"parent_id": n["parent_id"], "child_id": n["id"], "label": ""} for n in nodes if n["parent_id"] >= 0]
    return {"header": header(), "kind": "stars", "goal": f"{task} | {object_id} | {stage}",
            "nodes": nodes, "edges": edges, "dot": ""}


def bcr_tree(nodes: Iterable[Mapping[str, Any]], edges: Iterable[Mapping[str, Any]], goal: str) -> dict[str, Any]:
    """BCR's candidate tree (bcr.tree.CandidateTree.to_records) as a CandidateTree (kind "bcr")."""
    return {"header": header(), "kind": "bcr", "goal": goal, "nodes": [dict(n) for n in nodes],
            "edges": [dict(e) for e in edges], "dot": ""}


# ------------------------------------------------------------------------------------- oversight
def question(request: ConfirmationRequest) -> dict[str, Any]:
    return {"request_id": request.request_id, "question": request.question, "object_id": request.object_id,
            "object_description": request.object_description,
            "candidate": [candidate(request.candidate)] if request.candidate is not None else [],
            "candidates": [candidate(c) for c in request.candidates],
            "wants_description": bool(request.wants_description), "timeout_s": float(request.timeout_s),
            "deadline": float(request.deadline)}


def answer(reply: ConfirmationAnswer) -> dict[str, Any]:
    return {"request_id": reply.request_id, "answer": reply.answer.value, "description": reply.description,
            "answered_by": reply.operator, "stamp": stamp(reply.stamp or None)}


# --------------------------------------------------------------------------------------- actions
def action_call(call: ActionCall) -> dict[str, Any]:
    return {"action": call.action, "object_id": call.object_id,
            "params": [{"key": str(k), "value": _json(v)} for k, v in call.params]}


def action_outcome(outcome: ActionOutcome) -> dict[str, Any]:
    return {"call": action_call(outcome.call), "success": bool(outcome.success),
            "error_message": outcome.error_message, "blocking_condition": outcome.blocking_condition}


def object_outcome(report: Any) -> dict[str, Any]:
    """A planning.loop.ObjectReport -> TaskObjectOutcome (what the planner's result carries)."""
    goal = {"id": 0, "text": report.goal, "score": 1.0, "source": "", "parent_id": -1, "analyzed": True,
            "viable": bool(report.literals), "mismatches": [],
            "literals": [literal(lit) for lit in report.literals], "repair_feedback": ""}
    return {"object_id": report.object_id, "success": bool(report.reached),
            "message": report.message or report.context, "goal": goal, "actions": [],
            "outcome": report.outcome, "goal_source": report.goal_source, "confirmed_by": report.confirmed_by}


def base64_bytes(message: Any) -> Any:
    """A message dict with every bytes value as base64 text (JSON has no bytes)."""
    if isinstance(message, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(message)).decode("ascii")
    if isinstance(message, Mapping):
        return {k: base64_bytes(v) for k, v in message.items()}
    if isinstance(message, (list, tuple)):
        return [base64_bytes(v) for v in message]
    return message
