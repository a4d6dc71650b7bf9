"""Procedural memory in the knowledge base: productions with provenance, U and N, validated on
every load (a row that does not validate is refused by name, never run), and the world-knowledge
statements the LLM answered."""
from __future__ import annotations

from task_learning.kb.store import KnowledgeBase
from task_learning.productions.agent import ProductionSet
from task_learning.productions.language import Production, RuleError, production_from_dict


def production_record(production: Production, approval: str = "none") -> dict:
    return {"name": production.name, "task": production.task, "rule": production.to_dict(),
            "english": production.english, "utility": production.utility, "count": production.count,
            "provenance": production.provenance, "approval": approval}


def load_productions(kb: KnowledgeBase) -> list[Production]:
    out = []
    for row in kb.productions():
        try:
            production = production_from_dict(row["rule"], where=f"{kb.path}: production {row['name']!r}")
        except RuleError as exc:
            raise RuleError(f"{exc} (the stored rule does not validate; it is not loaded)") from None
        production.english = row["english"]
        production.utility = float(row["utility"])
        production.count = int(row["count"])
        production.provenance = dict(row["provenance"])
        out.append(production)
    return out


def persistent_set(kb: KnowledgeBase) -> ProductionSet:
    """The knowledge base's productions; every new or updated one is written back at once."""
    return ProductionSet(load_productions(kb), on_change=lambda p: kb.save_production(production_record(p)),
                         on_remove=kb.delete_production,
                         on_flush=lambda ps: kb.update_production_utilities([(p.name, p.utility, p.count) for p in ps]))
