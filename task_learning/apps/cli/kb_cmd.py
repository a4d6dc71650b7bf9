"""`task-learning kb export|import|show`: the knowledge base as YAML, for review and transfer."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from task_learning.errors import TaskLearningError
from task_learning.inputs.config import load_yaml
from task_learning.inputs.files import write_text_atomic
from task_learning.inputs.safe_text import printable
from task_learning.kb import KnowledgeBase
from task_learning.kb.store import Policy, StoredRoutine, imported_free_text
from task_learning.productions.memory import parse_production_import

if TYPE_CHECKING:
    from task_learning.anticipation.config import AnticipationConfig


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("kb", help="export, import or show the knowledge base",
                              description="The SQLite knowledge base as YAML, for review and transfer: show "
                                          "what was learned, export it, import an export (goals re-grounded), "
                                          "approve production rules.")
    sub = p.add_subparsers(dest="kb_command", required=True)
    exp = sub.add_parser("export", help="write goals, policies, the question log and the routines (task "
                                        "anticipation's experience) as YAML")
    exp.add_argument("--db", required=True)
    exp.add_argument("--out", default="-", help="file, or - for stdout")
    imp = sub.add_parser("import", help="merge goals, policies and routines from a YAML export (each goal's "
                                        "text is analysed again and must mean its literals; each policy must "
                                        "act only on its object and what its goal names, and is replayed only "
                                        "once an operator approves it; each routine's tasks and facts must be "
                                        "those of config/anticipation/anticipation.yaml; world statements and "
                                        "end conditions are not imported)")
    imp.add_argument("--db", required=True)
    imp.add_argument("--scene", default=None,
                     help="scene the goals belong to (default: the scene whose task is each goal's)")
    imp.add_argument("--trust-confirmations", action="store_true",
                     help="keep the file's operator confirmations (stored as imported_trusted, so "
                          "those goals are executed without asking again); without it every "
                          "imported goal is unconfirmed and asked again where confirmation is required")
    imp.add_argument("file")
    approve = sub.add_parser("approve", help="approve production rules for the planner (the bootstrapped-productions paper): an operator "
                                             "has read them (`kb show`); only approved ones run on a robot")
    approve.add_argument("--db", required=True)
    which = approve.add_mutually_exclusive_group(required=True)
    which.add_argument("--production", action="append", default=[], help="a production's name (repeatable)")
    which.add_argument("--all", action="store_true", help="every production in the knowledge base")
    show = sub.add_parser("show", help="list learned goals and production rules (with utility U and count N)")
    show.add_argument("--db", required=True)
    p.set_defaults(func=run)


READ_ONLY = ("export", "show")  # these only look: the file must exist and is never changed


def run(args: argparse.Namespace) -> int:
    if args.kb_command == "import":
        return import_file(args)
    with KnowledgeBase(args.db, read_only=args.kb_command in READ_ONLY) as kb:
        if args.kb_command == "export":
            text = yaml.safe_dump(kb.export_dict(), sort_keys=False, allow_unicode=True)
            if args.out == "-":
                sys.stdout.write(text)
            else:
                write_export(Path(args.out), text)
            return 0
        if args.kb_command == "approve":
            existing = [r["name"] for r in kb.productions()]
            names = existing if args.all else args.production
            unknown = [n for n in names if n not in existing]
            if unknown:  # nothing approved when any name is wrong
                raise TaskLearningError(f"no production named {', '.join(repr(n) for n in unknown)} in {args.db} "
                                        "(see `task-learning kb show`)")
            for name in names:
                kb.approve_production(name, "operator")
            print(f"approved {len(names)} production(s) in {args.db}")
            return 0
        for goal in kb.goals():
            print(f"{goal.task} | {goal.context}: {goal.text} [{goal.condition or '-'}, "
                  f"confirmation {goal.confirmation.value}{_confirmed_by(goal.provenance)}]")
        show_productions(kb)
        show_answers(kb)
        return 0


def import_file(args: argparse.Namespace) -> int:
    """`kb import`: the file is read and its keys checked before the knowledge base is opened,
    so a missing or foreign file creates nothing; an import that fails into a knowledge base it
    created leaves none behind (a half-made empty base would look like an import of nothing)."""
    from task_learning.grounding.goal_check import ImportChecker
    from task_learning.kb.store import check_export_keys, remove_knowledge_base

    data = load_yaml(args.file)
    check_export_keys(data, args.file)
    productions = parse_production_import(data, source=args.file)  # all validated first
    checker = ImportChecker(args.file, args.scene)
    created = not Path(args.db).exists()
    try:
        with KnowledgeBase(args.db) as kb:
            counts = kb.import_dict(data, source=args.file, trust_confirmations=args.trust_confirmations,
                                    verify=checker, verify_routine=RoutineChecker(args.file),
                                    verify_policy=PolicyChecker(args.file))
            kb.import_productions(productions)
    except BaseException:
        if created:
            remove_knowledge_base(args.db)
        raise
    trust = "kept as imported_trusted" if args.trust_confirmations else "dropped"
    left_out = imported_free_text(data)
    print(f"imported {counts.goals} goals, {counts.policies} policies ({counts.policies_unreviewed} to be "
          f"approved by an operator before reuse), {counts.routines} new routines and {len(productions)} "
          f"productions (unapproved) into {args.db} (confirmations {trust}); left out as free text nobody "
          f"reviewed: the productions' English and provenance, {left_out.get('world_statements', 0)} world "
          f"statements, {left_out.get('family_end_conditions', 0)} family end conditions")
    return 0


def _when(stamp: Any) -> str:
    import datetime

    try:
        return datetime.datetime.fromtimestamp(float(stamp)).isoformat(sep=" ", timespec="seconds")
    except (TypeError, ValueError, OverflowError, OSError):
        return "?"


def _confirmed_by(provenance: Any) -> str:
    """", by alice via /operator_terminal_ab12 at 2026-11-25 14:03:07" from a goal's provenance."""
    by = provenance.get("confirmed_by") if isinstance(provenance, dict) else None
    if isinstance(by, str) and by:  # a name alone (written before answers' provenance was kept)
        return f", by {printable(by, 60)}"
    if not isinstance(by, dict) or not (by.get("operator") or by.get("answered_by")):
        return ""
    who = printable(str(by.get("operator") or by.get("answered_by")), 60)
    client = printable(str(by.get("client") or ""), 80)
    return f", by {who}{' via ' + client if client else ''} at {_when(by.get('answered_at'))}"


def show_answers(kb: KnowledgeBase) -> None:
    """Every answered question with its provenance: who (a paired operator when verified by the
    oversight node), through which client, when, and the confirmation id the node issued."""
    rows = [r for r in kb.question_log() if r.get("answer")]
    if not rows:
        return
    print(f"answers ({len(rows)}):")
    for r in rows:
        how = "paired operator" if r.get("verified") else ("in-process" if not r.get("asked_by") else "unverified")
        client = f" via {printable(str(r['client']), 80)}" if r.get("client") else ""
        asked = f" asked by {printable(str(r['asked_by']), 40)}," if r.get("asked_by") else ""
        confirmation = f", confirmation {r['confirmation_id']}" if r.get("confirmation_id") else ""
        print(f"  [{r['request_id']}]{asked} {printable(str(r['question']), 200)} -> {r['answer']} by "
              f"{printable(str(r['operator']), 60)} ({how}){client} at {_when(r.get('answered_at'))}{confirmation}")


class PolicyChecker:
    """`verify_policy(policy, key)` for KnowledgeBase.import_dict: a policy made of anything but
    robot actions, or acting on anything but its own object, its place and what its goal names
    (planning.policy_review.policy_problem), refuses the whole file, naming the entry."""

    def __init__(self, file: str) -> None:
        self.file = file

    def __call__(self, policy: Policy, key: str) -> None:
        from task_learning.errors import ConfigError
        from task_learning.planning.policy_review import policy_problem

        problem = policy_problem(policy)
        if problem:
            raise ConfigError(self.file, key, f"refused: {problem}")


class RoutineChecker:
    """`verify_routine(routine, key)` for KnowledgeBase.import_dict: a routine's day, facts and
    tasks must be those of the anticipation config (the validator counts tasks by these names), so
    a misspelt task never becomes experience."""

    DAYS = ("weekday", "weekend")

    def __init__(self, file: str) -> None:
        self.file = file
        self._cfg: AnticipationConfig | None = None

    @property
    def cfg(self) -> AnticipationConfig:
        if self._cfg is None:  # loaded only when the file has routines
            from task_learning.anticipation.config import load_anticipation_config

            self._cfg = load_anticipation_config()
        return self._cfg

    def __call__(self, routine: StoredRoutine, key: str) -> None:
        from task_learning.errors import ConfigError

        DAYS = self.DAYS
        if routine.day not in DAYS:
            raise ConfigError(self.file, f"{key}.day", f"unknown day {routine.day!r} (known: {', '.join(DAYS)})")
        for fact in routine.facts:
            if fact not in self.cfg.facts:
                raise ConfigError(self.file, f"{key}.facts", f"unknown fact {fact!r} (known: "
                                  f"{', '.join(self.cfg.facts)}; file {self.cfg.source})")
        for task in routine.tasks:
            if task not in self.cfg.tasks:
                raise ConfigError(self.file, f"{key}.tasks", f"{task!r} is not a task of the list "
                                  f"({', '.join(self.cfg.tasks)}; file {self.cfg.source})")


def write_export(path: Path, text: str) -> None:
    """Write atomically (files.write_text_atomic: a temporary file in the same folder, then
    rename): a failed export leaves no truncated file; a directory, a device such as /dev/full,
    a full disk or an unwritable place is a one-line error naming the file."""
    if path.is_dir():
        raise TaskLearningError(f"cannot export to {path}: it is a directory (give a file name, e.g. {path / 'kb.yaml'})")
    write_text_atomic(path, text)


def show_productions(kb: KnowledgeBase) -> None:
    """Productions (the bootstrapped-productions paper) by task family, highest utility first; each row validated as it is
    shown (one that does not validate is named as such, never run)."""
    from task_learning.productions.language import RuleError, production_from_dict

    records = kb.bootstrap_records()
    if records:  # shown even when nothing was learned: a model that learned nothing still bootstrapped
        print(f"bootstrapped families ({len(records)}):")
        for family, r in records.items():
            print(f"  {family}: {r.get('instances')} instances, {r.get('llm_decisions')} LLM decisions, "
                  f"{r.get('learned')} productions learned, {'converged' if r.get('converged') else 'not converged'} "
                  f"(llm {r.get('llm')}, answers {r.get('answers')}, in {r.get('train_scene')})")
    rows = kb.productions()
    if not rows:
        return
    ends = kb.family_end_conditions()
    print(f"productions ({len(rows)}):")
    for task in dict.fromkeys(r["task"] for r in rows):
        print(f"  {task}" + (f"  [end condition: {ends[task]}]" if task in ends else ""))
        for row in sorted((r for r in rows if r["task"] == task), key=lambda r: -r["utility"]):
            try:
                rule = production_from_dict(row["rule"], where=row["name"])
                text = rule.describe()
            except RuleError as exc:
                text = f"INVALID, not loaded: {exc}"
            source = row["provenance"].get("llm", "") if isinstance(row["provenance"], dict) else ""
            print(f"    {row['name']}: U={row['utility']:.4f} N={row['count']} ({source or 'unknown source'}; "
                  f"approval {row['approval']})")
            print(f"      {text}")
