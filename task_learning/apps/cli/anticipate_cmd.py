"""`task-learning anticipate`: the rest of the day's tasks, anticipated and validated (the task-anticipation paper).

    task-learning anticipate --context "weekday, working from home and need a snack" \
        [--done "Prepare breakfast weekday"] [--assigned "Prepare coffee"] --llm offline [--db kb.sqlite] --json

    task-learning anticipate --context "weekend, no guests" --record "Prepare breakfast weekend,Pack bag" --db kb.sqlite

`--record` remembers a day the human did as experience (the validator then counts it).

    task-learning anticipate --day trace_01 --operator simulated|terminal [--db kb.sqlite] [--json]

`--day` runs a simulated day of config/anticipation/household.yaml in-process instead: the human
does the day's routine, the robot anticipates after each finished task, proposes every anticipated
task to the operator ("Shall I prepare coffee next?") and works only on the confirmed ones; it
prints what was anticipated, kept, confirmed and done.

    task-learning anticipate --day trace_01 --robot --oversight ros --graph

`--graph` asks the anticipation node (task_learning_nodes.nodes.anticipation, AnticipateDay) to run the
robot's day through the ROS graph: questions through the oversight node, the human's routine and the
checks in the perception node's world, confirmed tasks performed by the planner node (ReachGoal);
the knowledge base is the node's db_path (`bringup --db`), so --db is not used with --graph.

JSON: {"proposed": [...], "kept": [...], "dropped": [{"task", "reason"}], "merged": [...],
"issues": {...}, "unknown_names": [...], ...}. `proposed` is what the LLM named from the task
list (duplicates and done tasks removed), `kept` what the validator kept, `merged` the assigned
tasks then the kept ones. Names outside the list, an empty answer, duplicates, done tasks and a
context never seen are handled and counted in `issues`; a --done or --assigned name outside the
list, or a context naming no day, is refused with a one-line error (exit 2).
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from task_learning.apps.cli.options import SEED, add_llm_arguments, bounded_float, decoding_of, llm_options
from task_learning.errors import TaskLearningError
from task_learning.llm.prompt_templates import PROMPT_WORDINGS

if TYPE_CHECKING:
    from task_learning.anticipation.config import AnticipationConfig
    from task_learning.anticipation.context import DayContext
    from task_learning.llm.client import LLMClient
    from task_learning.oversight.operator import Operator


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("anticipate", help="anticipate the rest of the day's tasks (the task-anticipation paper)",
                              description="Ask the LLM for the rest of the day's routine, keep what experience "
                                          "supports, merge with the assigned tasks.")
    p.add_argument("--context", default=None,
                   help='the day, e.g. "weekday, working from home and need a snack"')
    p.add_argument("--done", default="", help="tasks already done today, comma-separated, in order")
    p.add_argument("--assigned", default="", help="tasks the robot was asked to do, comma-separated")
    add_llm_arguments(p)
    p.add_argument("--db", default=None, help="knowledge base with the routines (seeded from config when new); "
                                              "default: the config's experience in memory")
    p.add_argument("--record", default=None, metavar="TASKS",
                   help="instead of anticipating: remember a day the human did (its tasks, comma-separated, in "
                        "order) as experience of --context in --db")
    p.add_argument("--agent", default="agent", help="the agent's name (its own draws of examples)")
    p.add_argument("--seed", type=SEED, default=0)
    p.add_argument("--day", default=None, help="simulate a day of config/anticipation/household.yaml (its `days`)")
    p.add_argument("--robot", action="store_true",
                   help="with --day: the robot's day in the symbolic world (AI2-THOR-like): confirmed tasks are "
                        "performed by the planner's executor with the goals of config/anticipation/robot_goals.yaml")
    p.add_argument("--oversight", choices=("local", "ros"), default="local",
                   help="with --day --robot: ask in-process (local) or through the ROS graph's oversight node (ros; "
                        "start it with `task-learning bringup --nodes oversight`; with --operator terminal, answer "
                        "with `task-learning operator` or the panel)")
    p.add_argument("--graph", action="store_true",
                   help="with --day --robot --oversight ros: the anticipation node runs the day; the robot performs "
                        "confirmed tasks through the planner node (ReachGoal) on the perception node's world, where the "
                        "simulated human acts too; start `task-learning bringup --nodes oversight perception planner "
                        "anticipation --db KB --param perception.scene:=config/anticipation/home_scene.yaml`")
    p.add_argument("--wait", type=bounded_float(0.0, 600.0), default=10.0,
                   help="seconds to wait for the oversight node (--oversight ros)")
    p.add_argument("--operator", choices=("simulated", "terminal"), default="simulated",
                   help="who confirms anticipated tasks in --day (simulated: knows the true routine)")
    p.add_argument("--oversight-db", default=None,
                   help="with --oversight ros --operator simulated: the oversight node's knowledge base, where the "
                        "simulated operator pairs itself once (docs/oversight-security.md)")
    p.add_argument("--prompts", choices=PROMPT_WORDINGS, default="own",
                   help="own (default): the project's prompt wording; paper: the traces' prompts verbatim "
                        "(config/anticipation/paper_prompts.yaml)")
    p.add_argument("--json", action="store_true")
    p.requires("--robot", "--day", why="the robot's day is a simulated day")
    p.requires("--oversight=ros", "--robot", why="the robot's day asks through the oversight node")
    p.requires("--graph", "--robot", "--oversight=ros",
               why="the anticipation node runs the robot's day and asks through the oversight node")
    p.excludes("--graph", "--db", why="the knowledge base is the anticipation node's db_path (`bringup --db`)")
    p.excludes("--graph", "--llm", why="the anticipation node's LLM is its `llm` parameter "
                                       "(--param anticipation.llm:=...)")
    p.excludes("--graph", "--prompts", why="the anticipation node asks in the project's own wording; --prompts "
                                           "paper runs in-process only")
    p.excludes("--day", "--context", "--done", "--assigned", "--record",
               why="a simulated day takes its context and tasks from the day")
    p.requires("--record", "--db", why="the knowledge base keeps the robot's experience")
    p.set_defaults(func=run)


def _task_list(value: str, option: str, cfg: AnticipationConfig) -> list[str]:
    out = []
    for name in (n.strip() for n in value.split(",")):
        if not name:
            continue
        task = cfg.task_named(name)
        if task is None:
            raise TaskLearningError(f"{option}: {name!r} is not a task of the list "
                                    f"({', '.join(cfg.tasks)}; file {cfg.source}, key tasks)")
        if task in out:
            raise TaskLearningError(f"{option}: {task!r} given twice")
        out.append(task)
    return out


def run(args: argparse.Namespace) -> int:
    decoding_of(args, supported=False, what="anticipation")  # one line when grounded was asked for
    from task_learning.anticipation.anticipator import Anticipator
    from task_learning.anticipation.config import load_anticipation_config
    from task_learning.anticipation.context import parse_context
    from task_learning.anticipation.experience import Experience, seed_experience
    from task_learning.errors import ConfigError
    from task_learning.kb.store import KnowledgeBase
    from task_learning.llm.client import make_client

    cfg = load_anticipation_config(wording=args.prompts)
    if args.day is not None:
        return _run_day(args, cfg)
    if args.context is None or not args.context.strip():
        raise TaskLearningError("--context: empty; say the day, e.g. \"weekday, working from home\"")
    try:
        ctx = parse_context(args.context, cfg)
    except ConfigError as exc:
        raise TaskLearningError(f"--context: {exc.message}") from None
    if args.record is not None:
        return _record(args, cfg, ctx)
    done = _task_list(args.done, "--done", cfg)
    assigned = _task_list(args.assigned, "--assigned", cfg)
    if ctx.unknown_words:
        print(f"task-learning anticipate: note: --context words not understood and ignored: "
              f"{' '.join(ctx.unknown_words)} (known: {', '.join(cfg.facts)})", file=sys.stderr)
    with KnowledgeBase(args.db or ":memory:") as kb:
        seed_experience(kb, cfg)
        experience = Experience.from_kb(kb)
    with make_client(args.llm, **llm_options(args)) as client:  # a local server stops at the end
        result = Anticipator(client, cfg, experience, agent=args.agent, seed=args.seed).anticipate(ctx, done,
                                                                                                   assigned)
        client.raise_if_unavailable()
    data = result.to_dict()
    data["issues"]["unknown_context_words"] = len(ctx.unknown_words)
    data["llm"] = args.llm
    if args.llm == "offline":
        from task_learning.experiments.anticipation import OFFLINE_NOTE

        data["note"] = OFFLINE_NOTE
    if args.json:
        print(json.dumps(data, indent=2))
        return 0
    print(f"context: {result.context}; done: {', '.join(done) or 'nothing'}")
    print(f"proposed by the LLM: {', '.join(result.proposed) or 'nothing'}")
    print(f"kept: {', '.join(result.kept) or 'nothing'}")
    for d in result.dropped:
        print(f"dropped {d['task']}: {d['reason']}")
    print(f"to do (assigned first): {', '.join(result.merged) or 'nothing'}")
    counted = {k: v for k, v in data["issues"].items() if v}
    if counted:
        print("handled: " + ", ".join(f"{k} {v}" for k, v in counted.items()))
    if result.error:
        print(f"the LLM gave no answer: {result.error}")
    if args.llm == "offline":
        print("(offline model: not a language model)")
    return 0


def _record(args: argparse.Namespace, cfg: AnticipationConfig, ctx: DayContext) -> int:
    from task_learning.anticipation.experience import record_day, seed_experience
    from task_learning.kb.store import KnowledgeBase

    if ctx.unknown_words:
        raise TaskLearningError(f"--context: words not understood: {' '.join(ctx.unknown_words)} "
                                f"(known facts: {', '.join(cfg.facts)}); a remembered day must say what it was")
    tasks = _task_list(args.record, "--record", cfg)
    if not tasks:
        raise TaskLearningError("--record: no tasks given")
    with KnowledgeBase(args.db) as kb:
        seed_experience(kb, cfg)
        record_day(kb, ctx, tasks)
        count = len(kb.routines())
    print(json.dumps({"recorded": tasks, "context": ctx.describe(cfg), "routines": count}) if args.json
          else f"remembered a {ctx.describe(cfg)}: {', '.join(tasks)} ({count} days of experience)")
    return 0


def _run_day(args: argparse.Namespace, cfg: AnticipationConfig) -> int:
    from task_learning.anticipation.experience import Experience, seed_experience
    from task_learning.anticipation.household import load_household
    from task_learning.anticipation.proposals import RoutineOperator
    from task_learning.anticipation.simulation import run_day
    from task_learning.kb.store import KnowledgeBase
    from task_learning.llm.client import make_client
    from task_learning.oversight.terminal import TerminalOperator

    spec = load_household(tasks=cfg.tasks)
    days = {str(d["name"]): d for d in spec.days}
    if args.day not in days:
        raise TaskLearningError(f"--day: unknown day {args.day!r} (days of {spec.source}: {', '.join(days)})")
    day = days[args.day]
    operator: Operator = RoutineOperator(day["tasks"]) if args.operator == "simulated" else TerminalOperator()
    with make_client(args.llm, **llm_options(args)) as client:  # a local server stops at the end
        if args.robot:
            return _robot_day(args, cfg, day, operator, client)
        with KnowledgeBase(args.db or ":memory:") as kb:
            seed_experience(kb, cfg)
            result = run_day(spec, cfg, Experience.from_kb(kb), day, agent="proposed", client=client,
                             operator=operator, kb=kb, seed=args.seed)
        client.raise_if_unavailable()
    data = result.to_dict()
    if args.json:
        data["log"] = result.log
        print(json.dumps(data, indent=2))
        return 0
    print(f"day {result.day}: {result.context}; the human's routine: {', '.join(result.routine)}")
    for a in result.anticipations:
        print(f"after {', '.join(a.done) or 'nothing'}: anticipated {', '.join(a.proposed) or 'nothing'}; "
              f"kept {', '.join(a.kept) or 'nothing'}"
              + "".join(f"; dropped {d['task']} ({d['reason']})" for d in a.dropped))
    print(f"proposed to the operator: {', '.join(result.asked) or 'nothing'}")
    print(f"confirmed: {', '.join(result.confirmed) or 'nothing'}; refused: {', '.join(result.refused) or 'nothing'}")
    print(f"worked on ahead of the human (confirmed only): {', '.join(result.performed) or 'nothing'}")
    print(f"done: {', '.join(result.done)} in {result.steps} team steps"
          + ("" if result.finished else " (NOT finished)"))
    print(f"LLM calls {result.llm_calls}, tokens {result.tokens}; actions for unconfirmed tasks: "
          f"{result.unconfirmed_actions}")
    if args.llm == "offline":
        print("(offline model: not a language model)")
    return 0


def _robot_day(args: argparse.Namespace, cfg: AnticipationConfig, day: dict[str, Any], operator: Operator,
               client: LLMClient) -> int:
    import datetime

    from task_learning.anticipation.experience import Experience, seed_experience
    from task_learning.anticipation.robot_day import run_robot_day
    from task_learning.kb.store import KnowledgeBase

    suffix = ""
    answerer = None
    asker = None
    if args.oversight == "ros":
        from task_learning.apps.cli.anticipate_ros import SimulatedRoutineAnswerer, oversight_client

        suffix = f" ({day['name']}, {datetime.date.today().isoformat()})"
        if not args.graph:
            asker = oversight_client("anticipation", args.wait, asker="anticipation")
        if args.operator == "simulated":
            try:
                answerer = SimulatedRoutineAnswerer(day["tasks"], suffix, args.wait, args.oversight_db).start()
            except BaseException:
                if asker is not None:
                    asker.close()
                raise
        if asker is not None:
            operator = asker
    try:
        if args.graph:
            from task_learning.apps.cli.anticipate_ros import run_day_on_node

            data = run_day_on_node(str(day["name"]), suffix, args.seed, args.wait)
        else:
            with KnowledgeBase(args.db or ":memory:") as kb:
                seed_experience(kb, cfg)
                data = run_robot_day(cfg, Experience.from_kb(kb), day, client=client, operator=operator, kb=kb,
                                     seed=args.seed, question_suffix=suffix).to_dict()
    finally:
        if answerer is not None:
            answerer.stop()
        if asker is not None:
            asker.close()
    client.raise_if_unavailable()
    if args.json:
        print(json.dumps(data, indent=2))
        return 0
    via = "the oversight node (ROS)" if args.oversight == "ros" else "in-process"
    acts = ("the planner node on the perception node's world, driven by the anticipation node (ROS)" if args.graph
            else "in-process (symbolic world)")
    print(f"robot's day {data['day']}: {data['context']}; the human's routine: {', '.join(data['routine'])}")
    print(f"questions to the operator: {via}; the robot acts: {acts}")
    for a in data["anticipations"]:
        print(f"after {', '.join(a['done']) or 'nothing'}: anticipated {', '.join(a['proposed']) or 'nothing'}; "
              f"kept {', '.join(a['kept']) or 'nothing'}")
    print(f"proposed to the operator: {', '.join(data['asked']) or 'nothing'}")
    print(f"confirmed: {', '.join(data['confirmed']) or 'nothing'}; refused: {', '.join(data['refused']) or 'nothing'}")
    for p in data["performed"]:
        how = "planner node" if p.get("via") == "planner" else "policy reused" if p["policy_reused"] else "BCR"
        print(f"robot performed {p['task']}: {'done' if p['success'] else 'FAILED ' + p['message']} "
              f"({p['actions']} actions, {how})")
    print(f"done: {', '.join(data['done'])} (by the robot: {', '.join(data['done_by_robot']) or 'none'}; "
          f"the human's actions: {data['human_actions']})")
    print(f"LLM calls {data['llm_calls']}, tokens {data['tokens']}; executions of unconfirmed tasks: "
          f"{data['unconfirmed_executions']}")
    if args.llm == "offline":
        print("(offline model: not a language model)")
    return 0
