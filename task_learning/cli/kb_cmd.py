"""`task-learning kb export|import|show`: the knowledge base as YAML, for review and transfer."""
from __future__ import annotations

import argparse
import sys

import yaml

from task_learning.config import load_yaml
from task_learning.kb import KnowledgeBase


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("kb", help="export, import or show the knowledge base")
    sub = p.add_subparsers(dest="kb_command", required=True)
    exp = sub.add_parser("export", help="write goals, policies and the question log as YAML")
    exp.add_argument("--db", required=True)
    exp.add_argument("--out", default="-", help="file, or - for stdout")
    imp = sub.add_parser("import", help="merge goals and policies from a YAML export")
    imp.add_argument("--db", required=True)
    imp.add_argument("file")
    show = sub.add_parser("show", help="list learned goals")
    show.add_argument("--db", required=True)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    with KnowledgeBase(args.db) as kb:
        if args.kb_command == "export":
            text = yaml.safe_dump(kb.export_dict(), sort_keys=False, allow_unicode=True)
            if args.out == "-":
                sys.stdout.write(text)
            else:
                with open(args.out, "w", encoding="utf-8") as fh:
                    fh.write(text)
            return 0
        if args.kb_command == "import":
            goals, policies = kb.import_dict(load_yaml(args.file), source=args.file)
            print(f"imported {goals} goals and {policies} policies into {args.db}")
            return 0
        for goal in kb.goals():
            mark = "confirmed" if goal.confirmed else goal.condition or "selected"
            print(f"{goal.task} | {goal.context}: {goal.text} [{mark}]")
        return 0
