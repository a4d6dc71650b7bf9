"""The QoS profiles of topics that more than one node (or a node and its clients) use.

A publisher and its subscribers must agree: a transient-local subscription does not match a
volatile publisher, and a reliable one does not match a best-effort publisher. Keeping the
profiles here means the node that publishes and the code that listens import the same thing.

- `latched()`: reliable, transient local, depth 1. A subscriber that starts late still gets the
  last message at once (ROS 1's "latched" topic). `world_state` by default, `oversight/pending`,
  `bcr_tree`.
- `world_state_qos(...)`: perception's `world_state` from its qos_* parameters.
- `world_state_subscription(transient_local)`: what a node following `world_state` subscribes
  with (volatile matches any publisher; transient local also gets the latest state on start).
- `service_qos(depth)`: services and actions that promise to answer bursts. rclpy's
  default keeps 10 requests, and 10 responses on the server's side: a burst of 200 calls lost
  190 of them, silently. A node sizes the depth for the load it promises and refuses what it
  cannot take with an answer (busy, queue full); clients of the stack use the same profile.
- `action_server_qos()` / `action_client_qos()`: the stack's actions, those services plus
  `feedback_qos()`. PerformTask's and LearnGoals' feedback carries every object's state after
  each change, and a change comes between two messages: with rclpy's default (keep the last 10),
  a follower that fell 10 messages behind (a busy machine, a burst of state changes while a batch
  elicits) lost the ones in between, e.g. an object's `confirmed` before its `reached`. Keeping
  100 on both sides leaves a follower that margin.
"""
from __future__ import annotations

from typing import TypedDict

from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

RELIABILITY = {"reliable": ReliabilityPolicy.RELIABLE, "best_effort": ReliabilityPolicy.BEST_EFFORT}
DURABILITY = {"transient_local": DurabilityPolicy.TRANSIENT_LOCAL, "volatile": DurabilityPolicy.VOLATILE}


SERVICE_DEPTH = 1000  # requests (and responses) a service keeps: above every burst the nodes promise
FEEDBACK_DEPTH = 100  # feedback messages an action keeps on each side (a lagging follower's margin)


def service_qos(depth: int = SERVICE_DEPTH) -> QoSProfile:
    """Reliable, volatile, keeping `depth` requests and responses (see the module docstring)."""
    return QoSProfile(depth=depth, reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.VOLATILE)


class _ActionServiceQos(TypedDict):
    goal_service_qos_profile: QoSProfile
    result_service_qos_profile: QoSProfile
    cancel_service_qos_profile: QoSProfile


class ActionServerQos(_ActionServiceQos):
    """The keyword arguments of ActionServer that action_server_qos sets."""

    feedback_pub_qos_profile: QoSProfile


class ActionClientQos(_ActionServiceQos):
    """The keyword arguments of ActionClient that action_client_qos sets."""

    feedback_sub_qos_profile: QoSProfile


def feedback_qos(depth: int = FEEDBACK_DEPTH) -> QoSProfile:
    """Reliable, volatile, keeping `depth` feedback messages on each side (see the module
    docstring): the services' policy with the feedback's depth."""
    return service_qos(depth)


def _action_services(depth: int) -> _ActionServiceQos:
    profile = service_qos(depth)
    return _ActionServiceQos(goal_service_qos_profile=profile, result_service_qos_profile=profile,
                             cancel_service_qos_profile=profile)


def action_server_qos(depth: int = SERVICE_DEPTH) -> ActionServerQos:
    """An ActionServer's profiles: its services sized as `service_qos(depth)`, its feedback as
    `feedback_qos()`."""
    return ActionServerQos(**_action_services(depth), feedback_pub_qos_profile=feedback_qos())


def action_client_qos(depth: int = SERVICE_DEPTH) -> ActionClientQos:
    """An ActionClient's profiles, matching `action_server_qos`."""
    return ActionClientQos(**_action_services(depth), feedback_sub_qos_profile=feedback_qos())


def latched(depth: int = 1) -> QoSProfile:
    """Reliable and transient local: late joiners get the last `depth` messages."""
    return QoSProfile(depth=depth, reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.TRANSIENT_LOCAL)


def world_state_qos(depth: int, reliability: str, durability: str) -> QoSProfile:
    """QoS of `world_state` from parameter values; ValueError naming the parameter if invalid."""
    if depth < 1:
        raise ValueError(f"parameter qos_depth must be >= 1, got {depth}")
    if reliability not in RELIABILITY:
        raise ValueError(f"parameter qos_reliability must be one of {sorted(RELIABILITY)}, got {reliability!r}")
    if durability not in DURABILITY:
        raise ValueError(f"parameter qos_durability must be one of {sorted(DURABILITY)}, got {durability!r}")
    return QoSProfile(depth=depth, reliability=RELIABILITY[reliability], durability=DURABILITY[durability])


def world_state_subscription(transient_local: bool) -> QoSProfile:
    """How a node follows `world_state`: the newest message only, reliable."""
    durability = DurabilityPolicy.TRANSIENT_LOCAL if transient_local else DurabilityPolicy.VOLATILE
    return QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=durability)
