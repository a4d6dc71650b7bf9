"""`task-learning bootstrap`: learn production rules for task families in one kitchen (the bootstrapped-productions paper).

Each family of the curriculum is attempted on instances drawn in the training FloorPlan; where no
production applies (or a cycle shows) the LLM chooses an action and writes a production, which is
kept only if it passes its replay check. Productions (with provenance, utility U and count N),
the families' end conditions and the world-knowledge statements go to the knowledge base.
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Callable

from task_learning.apps.cli.options import SEED, add_llm_arguments, bounded_int, grounded_or_free, llm_options
from task_learning.llm.answer_bounds import ANSWER_PROTOCOLS


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("bootstrap", help="learn production rules for task families (the bootstrapped-productions paper)",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--train-scene", default="FloorPlan1", help="the iTHOR kitchen to learn in (recorded metadata)")
    p.add_argument("--families", default="explore,find,pick_place,slice,clear",
                   help="comma-separated, run in curriculum order: explore, find, pick_place, slice, clear")
    p.add_argument("--db", required=True, help="knowledge base file (productions are added to it)")
    add_llm_arguments(p)
    p.add_argument("--max-instances", type=bounded_int(1, 100), default=40,
                   help="instances per family at most (each kind of the family's variable present in the "
                        "kitchen is drawn --draws times; the family ends after that when 2 in a row needed no LLM: no "
                        "action and no world-knowledge statement)")
    p.add_argument("--max-revisions", type=bounded_int(0, 10), default=3,
                   help="revision rounds after a failed replay check before a rule is dropped")
    p.add_argument("--world-knowledge", choices=("lazy", "catalogue", "met"), default="lazy",
                   help="lazy (default, the paper's mechanism): a world-knowledge statement is asked when a "
                        "production first needs it; catalogue (this project's extension, not the paper's): also, "
                        "after each family, ask its productions' statements for every kind met x every receptacle "
                        "type of the robot's type catalogue (config/scenes/object_types.yaml) that the training "
                        "kitchen has (kept with the source llm:catalogue-prefetch); met: the old name of lazy")
    p.add_argument("--draws", type=bounded_int(1, 5), default=1,
                   help="how many times each kind of a family's variable present in the kitchen is drawn")
    p.add_argument("--seed", type=SEED, default=0)
    p.add_argument("--answers", choices=ANSWER_PROTOCOLS, default="auto",
                   help="bounded: a base model's answers, one line each (the selected option; the generalized "
                        "rule; the rule's JSON object, also in revisions): a cue where the answer starts, a stop at "
                        "its end, a max_tokens that fits (config/prompts/bounded_answers.yaml); paper: the paper's "
                        "whole answers, 600-900 tokens; auto (default): bounded with --llm local, paper otherwise")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from task_learning.kb import KnowledgeBase
    from task_learning.llm.answer_bounds import resolve
    from task_learning.llm.client import make_client
    from task_learning.productions.experiment import OFFLINE_NOTE, BootstrapSettings, bootstrap_into, load_kitchen
    from task_learning.productions.families import parse_families
    from task_learning.productions.prefetch import world_knowledge_mode

    families = parse_families(args.families)
    mode = world_knowledge_mode(args.world_knowledge)
    load_kitchen(args.train_scene)  # a bad scene name fails before anything is written
    report = None if args.json else (lambda msg: print(msg, file=sys.stderr))
    with KnowledgeBase(args.db) as kb, make_client(args.llm, cache=None, **llm_options(args)) as client:
        settings = BootstrapSettings(train_scene=args.train_scene, families=families, seed=args.seed,
                                     max_instances=args.max_instances, max_revisions=args.max_revisions,
                                     trials_per_value=args.draws, world_knowledge=mode,
                                     answers=resolve(args.answers, args.llm), decoding=grounded_or_free(args, client))
        results, productions = bootstrap_into(kb, client, settings, report=report)
        client.raise_if_unavailable()
        rows = [{"name": p.name, "task": p.task, "utility": round(p.utility, 4), "count": p.count,
                 "english": p.english} for p in productions]
        if args.json:
            print(json.dumps({"train_scene": args.train_scene, "llm": args.llm, "answers": settings.answers,
                              "world_knowledge": mode,
                              "draws": args.draws, "families": [r.to_dict() for r in results],
                              "productions": rows, "note": OFFLINE_NOTE if args.llm == "offline" else ""}, indent=2))
            return 0
        for r in results:
            print(f"{r.family}: {r.instances} instances, {r.llm_decisions} LLM decisions, {r.statements} "
                  f"world-knowledge statements ({r.catalogue_statements} asked ahead over the catalogue), {r.tokens} "
                  f"tokens ({r.catalogue_tokens} for the catalogue), "
                  f"{len(r.learned)} new productions, {'converged' if r.converged else 'NOT converged'}; "
                  f"end condition: {r.end_condition or '-'}")
        print(f"{len(productions)} productions in {args.db}"
              + ("" if args.llm == "offline" else f"; answers: {settings.answers}"))
        if args.llm == "offline":
            print("Note: the offline model is not a language model (see `task-learning experiment --paper bootstrapping`).")
    return 0


def run_paper_table(args: argparse.Namespace) -> int:
    """`task-learning experiment --paper bootstrapping`: the bootstrapped-productions paper's Table 1 beside the paper's.
    With a language model (any --llm but offline) the offline stand-in runs the same table in the
    same command (on its own fresh knowledge base), and each of the model's rows is followed by the
    stand-in's and the paper's; both runs print their trials, wall time, calls, tokens and load."""
    import textwrap

    from task_learning.productions.experiment import (
        EXTENSION_AGENT,
        OFFLINE_NOTE,
        PAPER_T_TEST_P,
        PAPER_TABLE1,
        Row,
        format_t_tests,
        format_table,
    )
    from task_learning.productions.families import TEST_FAMILIES, parse_families
    from task_learning.productions.significance import PairedTest

    tests = [s.strip() for s in args.test_scenes.split(",") if s.strip()]
    families = parse_families(args.families, TEST_FAMILIES)
    report = None if args.json else (lambda msg: print(msg, file=sys.stderr))
    data = _paper_table(args, args.llm, llm_options(args), tests, families, report)
    offline = args.llm == "offline"
    standin = None
    if not offline and not args.db:  # the stand-in beside the model, bootstrapped afresh as the model was
        standin = _paper_table(args, "offline", {}, tests, families, None)
    if args.json:
        paper = {f: {a: dict(zip(("success", "success_without_llm", "steps", "tokens"), v)) for a, v in by.items()}
                 | {"t_test_p": PAPER_T_TEST_P.get(f)} for f, by in PAPER_TABLE1.items()}
        extra = {"offline_standin": standin, "standin_note": OFFLINE_NOTE} if standin else {}
        print(json.dumps(data | {"llm": args.llm, "note": OFFLINE_NOTE if offline else "", "paper": paper} | extra,
                         indent=2))
        return 0
    standin_rows = {(r["family"], r["agent"]): Row(**r) for r in standin["rows"]} if standin else None
    print(format_table([Row(**r) for r in data["rows"]], llm=args.llm, scenes=data["test_scenes"],
                       standin=standin_rows))
    for agent, tests in data["t_tests"].items():
        print()
        print(format_t_tests({f: PairedTest.from_dict(t) for f, t in tests.items()}, agent))
    how = ("world knowledge asked lazily as the paper does" if data["bootstrap"]
           else "taken from the knowledge base given, not bootstrapped now")
    print(f"\nBootstrapped in {data['train_scene']} ({data['productions']} productions, {how}); tested on held-out "
          f"{', '.join(data['test_scenes'])}; world backend {data['backend']}"
          + ("." if offline else f"; answers: {data['answers']} (llm/answer_bounds.py)."))
    print(format_cost(args.llm, data["cost"], standin["cost"] if standin else None))
    if data["prefetched_statements_in_kb"]:
        print(f"NOTE: this knowledge base holds {data['prefetched_statements_in_kb']} statements asked ahead by the "
              "catalogue prefetch (`bootstrap --world-knowledge catalogue`): its bootstrapped row is that extension's, "
              "not the paper's lazy protocol. Bootstrap a fresh one (no --db) for the paper's.")
    if data["extension"]:
        ext = data["extension"]
        print(f"{EXTENSION_AGENT}: {ext['statements']} statements asked ahead over {len(ext['receptacle_types'])} "
              f"receptacle types ({', '.join(ext['receptacle_types'])}), {ext['tokens']} tokens, after bootstrapping.")
    asked = [t for t in data["trials"] if t["agent"] == "bootstrapped" and t["statements"]]
    if asked:
        print("World-knowledge statements the bootstrapped agent asked on held-out kitchens:")
        for t in asked:
            print(f"  {t['scene']} {t['task']}: {'; '.join(t['statements'])}")
    if offline or standin:
        print("\n" + textwrap.fill(("Note: rows marked (offline stand-in) are NOT a language model. " if standin else
                                    "Note: ") + OFFLINE_NOTE, width=100))
    return 0


def _paper_table(args: argparse.Namespace, llm: str, options: dict[str, str], tests: list[str], families: list[str],
                 report: Callable[[str], None] | None) -> dict[str, Any]:
    """One run of Table 1 with `llm` (in a knowledge base of its own unless --db), and what it cost:
    trials, wall time, LLM calls and tokens, the machine's load while it ran."""
    import tempfile
    from pathlib import Path

    from task_learning.experiments.machine import LoadSampler
    from task_learning.kb import KnowledgeBase
    from task_learning.llm.answer_bounds import resolve
    from task_learning.llm.client import make_client
    from task_learning.productions.experiment import paper_experiment
    from task_learning.world.factory import WorldChoice

    answers = resolve(args.answers, llm)
    with tempfile.TemporaryDirectory(prefix="bootstrapping-") as tmp:
        db = args.db or str(Path(args.workdir or tmp) / f"bootstrapping{'' if llm == args.llm else '-' + llm}.sqlite")
        if not args.db:  # the experiment's own file: a rerun in --workdir starts from nothing
            from task_learning.kb import remove_knowledge_base

            remove_knowledge_base(db)
        with KnowledgeBase(db) as kb, make_client(llm, cache=None, **options) as client, LoadSampler() as load:
            data = paper_experiment(kb, client, train_scene=args.train_scene, test_scenes=tests, families=families,
                                    seed=args.seed or 0, where=WorldChoice(args.backend),
                                    extension=args.world_knowledge == "both",
                                    answers=answers, report=report,
                                    decoding=grounded_or_free(args, client) if llm == args.llm else "free")
            client.raise_if_unavailable()
            usage = client.usage
    data["answers"] = answers
    data["cost"] = {"trials": len(data["trials"]), "instances": sum(b["instances"] for b in data["bootstrap"]),
                    "wall_s": round(load.wall_s, 1), "calls": usage.calls, "prompt_tokens": usage.prompt_tokens,
                    "completion_tokens": usage.completion_tokens, "machine": load.summary()}
    return data


def format_cost(llm: str, cost: dict[str, Any], standin: dict[str, Any] | None = None) -> str:
    """Trials, wall time, LLM calls, tokens and the machine's load of the run (and of the stand-in's):
    the `cost` that _paper_table measured."""
    from task_learning.experiments.machine import describe_load

    def line(label: str, c: dict[str, Any]) -> str:
        return (f"  {label}: {c['instances']} bootstrap instances and {c['trials']} held-out trials, "
                f"{c['wall_s']:,.1f} s wall, {c['calls']:,} LLM calls, {c['prompt_tokens']:,} prompt + "
                f"{c['completion_tokens']:,} completion tokens, {describe_load(c.get('machine') or {})}")
    lines = ["Trials and wall times (1-minute load average min/mean/max while it ran):", line(llm, cost)]
    if standin is not None:
        lines.append(line("offline stand-in (not a language model)", standin))
    return "\n".join(lines)
