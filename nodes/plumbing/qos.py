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
"""
from __future__ import annotations

from typing import TypedDict

from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

RELIABILITY = {"reliable": ReliabilityPolicy.RELIABLE, "best_effort": ReliabilityPolicy.BEST_EFFORT}
DURABILITY = {"transient_local": DurabilityPolicy.TRANSIENT_LOCAL, "volatile": DurabilityPolicy.VOLATILE}


SERVICE_DEPTH = 1000  # requests (and responses) a service keeps: above every burst the nodes promise


def service_qos(depth: int = SERVICE_DEPTH) -> QoSProfile:
    """Reliable, volatile, keeping `depth` requests and responses (see the module docstring)."""
    return QoSProfile(depth=depth, reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.VOLATILE)


class ActionQos(TypedDict):
    """The keyword arguments of ActionServer/ActionClient that action_qos_kwargs sets."""

    goal_service_qos_profile: QoSProfile
    result_service_qos_profile: QoSProfile
    cancel_service_qos_profile: QoSProfile


def action_qos_kwargs(depth: int = SERVICE_DEPTH) -> ActionQos:
    """The service profiles of an ActionServer/ActionClient (goal, result, cancel) sized alike."""
    profile = service_qos(depth)
    return ActionQos(goal_service_qos_profile=profile, result_service_qos_profile=profile,
                     cancel_service_qos_profile=profile)


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
