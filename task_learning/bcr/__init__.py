"""BCR: sequential action selection by blocking conditions and resolutions (the BCR paper).

Public API:
- `domain.load_domain(name_or_path)` -> Domain (config/domains/<name>.yaml, validated);
- `agent.BCRAgent(domain, goals, engine).next_action(metadata, last_outcome)` -> (action, call);
- `engines.make_engine("llm" | "heuristic", client)`;
- `runner.run_goals(world, goals, engine)` / `runner.run_trial(scene, task, engine, client, seed)`
  -> TrialResult; `runner.make_world(scene, seed)` is the BCR testbed (failure points);
- `selector.ActionSelector` answers select-next-action requests across calls (the node's core);
- `tree.CandidateTree` (networkx DiGraph, DOT export).
"""
from task_learning import lazy_exports

_EXPORTS = {
    "BCRAgent": "task_learning.bcr.agent",
    "MODES": "task_learning.bcr.agent",
    "Selection": "task_learning.bcr.agent",
    "SelectionEngine": "task_learning.bcr.agent",
    "Domain": "task_learning.bcr.domain",
    "load_domain": "task_learning.bcr.domain",
    "ENGINES": "task_learning.bcr.engines",
    "HeuristicEngine": "task_learning.bcr.engines",
    "make_engine": "task_learning.bcr.engines",
    "KNOWN_PREDICATES": "task_learning.bcr.literals",
    "LiteralSyntaxError": "task_learning.bcr.literals",
    "StateView": "task_learning.bcr.literals",
    "holds": "task_learning.bcr.literals",
    "literal_text": "task_learning.bcr.literals",
    "parse_literal": "task_learning.bcr.literals",
    "build_request": "task_learning.bcr.prompt",
    "TrialResult": "task_learning.bcr.runner",
    "make_world": "task_learning.bcr.runner",
    "run_goals": "task_learning.bcr.runner",
    "run_trial": "task_learning.bcr.runner",
    "summarize": "task_learning.bcr.runner",
    "ActionSelector": "task_learning.bcr.selector",
    "load_tasks": "task_learning.bcr.tasks",
    "render_png": "task_learning.bcr.tree",
}

__all__, __getattr__ = lazy_exports(__name__, _EXPORTS)
