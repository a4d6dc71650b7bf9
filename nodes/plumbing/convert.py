"""Conversions between the core's plain data (task_learning.types, AI2-THOR metadata dicts) and the
ROS messages of task_learning_interfaces, both directions.

Nodes stay thin: they receive a message, convert it with a `*_from_msg`, call the core, and send
back a `*_to_msg`. Every message has exactly one mapping here, so a field added to a message is
added in one place.

Conventions:
- Free-form values (ActionCall params, unknown AI2-THOR keys) travel as KeyValue with a JSON value.
- AI2-THOR's Euler rotation (degrees, applied Z, then X, then Y as Unity does) becomes the
  quaternion of a geometry_msgs/Pose and back; angles come back in [0, 360).
- Timestamps: float seconds since the epoch in the core, builtin_interfaces/Time in messages.
- GoalCandidate.viable None (not analysed) is `analyzed = false` in the message.
"""
from __future__ import annotations

import json
import math
import time
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from builtin_interfaces.msg import Time
from geometry_msgs.msg import Point, Pose, PoseStamped, Quaternion

from task_learning.types import (
    ActionCall,
    ActionOutcome,
    AnswerKind,
    CandidateSource,
    ConfirmationAnswer,
    ConfirmationRequest,
    GoalCandidate,
    GoalLiteral,
    LLMUsage,
    Mismatch,
    MismatchKind,
    PromptTypeUsage,
    Truth,
    WorldObject,
    WorldState,
)
from task_learning_interfaces import msg as m

if TYPE_CHECKING:
    from task_learning.planning.loop import ObjectReport
    from task_learning.planning.service import TaskOutcome

# ---------------------------------------------------------------------------------------------
# Scalars: time, JSON values, rotations


def time_to_msg(stamp: float) -> Time:
    sec = math.floor(stamp)
    nanosec = int(round((stamp - sec) * 1e9))
    if nanosec >= 1_000_000_000:
        sec, nanosec = sec + 1, nanosec - 1_000_000_000
    return Time(sec=int(sec), nanosec=nanosec)


def time_from_msg(msg: Time) -> float:
    return float(msg.sec + msg.nanosec * 1e-9)


def json_value(value: Any) -> str:
    """Any value as JSON text; values JSON cannot express are sent as their str()."""
    return json.dumps(value, default=str, separators=(",", ":"))


def parse_json_value(text: str) -> Any:
    """JSON text back to a value; text that is not JSON (a hand-written param) stays a string."""
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return text


def strict_json_value(text: str, key: str) -> Any:
    """JSON text to a value, for requests from outside: not JSON (or NaN/Infinity) is a
    ValueError naming the key, never a string taken at face value."""
    def no_constant(name: str) -> Any:
        raise ValueError(f"{name} is not allowed")

    try:
        return json.loads(text, parse_constant=no_constant)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"parameter {key}: value is not JSON ({exc})") from None


def key_value_to_msg(key: str, value: Any) -> m.KeyValue:
    return m.KeyValue(key=str(key), value=json_value(value))


def key_value_from_msg(msg: m.KeyValue) -> tuple[str, Any]:
    return msg.key, parse_json_value(msg.value)


def euler_deg_to_quaternion(x: float, y: float, z: float) -> tuple[float, float, float, float]:
    """AI2-THOR/Unity Euler angles (degrees, rotation Z then X then Y) -> (qx, qy, qz, qw)."""
    hx, hy, hz = (math.radians(a) / 2.0 for a in (x, y, z))
    cx, sx, cy, sy, cz, sz = math.cos(hx), math.sin(hx), math.cos(hy), math.sin(hy), math.cos(hz), math.sin(hz)
    # q = qy * qx * qz
    qw = cy * cx * cz + sy * sx * sz
    qx = cy * sx * cz + sy * cx * sz
    qy = sy * cx * cz - cy * sx * sz
    qz = cy * cx * sz - sy * sx * cz
    return qx, qy, qz, qw


def quaternion_to_euler_deg(qx: float, qy: float, qz: float, qw: float) -> tuple[float, float, float]:
    """Inverse of euler_deg_to_quaternion; each angle in [0, 360)."""
    norm = math.sqrt(qx * qx + qy * qy + qz * qz + qw * qw) or 1.0
    qx, qy, qz, qw = qx / norm, qy / norm, qz / norm, qw / norm
    r02 = 2.0 * (qx * qz + qw * qy)
    r12 = 2.0 * (qy * qz - qw * qx)
    r22 = 1.0 - 2.0 * (qx * qx + qy * qy)
    r10 = 2.0 * (qx * qy + qw * qz)
    r11 = 1.0 - 2.0 * (qx * qx + qz * qz)
    ax = math.asin(max(-1.0, min(1.0, -r12)))
    ay = math.atan2(r02, r22)
    az = math.atan2(r10, r11)
    return tuple(_wrap_degrees(math.degrees(a)) for a in (ax, ay, az))  # type: ignore[return-value]


def _wrap_degrees(angle: float) -> float:
    wrapped = angle % 360.0
    return 0.0 if abs(wrapped - 360.0) < 1e-9 else wrapped


def _vec3(value: Any) -> tuple[float, float, float]:
    if isinstance(value, Mapping):
        return (float(value.get("x") or 0.0), float(value.get("y") or 0.0), float(value.get("z") or 0.0))
    if isinstance(value, Sequence) and len(value) == 3:
        return (float(value[0]), float(value[1]), float(value[2]))
    return (0.0, 0.0, 0.0)


def pose_to_msg(position: Any, rotation: Any) -> Pose:
    """AI2-THOR position/rotation ({x, y, z} dicts or 3-tuples) -> geometry_msgs/Pose."""
    x, y, z = _vec3(position)
    rx, ry, rz = _vec3(rotation)
    if rx or ry or rz:
        qx, qy, qz, qw = euler_deg_to_quaternion(rx, ry, rz)
        orientation = Quaternion(check_fields=False, x=qx, y=qy, z=qz, w=qw)
    else:
        orientation = Quaternion(check_fields=False)
    return Pose(check_fields=False, position=Point(check_fields=False, x=x, y=y, z=z), orientation=orientation)


def pose_from_msg(pose: Pose) -> tuple[tuple[float, float, float], tuple[float, float, float]]:
    """geometry_msgs/Pose -> (position, Euler rotation in degrees) as 3-tuples."""
    p, o = pose.position, pose.orientation
    return (p.x, p.y, p.z), quaternion_to_euler_deg(o.x, o.y, o.z, o.w)


def pose_stamped_to_msg(record: Mapping[str, Any] | None) -> PoseStamped:
    """A `poseMap` record (belief.pose_record: frameId, stamp, position, orientation) ->
    PoseStamped; an empty one (frame_id "") when the backend gave none."""
    msg = PoseStamped()
    if not record:
        return msg
    msg.header.frame_id = str(record.get("frameId") or "")
    msg.header.stamp = time_to_msg(float(record.get("stamp") or 0.0))
    x, y, z = (float(v) for v in record.get("position") or (0.0, 0.0, 0.0))
    qx, qy, qz, qw = (float(v) for v in record.get("orientation") or (0.0, 0.0, 0.0, 1.0))
    msg.pose = Pose(position=Point(x=x, y=y, z=z), orientation=Quaternion(x=qx, y=qy, z=qz, w=qw))
    return msg


def pose_stamped_from_msg(msg: PoseStamped) -> dict[str, Any] | None:
    """PoseStamped -> a `poseMap` record; None for an empty one (frame_id "")."""
    if not msg.header.frame_id:
        return None
    p, q = msg.pose.position, msg.pose.orientation
    return {"frameId": msg.header.frame_id, "stamp": time_from_msg(msg.header.stamp),
            "position": [p.x, p.y, p.z], "orientation": [q.x, q.y, q.z, q.w]}


def _vec_dict(v: tuple[float, float, float]) -> dict[str, float]:
    return {"x": v[0], "y": v[1], "z": v[2]}


# ---------------------------------------------------------------------------------------------
# World: AI2-THOR object dicts and metadata <-> ObjectState / WorldState

# AI2-THOR boolean keys and the ObjectState fields that carry them.
BOOL_FIELDS: tuple[tuple[str, str], ...] = (
    ("isInteractable", "is_interactable"),
    ("isMoving", "is_moving"),
    ("pickupable", "pickupable"),
    ("isPickedUp", "is_picked_up"),
    ("moveable", "moveable"),
    ("receptacle", "receptacle"),
    ("openable", "openable"),
    ("isOpen", "is_open"),
    ("toggleable", "toggleable"),
    ("isToggled", "is_toggled"),
    ("sliceable", "sliceable"),
    ("isSliced", "is_sliced"),
    ("breakable", "breakable"),
    ("isBroken", "is_broken"),
    ("dirtyable", "dirtyable"),
    ("isDirty", "is_dirty"),
    ("cookable", "cookable"),
    ("isCooked", "is_cooked"),
    ("canFillWithLiquid", "can_fill_with_liquid"),
    ("isFilledWithLiquid", "is_filled_with_liquid"),
    ("canBeUsedUp", "can_be_used_up"),
    ("isUsedUp", "is_used_up"),
    ("isHeatSource", "is_heat_source"),
    ("isColdSource", "is_cold_source"),
)
# Keys with a typed field of their own (handled explicitly below).
TYPED_KEYS = frozenset(
    [k for k, _ in BOOL_FIELDS]
    + ["objectId", "objectType", "name", "assetId", "parentReceptacles", "receptacleObjectIds",
       "position", "rotation", "distance", "visible", "openness", "fillLiquid", "temperature",
       "mass", "salientMaterials", "poseMap"]
)
# Keys of AI2-THOR's schema without a typed field: sent in `extra` unless null, restored as null.
NULLABLE_SCHEMA_KEYS = ("controlledObjects", "axisAlignedBoundingBox", "objectOrientedBoundingBox")


def object_state_to_msg(record: Mapping[str, Any]) -> m.ObjectState:
    """One AI2-THOR object dict -> ObjectState. Missing keys take AI2-THOR's resting defaults;
    null lists become empty. Raises KeyError when objectId or objectType is missing.

    This is perception's hot path (every object, every frame): every value is cast to its field's
    type here, so the message is built in one constructor call with rosidl's per-field type
    checks off (`check_fields=False`)."""
    get = record.get
    visible = bool(get("visible", True))
    fields: dict[str, Any] = {field: bool(get(key)) for key, field in BOOL_FIELDS}
    if "isInteractable" not in record:
        fields["is_interactable"] = visible
    extra = [m.KeyValue(check_fields=False, key=str(key), value=json_value(value))
             for key, value in record.items()
             if key not in TYPED_KEYS and not (value is None and key in NULLABLE_SCHEMA_KEYS)]
    return m.ObjectState(
        check_fields=False,
        object_id=str(record["objectId"]),
        object_type=str(record["objectType"]),
        name=str(get("name") or ""),
        asset_id=str(get("assetId") or ""),
        parent_receptacles=[str(x) for x in (get("parentReceptacles") or ())],
        receptacle_object_ids=[str(x) for x in (get("receptacleObjectIds") or ())],
        pose=pose_to_msg(get("position"), get("rotation")),
        pose_map=pose_stamped_to_msg(get("poseMap")),
        distance=float(get("distance") or 0.0),
        visible=visible,
        openness=float(get("openness") or 0.0),
        fill_liquid=str(get("fillLiquid") or ""),
        temperature=str(get("temperature") or "RoomTemp"),
        mass=float(get("mass") or 0.0),
        salient_materials=[str(x) for x in (get("salientMaterials") or ())],
        extra=extra,
        **fields,
    )


def object_state_from_msg(msg: m.ObjectState) -> dict[str, Any]:
    """ObjectState -> an AI2-THOR object dict with every key of the 42-key schema (plus extras)."""
    position, rotation = pose_from_msg(msg.pose)
    record: dict[str, Any] = {
        "objectId": msg.object_id,
        "objectType": msg.object_type,
        "name": msg.name,
        "assetId": msg.asset_id,
        "parentReceptacles": list(msg.parent_receptacles),
        "receptacleObjectIds": list(msg.receptacle_object_ids),
        "position": _vec_dict(position),
        "rotation": _vec_dict(rotation),
        "distance": msg.distance,
        "visible": msg.visible,
        "openness": msg.openness,
        "fillLiquid": msg.fill_liquid or None,
        "temperature": msg.temperature,
        "mass": msg.mass,
        "salientMaterials": list(msg.salient_materials),
    }
    for key, field in BOOL_FIELDS:
        record[key] = bool(getattr(msg, field))
    for key in NULLABLE_SCHEMA_KEYS:
        record[key] = None
    pose_map = pose_stamped_from_msg(msg.pose_map)
    if pose_map is not None:
        record["poseMap"] = pose_map
    for kv in msg.extra:
        record[kv.key] = parse_json_value(kv.value)
    return record


def world_state_msg_from_metadata(
    metadata: Mapping[str, Any],
    *,
    stamp: float | None = None,
    frame_id: str = "world",
    backend: str = "",
    scene: str | None = None,
) -> m.WorldState:
    """A backend's event metadata (AI2-THOR shape) -> WorldState message: what perception publishes."""
    msg = m.WorldState()
    msg.header.stamp = time_to_msg(time.time() if stamp is None else stamp)
    msg.header.frame_id = frame_id
    msg.scene = str(scene if scene is not None else metadata.get("sceneName", ""))
    msg.backend = backend
    agent = metadata.get("agent") or {}
    msg.robot_location = str(agent.get("location") or "")
    reach = agent.get("reachM")
    msg.robot_reach_m = float(reach) if isinstance(reach, (int, float)) else -1.0
    msg.robot_pose = pose_to_msg(agent.get("position"), agent.get("rotation"))
    msg.robot_pose_map = pose_stamped_to_msg(agent.get("poseMap"))
    msg.held_object_ids = [str(o["objectId"]) for o in (metadata.get("inventoryObjects") or ())]
    msg.objects = [object_state_to_msg(o) for o in (metadata.get("objects") or ())]
    msg.status = str(metadata.get("perceptionStatus") or "")
    return msg


class WorldStateBuilder:
    """Builds the WorldState of successive metadata, reusing the ObjectState of every object
    whose record did not change since the previous build (after an action typically one or two of
    hundreds), which is what lets perception publish big worlds at camera rates.

    A record is compared by value with a snapshot of its previous version (copied one level deep),
    so a backend may return fresh dicts or update its own dicts between builds."""

    def __init__(self, *, frame_id: str = "world", backend: str = "") -> None:
        self.frame_id = frame_id
        self.backend = backend
        self._cache: dict[str, tuple[dict[str, Any], m.ObjectState]] = {}
        self.rebuilt = 0  # objects converted in the last build (the rest were reused)

    def build(self, metadata: Mapping[str, Any], *, stamp: float | None = None,
              scene: str | None = None) -> m.WorldState:
        msg = world_state_msg_from_metadata({k: v for k, v in metadata.items() if k != "objects"},
                                            stamp=stamp, frame_id=self.frame_id, backend=self.backend,
                                            scene=scene)
        cache: dict[str, tuple[dict[str, Any], m.ObjectState]] = {}
        objects = []
        rebuilt = 0
        for record in metadata.get("objects") or ():
            object_id = record["objectId"]
            entry = self._cache.get(object_id)
            if entry is None or entry[0] != record:
                entry = ({k: v.copy() if isinstance(v, (dict, list)) else v for k, v in record.items()},
                         object_state_to_msg(record))
                rebuilt += 1
            cache[object_id] = entry
            objects.append(entry[1])
        msg.objects = objects
        self._cache = cache
        self.rebuilt = rebuilt
        return msg


def metadata_from_world_state_msg(msg: m.WorldState) -> dict[str, Any]:
    """WorldState message -> AI2-THOR-shaped metadata (what WorldBackend.metadata returns), so
    core code written against metadata (resolve_object, completion, grounding) runs in a node."""
    objects = [object_state_from_msg(o) for o in msg.objects]
    types = {o["objectId"]: o["objectType"] for o in objects}
    position, rotation = pose_from_msg(msg.robot_pose)
    return {
        "sceneName": msg.scene,
        "objects": objects,
        "agent": {"position": _vec_dict(position), "rotation": _vec_dict(rotation),
                  "location": msg.robot_location,
                  **({"reachM": msg.robot_reach_m} if msg.robot_reach_m >= 0 else {}),
                  **({"poseMap": pose_map} if (pose_map := pose_stamped_from_msg(msg.robot_pose_map)) else {})},
        "inventoryObjects": [{"objectId": i, "objectType": types.get(i, i.split("|", 1)[0])}
                             for i in msg.held_object_ids],
        "perceptionStatus": msg.status,
    }


def world_object_to_msg(obj: WorldObject) -> m.ObjectState:
    """WorldObject -> ObjectState: its AI2-THOR properties, with the typed fields taking precedence."""
    record = dict(obj.properties)
    record.update({
        "objectId": obj.object_id,
        "objectType": obj.object_type,
        "name": obj.name,
        "parentReceptacles": list(obj.parent_receptacles),
        "receptacleObjectIds": list(obj.receptacle_object_ids),
        "position": _vec_dict(obj.position),
        "rotation": _vec_dict(obj.rotation),
        "distance": obj.distance,
        "visible": obj.visible,
    })
    return object_state_to_msg(record)


def world_object_from_msg(msg: m.ObjectState) -> WorldObject:
    from task_learning.world.state import object_from_metadata

    return object_from_metadata(object_state_from_msg(msg))


def world_state_to_msg(state: WorldState, *, frame_id: str = "world", backend: str = "") -> m.WorldState:
    msg = m.WorldState()
    msg.header.stamp = time_to_msg(state.stamp)
    msg.header.frame_id = frame_id
    msg.scene = state.scene
    msg.backend = backend
    msg.robot_location = state.robot_location
    msg.robot_reach_m = -1.0  # AI2-THOR's
    msg.robot_pose = pose_to_msg(state.robot_position, state.robot_rotation)
    msg.held_object_ids = list(state.held_object_ids)
    msg.objects = [world_object_to_msg(o) for o in state.objects]
    return msg


def world_state_from_msg(msg: m.WorldState) -> WorldState:
    position, rotation = pose_from_msg(msg.robot_pose)
    return WorldState(
        scene=msg.scene,
        objects=[world_object_from_msg(o) for o in msg.objects],
        robot_location=msg.robot_location,
        robot_position=position,
        robot_rotation=rotation,
        held_object_ids=list(msg.held_object_ids),
        stamp=time_from_msg(msg.header.stamp),
    )


# ---------------------------------------------------------------------------------------------
# Goals


def goal_literal_to_msg(literal: GoalLiteral) -> m.GoalLiteral:
    return m.GoalLiteral(predicate=literal.predicate, args=[str(a) for a in literal.args],
                         truth=literal.truth.value)


def goal_literal_from_msg(msg: m.GoalLiteral) -> GoalLiteral:
    """Raises ValueError naming the value when `truth` is not one of the four constants."""
    try:
        truth = Truth(msg.truth or Truth.TRUE.value)
    except ValueError:
        raise ValueError(f"goal literal {msg.predicate}({', '.join(msg.args)}): unknown truth "
                         f"{msg.truth!r} (expected one of {[t.value for t in Truth]})") from None
    return GoalLiteral(msg.predicate, tuple(msg.args), truth)


def mismatch_to_msg(mismatch: Mismatch) -> m.Mismatch:
    return m.Mismatch(kind=mismatch.kind.value, detail=mismatch.detail, feedback=mismatch.feedback,
                      subject=mismatch.subject)


def mismatch_from_msg(msg: m.Mismatch) -> Mismatch:
    try:
        kind = MismatchKind(msg.kind)
    except ValueError:
        raise ValueError(f"mismatch: unknown kind {msg.kind!r} "
                         f"(expected one of {[k.value for k in MismatchKind]})") from None
    return Mismatch(kind, msg.detail, msg.feedback, msg.subject)


def goal_candidate_to_msg(candidate: GoalCandidate) -> m.GoalCandidate:
    return m.GoalCandidate(
        id=int(candidate.candidate_id),
        text=candidate.text,
        score=float(candidate.score),
        source=candidate.source.value,
        parent_id=int(candidate.parent_id),
        analyzed=candidate.viable is not None,
        viable=bool(candidate.viable),
        mismatches=[mismatch_to_msg(x) for x in candidate.mismatches],
        literals=[goal_literal_to_msg(x) for x in candidate.literals],
        repair_feedback=candidate.repair_feedback,
    )


def goal_candidate_from_msg(msg: m.GoalCandidate) -> GoalCandidate:
    try:
        source = CandidateSource(msg.source or CandidateSource.INITIAL.value)
    except ValueError:
        raise ValueError(f"goal candidate {msg.id}: unknown source {msg.source!r} "
                         f"(expected one of {[s.value for s in CandidateSource]})") from None
    return GoalCandidate(
        text=msg.text,
        score=msg.score,
        source=source,
        candidate_id=msg.id,
        parent_id=msg.parent_id,
        viable=msg.viable if msg.analyzed else None,
        mismatches=[mismatch_from_msg(x) for x in msg.mismatches],
        literals=[goal_literal_from_msg(x) for x in msg.literals],
        repair_feedback=msg.repair_feedback,
    )


# ---------------------------------------------------------------------------------------------
# Actions


def action_call_to_msg(call: ActionCall) -> m.ActionCall:
    return m.ActionCall(action=call.action, object_id=call.object_id,
                        params=[key_value_to_msg(k, v) for k, v in call.params])


def action_call_from_msg(msg: m.ActionCall, *, strict: bool = False) -> ActionCall:
    """strict: every parameter value must be JSON (requests that will act on the world)."""
    if strict:
        params = tuple((kv.key, strict_json_value(kv.value, kv.key)) for kv in msg.params)
    else:
        params = tuple(key_value_from_msg(kv) for kv in msg.params)
    return ActionCall(msg.action, msg.object_id, params)


def action_outcome_to_msg(outcome: ActionOutcome) -> m.ActionOutcome:
    return m.ActionOutcome(call=action_call_to_msg(outcome.call), success=bool(outcome.success),
                           error_message=outcome.error_message,
                           blocking_condition=outcome.blocking_condition)


def action_outcome_from_msg(msg: m.ActionOutcome) -> ActionOutcome:
    return ActionOutcome(action_call_from_msg(msg.call), msg.success, msg.error_message,
                         msg.blocking_condition)


# ---------------------------------------------------------------------------------------------
# LLM usage and interaction counts


def llm_usage_to_msg(usage: LLMUsage) -> m.LLMUsage:
    return m.LLMUsage(
        calls=usage.calls,
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
        cache_hits=usage.cache_hits,
        failures=usage.failures,
        requests=usage.requests,
        cached_prompt_tokens=usage.cached_prompt_tokens,
        by_type=[
            m.PromptTypeUsage(prompt_type=kind, calls=u.calls, prompt_tokens=u.prompt_tokens,
                              completion_tokens=u.completion_tokens, cache_hits=u.cache_hits,
                              failures=u.failures, requests=u.requests,
                              cached_prompt_tokens=u.cached_prompt_tokens)
            for kind, u in sorted(usage.by_type.items())
        ],
    )


def llm_usage_from_msg(msg: m.LLMUsage) -> LLMUsage:
    """The totals are derived from by_type in the core, so only by_type is read."""
    return LLMUsage(by_type={
        u.prompt_type: PromptTypeUsage(u.calls, u.prompt_tokens, u.completion_tokens, u.cache_hits,
                                       u.failures, u.requests, u.cached_prompt_tokens)
        for u in msg.by_type
    })


COUNT_FIELDS = ("retrieved", "proposed", "sourced", "instructions", "yes_no", "words")


def elicitation_counts_to_msg(counts: Mapping[str, int] | Any) -> m.ElicitationCounts:
    """Counts as a mapping or any object with the six attributes -> ElicitationCounts; missing = 0."""
    get = counts.get if isinstance(counts, Mapping) else (lambda k, d=0: getattr(counts, k, d))
    return m.ElicitationCounts(**{k: int(get(k, 0) or 0) for k in COUNT_FIELDS})


def elicitation_counts_from_msg(msg: m.ElicitationCounts) -> dict[str, int]:
    return {k: int(getattr(msg, k)) for k in COUNT_FIELDS}


# ---------------------------------------------------------------------------------------------
# Operator confirmation


def confirmation_request_to_msg(request: ConfirmationRequest) -> m.ConfirmationRequest:
    return m.ConfirmationRequest(
        request_id=request.request_id,
        question=request.question,
        object_id=request.object_id,
        object_description=request.object_description,
        candidate=[goal_candidate_to_msg(request.candidate)] if request.candidate is not None else [],
        candidates=[goal_candidate_to_msg(c) for c in request.candidates],
        wants_description=bool(request.wants_description),
        timeout_s=float(request.timeout_s),
        asked_by=request.asked_by,
        deadline=float(request.deadline),
    )


def confirmation_request_from_msg(msg: m.ConfirmationRequest) -> ConfirmationRequest:
    return ConfirmationRequest(
        request_id=msg.request_id,
        question=msg.question,
        object_id=msg.object_id,
        object_description=msg.object_description,
        candidate=goal_candidate_from_msg(msg.candidate[0]) if msg.candidate else None,
        candidates=[goal_candidate_from_msg(c) for c in msg.candidates],
        wants_description=msg.wants_description,
        timeout_s=msg.timeout_s,
        asked_by=msg.asked_by,
        deadline=msg.deadline,
    )


def confirmation_answer_to_msg(answer: ConfirmationAnswer) -> m.ConfirmationAnswer:
    return m.ConfirmationAnswer(request_id=answer.request_id, answer=answer.answer.value,
                                description=answer.description, answered_by=answer.operator,
                                stamp=time_to_msg(answer.stamp), client=answer.client,
                                confirmation_id=answer.confirmation_id)


def confirmation_answer_from_msg(msg: m.ConfirmationAnswer) -> ConfirmationAnswer:
    """Raises ValueError naming the value when `answer` is not yes/no/description/timeout."""
    try:
        kind = AnswerKind(msg.answer.strip().lower())
    except ValueError:
        raise ValueError(f"confirmation {msg.request_id!r}: unknown answer {msg.answer!r} "
                         f"(expected one of {[a.value for a in AnswerKind]})") from None
    return ConfirmationAnswer(msg.request_id, kind, msg.description, msg.answered_by,
                              time_from_msg(msg.stamp), msg.client, msg.confirmation_id)


# ---------------------------------------------------------------------------------------------
# Trees for the operator panel (BCR action trees, STARS candidate trees)

TREE_NODE_KEYS = ("id", "parent_id", "label", "kind", "status", "detail")


def candidate_tree_to_msg(
    nodes: Iterable[Mapping[str, Any]],
    edges: Iterable[Mapping[str, Any]] = (),
    *,
    kind: str = "",
    goal: str = "",
    dot: str = "",
    stamp: float | None = None,
) -> m.CandidateTree:
    """Plain dicts (keys of TreeNode / TreeEdge) -> CandidateTree. Without explicit edges, one edge
    per node with a parent is derived, so a caller can send nodes only."""
    node_msgs = [
        m.TreeNode(id=int(n["id"]), parent_id=int(n.get("parent_id", -1)), label=str(n.get("label", "")),
                   kind=str(n.get("kind", "")), status=str(n.get("status", "")),
                   detail=str(n.get("detail", "")))
        for n in nodes
    ]
    edge_list = list(edges)
    if not edge_list:
        edge_list = [{"parent_id": n.parent_id, "child_id": n.id} for n in node_msgs if n.parent_id >= 0]
    msg = m.CandidateTree(kind=kind, goal=goal, dot=dot, nodes=node_msgs,
                          edges=[m.TreeEdge(parent_id=int(e["parent_id"]), child_id=int(e["child_id"]),
                                            label=str(e.get("label", ""))) for e in edge_list])
    msg.header.stamp = time_to_msg(time.time() if stamp is None else stamp)
    return msg


def candidate_tree_from_msg(msg: m.CandidateTree) -> dict[str, Any]:
    return {
        "kind": msg.kind,
        "goal": msg.goal,
        "dot": msg.dot,
        "nodes": [{k: getattr(n, k) for k in TREE_NODE_KEYS} for n in msg.nodes],
        "edges": [{"parent_id": e.parent_id, "child_id": e.child_id, "label": e.label} for e in msg.edges],
    }


def llm_state_to_msg(state: Mapping[str, Any], *, goal: str = "", method: str = "",
                     stamp: float | None = None) -> m.LLMState:
    """LLM-State's open state as OpenState.to_dict gives it ({"key_objects", "objects",
    "summary"}) -> LLMState; entries keep the state's order (key objects first)."""
    objects = state.get("objects") or {}
    msg = m.LLMState(goal=goal, method=method, key_objects=[str(k) for k in state.get("key_objects") or []],
                     objects=[m.LLMStateObject(name=str(name), attributes=[str(a) for a in attrs])
                              for name, attrs in objects.items()],
                     summary=str(state.get("summary") or ""))
    msg.stamp = time_to_msg(time.time() if stamp is None else stamp)
    return msg


def llm_state_from_msg(msg: m.LLMState) -> dict[str, Any]:
    return {"key_objects": list(msg.key_objects),
            "objects": {o.name: list(o.attributes) for o in msg.objects},
            "summary": msg.summary}


# ---------------------------------------------------------------------------
# A task's progress and outcome (the planner's PerformTask)


def object_progress_to_msgs(snapshot: Iterable[tuple[str, str, str]]) -> list[m.ObjectProgress]:
    """Every object's (id, state, detail), as PerformTask's and LearnGoals' feedback carry them."""
    return [m.ObjectProgress(object_id=oid, state=state, detail=detail) for oid, state, detail in snapshot]


def object_outcome_to_msg(report: ObjectReport) -> m.TaskObjectOutcome:
    """One object's outcome: the goal in words and literals, who confirmed it, reached or why not."""
    detail = f" ({report.message})" if report.message else ""
    grounded = bool(report.literals)
    return m.TaskObjectOutcome(
        object_id=report.object_id, success=report.outcome == "done",
        message=f"{report.context}: {report.outcome}, goal from {report.goal_source or '-'}{detail}",
        goal=m.GoalCandidate(text=report.goal, parent_id=-1, analyzed=grounded, viable=grounded,
                             literals=[goal_literal_to_msg(lit) for lit in report.literals]),
        outcome=report.outcome, goal_source=report.goal_source, confirmed_by=report.confirmed_by)


def fill_task_result(result: Any, outcome: TaskOutcome, episode_summary: str = "") -> None:
    """PerformTask's result from the task's outcome: the verdict, the completion measure, the STARS
    paper's counts, the LLM usage and every object's outcome."""
    metrics, summary = outcome.metrics, outcome.summary
    result.success = summary.success
    result.message = summary.message + (f"; {episode_summary}" if episode_summary else "")
    result.incomplete = summary.reasons
    result.satisfied = metrics.satisfied
    result.total = metrics.assertions
    result.completion = metrics.completion / 100.0
    result.counts = elicitation_counts_to_msg({
        "retrieved": metrics.retrieved, "proposed": metrics.proposed, "sourced": metrics.sourced,
        "instructions": metrics.instructions, "yes_no": metrics.yes_no, "words": metrics.words})
    result.usage = llm_usage_to_msg(metrics.usage)
    result.objects = [object_outcome_to_msg(r) for r in outcome.reports]
