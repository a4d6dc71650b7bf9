"""Plain data shared by every component, mirrored one-to-one by the ROS messages in `msg/`.

Keeping these in one module means the ROS conversion layer (`task_learning_nodes.plumbing.convert`) has a
single place to map from, and in-process experiments use exactly what the nodes exchange.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any


class Truth(str, Enum):
    """Truth value of a literal; possibly_* are BCR's uncertain effects (opening a fridge possibly
    makes the milk visible)."""

    TRUE = "true"
    FALSE = "false"
    POSSIBLY_TRUE = "possibly_true"
    POSSIBLY_FALSE = "possibly_false"


@dataclass(frozen=True)
class GoalLiteral:
    """predicate(args...) = truth, e.g. inside(Mug|1, Cupboard|1) = true."""

    predicate: str
    args: tuple[str, ...]
    truth: Truth = Truth.TRUE

    def __str__(self) -> str:
        body = f"{self.predicate}({', '.join(self.args)})"
        return body if self.truth is Truth.TRUE else f"{self.truth.value}:{body}"

    def negated(self) -> "GoalLiteral":
        flip = {
            Truth.TRUE: Truth.FALSE,
            Truth.FALSE: Truth.TRUE,
            Truth.POSSIBLY_TRUE: Truth.POSSIBLY_FALSE,
            Truth.POSSIBLY_FALSE: Truth.POSSIBLY_TRUE,
        }
        return GoalLiteral(self.predicate, self.args, flip[self.truth])

    def to_dict(self) -> dict[str, Any]:
        return {"predicate": self.predicate, "args": list(self.args), "truth": self.truth.value}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "GoalLiteral":
        return cls(str(data["predicate"]), tuple(str(a) for a in data["args"]),
                   Truth(data.get("truth", "true")))


class MismatchKind(str, Enum):
    """Why a goal sentence is not viable: the four reasons of the STARS paper, and WRONG_OBJECT."""

    UNKNOWN_WORD = "unknown_word"
    UNINTERPRETABLE = "uninterpretable"
    UNGROUNDED_OBJECT = "ungrounded_object"
    AFFORDANCE_MISMATCH = "affordance_mismatch"
    # Not one of the paper's four: a goal asked for object X that says nothing about X ("the
    # cheese is in the fridge" when asked about the plastic cups).
    WRONG_OBJECT = "wrong_object"


@dataclass(frozen=True)
class Mismatch:
    """Why a sentence is not viable; `feedback` is what the robot says in a repair prompt."""

    kind: MismatchKind
    detail: str
    feedback: str
    subject: str = ""  # the offending word, object or property

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind.value, "detail": self.detail, "feedback": self.feedback,
                "subject": self.subject}


class CandidateSource(str, Enum):
    """Which STARS stage produced a goal candidate."""

    INITIAL = "initial"
    RECURSE = "recurse"
    REPAIR = "repair"
    REPAIR_RECURSE = "repair_recurse"
    USER = "user"  # described by the operator in words


@dataclass
class GoalCandidate:
    """One goal sentence with its provenance through the STARS pipeline."""

    text: str
    score: float
    source: CandidateSource = CandidateSource.INITIAL
    candidate_id: int = 0
    parent_id: int = -1  # the candidate a repair or recursion came from; -1 for none
    viable: bool | None = None  # None until analysed
    mismatches: list[Mismatch] = field(default_factory=list)
    literals: list[GoalLiteral] = field(default_factory=list)
    repair_feedback: str = ""  # the feedback sentence that produced this candidate, for repairs

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.candidate_id,
            "text": self.text,
            "score": self.score,
            "source": self.source.value,
            "parent": self.parent_id,
            "viable": self.viable,
            "mismatches": [m.to_dict() for m in self.mismatches],
            "literals": [lit.to_dict() for lit in self.literals],
            "repair_feedback": self.repair_feedback,
        }


@dataclass(frozen=True)
class ActionCall:
    """A primitive action in AI2-THOR's vocabulary: PickupObject(objectId), PutObject(objectId=
    receptacle), OpenObject, CloseObject, ToggleObjectOn/Off, SliceObject, NavigateToObject..."""

    action: str
    object_id: str = ""
    params: tuple[tuple[str, Any], ...] = ()

    def step_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for `WorldBackend.step`, in AI2-THOR's parameter names."""
        kwargs: dict[str, Any] = dict(self.params)
        if self.object_id:
            kwargs["objectId"] = self.object_id
        return kwargs

    def __str__(self) -> str:
        extra = "".join(f", {k}={v}" for k, v in self.params)
        return f"{self.action}({self.object_id}{extra})"


@dataclass
class ActionOutcome:
    """What happened when an action ran; `blocking_condition` is BCR's name for why it failed."""

    call: ActionCall
    success: bool
    error_message: str = ""
    blocking_condition: str = ""


@dataclass
class PromptTypeUsage:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_hits: int = 0
    failures: int = 0
    requests: int = 0  # round trips (HTTP requests) this type opened; see LLMUsage
    cached_prompt_tokens: int = 0  # prompt tokens the server said it served from its prefix cache


@dataclass
class LLMUsage:
    """Counts of LLM traffic, by prompt type (initial, recurse, repair, repair_recurse, selection,
    bcr_selection...). `calls` counts model calls (prompts) that reached a provider (cache hits
    excluded); `requests` counts round trips: a batch of many prompts sent as one request is many
    calls and one request, counted against the prompt type of its first prompt."""

    by_type: dict[str, PromptTypeUsage] = field(default_factory=dict)

    @property
    def calls(self) -> int:
        return sum(u.calls for u in self.by_type.values())

    @property
    def prompt_tokens(self) -> int:
        return sum(u.prompt_tokens for u in self.by_type.values())

    @property
    def completion_tokens(self) -> int:
        return sum(u.completion_tokens for u in self.by_type.values())

    @property
    def cache_hits(self) -> int:
        return sum(u.cache_hits for u in self.by_type.values())

    @property
    def failures(self) -> int:
        return sum(u.failures for u in self.by_type.values())

    @property
    def requests(self) -> int:
        return sum(u.requests for u in self.by_type.values())

    @property
    def cached_prompt_tokens(self) -> int:
        return sum(u.cached_prompt_tokens for u in self.by_type.values())

    def merge(self, other: "LLMUsage") -> None:
        for kind, usage in other.by_type.items():
            mine = self.by_type.setdefault(kind, PromptTypeUsage())
            for name in vars(usage):
                setattr(mine, name, getattr(mine, name) + getattr(usage, name))

    def to_dict(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "requests": self.requests,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cache_hits": self.cache_hits,
            "failures": self.failures,
            "cached_prompt_tokens": self.cached_prompt_tokens,
            "by_type": {k: vars(v).copy() for k, v in sorted(self.by_type.items())},
        }


class AnswerKind(str, Enum):
    YES = "yes"
    NO = "no"
    DESCRIPTION = "description"
    TIMEOUT = "timeout"  # never treated as consent


@dataclass
class ConfirmationRequest:
    """A yes/no question (or a request for a description) put to the operator."""

    request_id: str
    question: str
    object_id: str = ""
    object_description: str = ""  # "mug in the dish rack"
    candidate: GoalCandidate | None = None
    candidates: list[GoalCandidate] = field(default_factory=list)
    wants_description: bool = False
    timeout_s: float = 0.0  # 0: the oversight node's default
    asked_by: str = ""  # behind the oversight node: the stack node that asked (set by that node)
    deadline: float = 0.0  # when it times out, seconds since the epoch (set while it waits); 0: unknown


@dataclass
class ConfirmationAnswer:
    request_id: str
    answer: AnswerKind
    description: str = ""
    operator: str = ""  # who answered: simulated, terminal, panel, timeout; a paired operator's name
    stamp: float = 0.0  # seconds since the epoch
    client: str = ""  # the client (ROS node) the answer came through, when it came over ROS
    # Issued by the oversight node for a paired operator's yes or description to a stack node's
    # question: what the planner checks before it executes (task_learning.oversight.confirmations).
    confirmation_id: str = ""


@dataclass
class WorldObject:
    """Typed view of one AI2-THOR object record. `properties` keeps every AI2-THOR key as read,
    so nothing the simulator reports is lost; the fields are the ones every component uses."""

    object_id: str
    object_type: str
    name: str = ""
    parent_receptacles: list[str] = field(default_factory=list)
    receptacle_object_ids: list[str] = field(default_factory=list)
    position: tuple[float, float, float] = (0.0, 0.0, 0.0)
    rotation: tuple[float, float, float] = (0.0, 0.0, 0.0)
    distance: float = 0.0
    visible: bool = True
    properties: dict[str, Any] = field(default_factory=dict)

    def flag(self, key: str) -> bool:
        """An AI2-THOR boolean key (pickupable, isOpen, ...), False when absent or null."""
        return bool(self.properties.get(key) or False)


@dataclass
class WorldState:
    """The world as perception reports it: the AI2-THOR metadata of one moment, typed."""

    scene: str
    objects: list[WorldObject]
    robot_location: str = ""  # gross location ("kitchen") or the object id the robot is at
    robot_position: tuple[float, float, float] = (0.0, 0.0, 0.0)
    robot_rotation: tuple[float, float, float] = (0.0, 0.0, 0.0)
    held_object_ids: list[str] = field(default_factory=list)
    stamp: float = 0.0

    def by_id(self) -> dict[str, WorldObject]:
        return {o.object_id: o for o in self.objects}
