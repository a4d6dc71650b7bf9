"""How a planner reaches goals, from its settings: the goal executor of the ROS planner's
PerformTask and ReachGoal (the strategy — BCR with an engine, or LLM-State — and, with a knowledge
base, its production rules first).

Productions that nobody approved are used only once an operator approved them: with
`productions_ask_operator`, they are put to the operator first, one yes/no question per task
family, when someone can be asked; a no, a timeout or nobody to ask leaves them unused.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from task_learning.bcr.domain import Domain
from task_learning.bcr.engines import make_engine
from task_learning.kb import KnowledgeBase
from task_learning.oversight.operator import Operator
from task_learning.planning.executor import GoalExecutor, PolicyReview, Reacher

if TYPE_CHECKING:
    from task_learning.llm.client import LLMClient
    from task_learning.llm_state.state import OpenState


@dataclass(frozen=True)
class ReachSettings:
    """The planner's settings that shape its goal executor (config/nodes/planner.yaml)."""

    engine: str = "heuristic"  # BCR's selection engine: heuristic (no LLM) or llm
    strategy: str = "bcr"  # bcr or llm_state
    llm_state_method: str = "ours"
    max_actions: int = 100
    use_productions: bool = True
    productions_require_approval: bool = True
    productions_ask_operator: bool = True
    # free | grounded: how the llm engine's choice is decoded, as the caller resolved it for its
    # client (llm/constraints.py effective_decoding); LLM-State here has no grounded form yet
    decoding: str = "free"

    @property
    def needs_llm(self) -> bool:
        return self.engine == "llm" or self.strategy == "llm_state"


@dataclass
class ProductionApproval:
    """Who is asked about new productions: `asks`, when `available()` says someone can answer now."""

    asks: Operator
    available: Callable[[], bool]
    log: Callable[[str], object]  # what became of each family
    warn: Callable[[str], object]  # why nobody was asked


def goal_executor(settings: ReachSettings, domain: Domain, kb: KnowledgeBase | None, client: LLMClient | None, *,
                  review: PolicyReview | None = None, approval: ProductionApproval | None = None,
                  on_llm_state: Callable[[OpenState, str], None] | None = None) -> GoalExecutor:
    """The goal executor: with a knowledge base and use_productions, its productions (only
    approved ones with productions_require_approval) try each goal first, then the strategy.
    `review` asks the operator before a stored policy this robot did not learn (an import) is
    replayed; None: such policies are never replayed."""
    reacher: Reacher | None = None
    if settings.strategy == "llm_state":
        from task_learning.llm_state.strategy import LLMStateStrategy

        if client is None:
            raise ValueError("strategy llm_state needs an LLM client")
        reacher = LLMStateStrategy(client, method=settings.llm_state_method, on_state=on_llm_state)
    productions = None
    if kb is not None and settings.use_productions:
        from task_learning.productions.planning import reacher_from_kb

        approved_only = settings.productions_require_approval
        if approved_only and settings.productions_ask_operator and approval is not None:
            ask_production_approval(kb, approval)
        productions = reacher_from_kb(kb, approved_only=approved_only)
    engine = settings.engine
    options = {"decoding": settings.decoding} if engine == "llm" else {}
    return GoalExecutor(domain, lambda: make_engine(engine, client, **options), kb, max_actions=settings.max_actions,
                        reacher=reacher, productions=productions, review=review)


def ask_production_approval(kb: KnowledgeBase, approval: ProductionApproval) -> None:
    """Put every task family with unapproved productions to the operator (a yes approves it)."""
    from task_learning.productions.approval import ask_approval, unapproved_families

    if not unapproved_families(kb):
        return
    if not approval.available():
        approval.warn("new productions stay unapproved: no oversight node to ask")
        return
    for message in ask_approval(kb, approval.asks).messages:
        approval.log(f"productions {message}")
