"""Procedural memory in the knowledge base: productions with provenance, U and N, validated on
every load (a row that does not validate is refused by name, never run), and the world-knowledge
statements the LLM answered."""
from __future__ import annotations

from typing import Any, Mapping

from task_learning.errors import ConfigError
from task_learning.kb.store import KnowledgeBase
from task_learning.productions.agent import ProductionSet
from task_learning.productions.language import Production, RuleError, production_from_dict
from task_learning.productions.utility import utility_problem


def production_record(production: Production, approval: str = "none") -> dict[str, Any]:
    return {"name": production.name, "task": production.task, "rule": production.to_dict(),
            "english": production.english, "utility": production.utility, "count": production.count,
            "provenance": production.provenance, "approval": approval}


def unreviewed_import(row: Mapping[str, Any]) -> bool:
    """A production `kb import` brought in that no operator approved yet: never used (not by
    the planner, not by bootstrapping, whose prompts would carry its text), until approved."""
    provenance = row.get("provenance")
    return row.get("approval", "none") == "none" and isinstance(provenance, dict) and "imported_from" in provenance


def load_productions(kb: KnowledgeBase, *, unreviewed_imports: bool = True) -> list[Production]:
    """The stored productions, validated (`unreviewed_imports` False: without those nobody
    approved since `kb import` brought them in)."""
    out = []
    for row in kb.productions():
        if not unreviewed_imports and unreviewed_import(row):
            continue
        try:
            production = production_from_dict(row["rule"], where=f"{kb.path}: production {row['name']!r}")
        except RuleError as exc:
            raise RuleError(f"{exc} (the stored rule does not validate; it is not loaded)") from None
        problem = utility_problem(row["utility"], row["count"])
        if problem:
            raise RuleError(f"{kb.path}: production {row['name']!r}: {problem} (it is not loaded)")
        production.english = row["english"]
        production.utility = float(row["utility"])
        production.count = int(row["count"])
        production.provenance = dict(row["provenance"])
        out.append(production)
    return out


def persistent_set(kb: KnowledgeBase) -> ProductionSet:
    """The knowledge base's productions (imported ones once approved); every new or updated
    one is written back at once."""
    return ProductionSet(load_productions(kb, unreviewed_imports=False), on_change=lambda p: kb.save_production(production_record(p)),
                         on_remove=kb.delete_production,
                         on_flush=lambda ps: kb.update_production_utilities([(p.name, p.utility, p.count) for p in ps]))


def parse_production_import(data: Any, *, source: str = "<import>") -> list[dict[str, Any]]:
    """The productions of an export (`kb import`), as records for KnowledgeBase.import_productions,
    each validated by the rule language and its utility and count by their range (a rule that
    does not validate refuses the whole import, naming it). Only the rule and its numbers are
    taken: the file's English description and provenance (the conversation, the state) are free
    text that would reach the operator's approval question and later prompts unreviewed, so they
    are dropped; every imported production is unapproved. Nothing is written."""
    items = (data.get("productions") if isinstance(data, dict) else None) or []
    if not isinstance(items, list):
        raise ConfigError(source, "productions", f"expected a list, got {type(items).__name__}")
    records = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise ConfigError(source, f"productions[{i}]", "expected a mapping")
        try:
            rule = production_from_dict(item.get("rule"), where="rule")
        except RuleError as exc:
            raise ConfigError(source, f"productions[{i}]", str(exc)) from None
        utility, count = item.get("utility", 0.0), item.get("count", 0)
        problem = utility_problem(utility, count)
        if problem:
            raise ConfigError(source, f"productions[{i}] ({rule.name})", problem)
        records.append({"name": rule.name, "task": rule.task, "rule": rule.to_dict(), "english": "",
                        "utility": float(utility), "count": int(count),
                        "provenance": {"imported_from": source}, "approval": "none"})
    return records
