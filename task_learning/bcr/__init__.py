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
