"""`task-learning experiment`: STARS conditions side by side on a scene, in the STARS paper's Table 2
layout next to the paper's figures, plus Trial #2 and a plot."""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import textwrap
from pathlib import Path

from task_learning.apps.cli.options import SEED, add_llm_arguments, bounded_float, bounded_int, decoding_of, llm_options
from task_learning.errors import TaskLearningError
from task_learning.experiments.machine import LoadSampler
from task_learning.experiments.runner import run_conditions
from task_learning.experiments.table import (
    OFFLINE_NOTE,
    STANDIN_NOTE,
    describe_model,
    format_table,
    format_trials,
    paper_key,
    paper_row,
    plot_rows,
    scene_kind,
    tokenizer_for,
)
from task_learning.llm.answer_bounds import ANSWER_PROTOCOLS
from task_learning.llm.prompt_templates import PROMPT_WORDINGS
from task_learning.llm.shared_answers import SharedAnswers
from task_learning.planning.session import CONDITIONS

# --paper NAME -> the module whose run(args) prints that seed's tables; "stars" (the STARS paper) is
# `run` below. Imported only when chosen, so `experiment` for one seed never loads the others.
PAPERS = {
    "stars": "",
    "llm-state": "task_learning.apps.cli.llm_state_experiment",
    "bcr": "task_learning.apps.cli.bcr_experiment",
    "anticipation": "task_learning.apps.cli.anticipation_experiment",
    "bootstrapping": "task_learning.apps.cli.bootstrapping_experiment",
}


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "experiment", help="run STARS conditions and print the STARS paper's Table 2",
        description="Run the conditions of one paper in-process and print its table beside the paper's: "
                    "the STARS paper's Table 2 (its conditions on a scene, then Trial #2; the default), the LLM-State "
                    "paper's Tables I and II (--paper llm-state), the task-anticipation traces' days (--paper "
                    "anticipation) or the bootstrapped-productions paper's Table 1 (--paper bootstrapping). Every run starts from fresh knowledge bases (its own files "
                    "in --workdir are replaced), so running it again prints the same table. With the offline "
                    "model the table says that it is not a language model.")
    p.add_argument("--paper", choices=tuple(PAPERS), default="stars",
                   help="stars (the STARS paper's Table 2, the default), llm-state (the LLM-State paper's Tables I "
                        "and II), anticipation (the task-anticipation traces' days), bootstrapping (the "
                        "bootstrapped-productions paper's Table 1: production rules bootstrapped in --train-scene, "
                        "tested on --test-scenes) or bcr (the BCR paper's Table 1: four tasks, --trials seeded "
                        "trials each, paper mode)")
    p.add_argument("--scene", default="tidy_kitchen")
    p.add_argument("--conditions", default=None,
                   help=f"comma-separated, from {','.join(CONDITIONS)} (default: the paper's "
                        "Table 1 conditions; STARS* on tidy kitchen only, as in the paper)")
    add_llm_arguments(p)
    p.add_argument("--workdir", default=None, help="where the knowledge bases go")
    p.add_argument("--plot", default=None, help="save a PNG of completion, words and tokens")
    p.add_argument("--seed", type=SEED, default=None)
    p.add_argument("--json", action="store_true")
    p.add_argument("--train-scene", default="FloorPlan1", help="bootstrapping: the kitchen to learn in")
    p.add_argument("--test-scenes", default="FloorPlan6,FloorPlan9,FloorPlan14,FloorPlan21",
                   help="bootstrapping: held-out kitchens, comma-separated")
    p.add_argument("--db", default=None, help="bootstrapping: knowledge base to use (tested as it is if it has "
                                              "productions or was bootstrapped, even when nothing was learned; else "
                                              "bootstrapped first; default: a fresh one in --workdir or a temp dir)")
    p.add_argument("--backend", choices=("symbolic", "ai2thor"), default="symbolic",
                   help="bootstrapping: the world every instance runs in: symbolic (recorded FloorPlans in process) "
                        "or ai2thor (the ai2thor Controller and the simulator config/nodes/perception.yaml names)")
    p.add_argument("--families", default="find,slice,clear",
                   help="bootstrapping: the families of Table 1 to test, comma-separated (find, slice, clear)")
    p.add_argument("--methods", default=None,
                   help="llm-state: comma-separated methods to run (default all: inner_monologue, progprompt, "
                        "no_states, no_summary, no_objects, ours)")
    p.add_argument("--runs", type=bounded_int(1, 100), default=5,
                   help="llm-state: runs per task, run i on map i mod 5 (default 5, the paper's x/5)")
    p.add_argument("--tasks", default=None,
                   help="llm-state: comma-separated tasks of Table I to run (default: all 15; a subset leaves "
                        "the held-out runs out); bcr: tasks of Table 1 (default all four)")
    p.add_argument("--trials", type=bounded_int(1, 1000), default=50,
                   help="bcr: seeded trials per task, paper mode (default 50, the paper's)")
    p.add_argument("--maps", default=None,
                   help="llm-state: comma-separated maps, run i on map i mod their number (default map1..map5)")
    p.add_argument("--answers", choices=ANSWER_PROTOCOLS, default="auto",
                   help="llm-state, bcr and bootstrapping: bounded: a base model's answers (a cue, stop sequences, max_tokens that fit "
                        "the parser: config/prompts/bounded_answers.yaml); paper: each prompt as is, 1,500 tokens, "
                        "no stop; auto (default): bounded with --llm local, paper otherwise")
    p.add_argument("--temperature", type=bounded_float(0.0, 2.0), default=0.0,
                   help="llm-state: the model's temperature (default 0; the paper does not state its own)")
    p.add_argument("--prompts", choices=PROMPT_WORDINGS, default="own",
                   help="llm-state and anticipation: own (default): the project's prompt wording; paper: the "
                        "prompts the paper prints, verbatim (config/llm_state|anticipation/paper_prompts.yaml)")
    p.add_argument("--days", default=None,
                   help="anticipation: comma-separated days of config/anticipation/household.yaml (default: all)")
    p.add_argument("--world-knowledge", choices=("lazy", "both"), default="lazy",
                   help="bootstrapping: lazy (default): the paper's rows, world knowledge asked when a production first "
                        "needs it; both: also a row for this project's catalogue-prefetch extension, labelled as such")
    p.set_defaults(func=run)


def _per_object(data: dict, key: str) -> float | None:
    objects = data.get("objects") or []
    return round(data.get(key, 0) / len(objects), 2) if objects else None


def default_conditions(scene: str) -> str:
    """Table 1's conditions; STARS* where the scene carries footnote 3's context (tidy kitchen)."""
    from task_learning.world.scene import load_scene

    paper = "TBP,TBP+O,ST,STS,STAR,STARS"
    if load_scene(scene).selection_context:
        paper += ",STARS*"
    return paper + ",STARS+O"


def _standin_row(data: dict | None) -> dict | None:
    if data is None:
        return None
    return {k: v for k, v in data.items() if k != "objects"} | {"retrieved_per_object": _per_object(data, "retrieved")}


def _misplaced_option(args: argparse.Namespace) -> str | None:
    """The line that says an option was given to a paper it does not apply to (exit 2), or None."""
    if args.paper != "bootstrapping" and (getattr(args, "backend", "symbolic") != "symbolic"
                                          or getattr(args, "families", "find,slice,clear") != "find,slice,clear"
                                          or getattr(args, "world_knowledge", "lazy") != "lazy"):
        return "--backend, --families and --world-knowledge apply to --paper bootstrapping only"
    if args.paper != "llm-state" and (args.methods is not None or args.runs != 5 or args.temperature != 0.0
                                      or args.maps is not None):
        return "--methods, --runs, --temperature and --maps apply to --paper llm-state only"
    if args.paper not in ("llm-state", "bcr") and args.tasks is not None:
        return "--tasks applies to --paper llm-state and --paper bcr only"
    if args.paper not in ("llm-state", "bcr", "bootstrapping") and args.answers != "auto":
        return "--answers applies to --paper llm-state, bcr and bootstrapping only"
    if args.paper != "bcr" and args.trials != 50:
        return "--trials applies to --paper bcr only"
    if args.paper != "anticipation" and getattr(args, "days", None) is not None:
        return "--days applies to --paper anticipation only"
    if args.paper not in ("llm-state", "anticipation") and args.prompts != "own":
        return ("--prompts applies to --paper llm-state and --paper anticipation only (the STARS and "
                "bootstrapped-productions tables print no full prompts)")
    return None


def decodings(args: argparse.Namespace) -> list[tuple[str, str]]:
    """(decoding, row label suffix) of each set of rows: `--decoding auto` with a language model
    whose default is grounded (`--llm local`) prints the papers' protocols (free) and grounded
    rows one under the other; an explicit --decoding prints that one."""
    from task_learning.llm.constraints import Decoding, parse_decoding

    chosen = parse_decoding(args.decoding, args.llm)
    if args.decoding == "auto" and chosen is Decoding.GROUNDED:
        return [("free", ""), ("grounded", " grounded")]
    return [(chosen.value, " grounded" if chosen is Decoding.GROUNDED else "")]


def run(args: argparse.Namespace) -> int:
    misplaced = _misplaced_option(args)
    if misplaced:
        raise TaskLearningError(misplaced)
    if PAPERS.get(args.paper):
        import importlib

        if args.paper not in ("bcr", "bootstrapping", "llm-state"):
            decoding_of(args, supported=False, what=f"--paper {args.paper}")
        return int(importlib.import_module(PAPERS[args.paper]).run(args))
    conditions = [c.strip().upper() for c in (args.conditions or default_conditions(args.scene)).split(",")
                  if c.strip()]
    unknown = [c for c in conditions if c not in CONDITIONS]
    if unknown:  # the CLI's one error line: prefix, what was wrong, what is valid
        raise TaskLearningError(f"--conditions: unknown condition(s) {', '.join(unknown)} (valid: "
                                f"{', '.join(CONDITIONS)})")
    report = None if args.json else (lambda msg: print(msg, file=sys.stderr))
    from task_learning.llm.local_provider import shared_server

    offline = args.llm == "offline"
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="task_learning_exp_"))
    # A language model's rows share its temperature-0 answers across conditions (the same prompt
    # gets the same answer: llm/shared_answers.py); every row still counts what it sent.
    shared = None if offline else SharedAnswers()
    with LoadSampler() as load, shared_server(args.llm, llm_options(args)) as options:
        sets = [run_conditions(args.scene, conditions, llm=args.llm, workdir=workdir, seed=args.seed,
                               report=report, llm_options=options, shared=shared, decoding=decoding, label=label)
                for decoding, label in decodings(args)]
        rows = [row for together in zip(*sets) for row in together]  # a condition's free and grounded rows together
    # Beside a language model, the offline stand-in's rows for the same conditions (seconds).
    standin = None if offline else dict(run_conditions(args.scene, conditions, llm="offline",
                                                        workdir=workdir / "offline-standin", seed=args.seed))
    model = "" if offline else describe_model(args.llm, options)
    if args.json:
        print(json.dumps({
            "scene": args.scene,
            "scene_kind": scene_kind(args.scene),
            "llm": args.llm,
            "model": model,
            "tokenizer": tokenizer_for(args.llm),
            "note": OFFLINE_NOTE if offline else STANDIN_NOTE,
            "wall_s": round(load.wall_s, 1),
            "machine": load.summary(),
            "rows": [{"condition": label,
                      **{k: v for k, v in data.items() if k != "objects"},
                      "retrieved_per_object": _per_object(data, "retrieved"),
                      **({"offline_standin": _standin_row(standin.get(label))} if standin is not None else {}),
                      "paper": paper_row(args.scene, paper_key(label))}
                     for label, data in rows],
        }, indent=2))
    else:
        print(format_table(args.scene, rows, llm=args.llm, standin=standin))
        print()
        print(format_trials(rows, standin))
        if offline:
            print("\n" + textwrap.fill("Note: " + OFFLINE_NOTE, width=100))
        else:
            print("\n" + load.describe_command(model))
            print(textwrap.fill("Note: " + STANDIN_NOTE, width=100))
    if args.plot:
        path = plot_rows(args.scene, rows, args.plot, llm=args.llm)
        print(f"plot: {path}", file=sys.stderr)
    return 0
