"""Identities for tests that talk to the oversight node (not a test module itself): a paired
operator's credentials in a knowledge base, an answering client with them, and an asking client
signing as one of the stack's nodes (the stack key under the test graph's ROS_HOME, the file the
graph's nodes use)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from task_learning.kb import KnowledgeBase
from task_learning.oversight.pairing import OperatorCredentials, OperatorRegistry


def paired(db: str | Path, name: str = "tester") -> OperatorCredentials:
    """Pair `name` in the oversight node's knowledge base; its signing credentials."""
    with KnowledgeBase(db) as kb:
        return OperatorCredentials.from_token(OperatorRegistry(kb).pair_locally(name, created_by="test"))


def answerer(db: str | Path, name: str = "tester", **kwargs: Any) -> Any:
    """An OversightClient answering as the paired operator `name`."""
    from task_learning_nodes.clients.oversight_client import OversightClient

    return OversightClient(name=name, credentials=paired(db, name), **kwargs)


def asker(name: str = "planner", **kwargs: Any) -> Any:
    """An OversightClient asking as the stack node `name` (signed with the stack key)."""
    from task_learning_nodes.clients.oversight_client import OversightClient

    return OversightClient(name=name, asker=name, **kwargs)
