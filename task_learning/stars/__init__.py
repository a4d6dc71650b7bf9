"""STARS goal elicitation (seed 000): Search Tree, Analysis and Repair, Selection, and the +O seam.

Entry point: `elicit_goal(...)` (task_learning.stars.elicit).
"""
from task_learning.stars.conditions import Condition, parse_condition
from task_learning.stars.elicit import ElicitationResult, ElicitationSetup, elicit_goal
from task_learning.stars.prompts import GoalContext, load_templates
from task_learning.stars.tree import TreeSettings

__all__ = ["Condition", "ElicitationResult", "ElicitationSetup", "GoalContext", "TreeSettings", "elicit_goal",
           "load_templates", "parse_condition"]
