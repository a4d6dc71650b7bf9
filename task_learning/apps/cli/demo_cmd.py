"""`task-learning demo` (what `make demo` runs): learn tidy_kitchen through the ROS graph with the
offline model and a simulated operator, perform it again alone (Trial #2), and print the STARS paper's
Table 2 layout for what ran. The ROS client lives in task_learning_nodes.clients.demo, imported only here."""
from __future__ import annotations

import argparse

from task_learning.apps.cli.options import add_llm_arguments, llm_options
from task_learning.errors import TaskLearningError
from task_learning.planning.session import CONDITIONS


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "demo", help="learn a task through the ROS graph, then Trial #2",
        description="What `make demo` runs: start the ROS graph (task-learning bringup) with a simulated "
                    "operator, learn the scene's task with PerformTask (per object: the goal in words and "
                    "literals, who confirmed it, reached or not), restart the graph on the same knowledge base "
                    "and perform it again (Trial #2: no LLM call, no question), run the baselines in-process, "
                    "and print the STARS paper's Table 2 layout with a plot. Each run starts from nothing in --workdir, "
                    "so a second run prints the same table.")
    p.add_argument("--scene", default="tidy_kitchen")
    p.add_argument("--condition", default="STARS+O", type=str.upper, choices=CONDITIONS)
    p.add_argument("--workdir", default="artifacts/demo", help="knowledge base, logs and plot")
    p.add_argument("--backend", default="symbolic", choices=("symbolic", "ai2thor", "fetch"),
                   help="world backend of the perception node and the baselines")
    p.add_argument("--baselines", default="TBP,TBP+O",
                   help="conditions also run in-process for contrast ('' for none)")
    add_llm_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        from task_learning_nodes.clients.demo import nodes_on_domain, run_demo
    except ImportError as exc:
        raise TaskLearningError(f"the ROS layer is not available ({exc}); run `make setup`") from None
    baselines = tuple(b.strip().upper() for b in args.baselines.split(",") if b.strip())
    unknown = [b for b in baselines if b not in CONDITIONS]
    if unknown:
        raise TaskLearningError(f"--baselines: unknown condition(s) {', '.join(unknown)} "
                                f"(choose from {', '.join(CONDITIONS)})")
    import os

    from task_learning.apps.domains import claim_domain

    # A graph of its own: another demo on this machine (or any graph on the domain) is never reached.
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    claim = claim_domain(os.environ.get("ROS_DOMAIN_ID"), nodes_on_domain)
    os.environ["ROS_DOMAIN_ID"] = str(claim.domain_id)  # the graph's nodes and this client inherit it
    print(f"ROS graph on domain {claim.domain_id} (ROS_DOMAIN_ID={claim.domain_id} to watch it)", flush=True)
    try:
        return run_demo(args.scene, args.condition, args.workdir, baselines, backend=args.backend, llm=args.llm,
                        llm_options=llm_options(args), decoding=args.decoding)
    finally:
        claim.close()
