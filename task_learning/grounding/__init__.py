"""Goal-sentence grounding and affordance analysis (the STARS paper §4.2, appendix B.4).

`analyze_goal(sentence, state, context_object_id=None, knowledge=None) -> GoalAnalysis` is the
in-process entry point; `GroundingKnowledge.load()` reads config/grounding once (cached).
"""
from task_learning.grounding.analysis import ClauseAnalysis, GoalAnalysis, analyze_goal
from task_learning.grounding.knowledge import GroundingKnowledge

__all__ = ["ClauseAnalysis", "GoalAnalysis", "GroundingKnowledge", "analyze_goal"]
