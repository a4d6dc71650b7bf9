"""Everything the analysis knows, loaded from config/grounding once and reused for every sentence."""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path

from task_learning.errors import ConfigError
from task_learning.grounding.affordances import AffordanceKB, load_affordances
from task_learning.grounding.grammar import Grammar, load_grammar
from task_learning.grounding.lexicon import Lexicon, load_lexicon
from task_learning.grounding.world_index import StateIndex
from task_learning.inputs.config import config_path
from task_learning.types import WorldState


@dataclass
class GroundingKnowledge:
    """Lexicon + grammar + affordance knowledge base, and the index of the last analysed state."""

    lexicon: Lexicon
    grammar: Grammar
    affordances: AffordanceKB
    _last: tuple[WorldState, int, StateIndex] | None = field(default=None, repr=False)

    @classmethod
    def load(cls, directory: str | Path | None = None) -> "GroundingKnowledge":
        """Load config/grounding (or `directory`); cached per directory, so callers share one."""
        folder = Path(directory) if directory is not None else config_path("grounding")
        return _load_cached(str(folder.resolve()))

    @classmethod
    def from_files(cls, lexicon: str | Path, grammar: str | Path,
                   affordances: str | Path) -> "GroundingKnowledge":
        lex = load_lexicon(lexicon)
        kb = load_affordances(affordances)
        for word, state in lex.states.items():
            if state.needs not in kb.affordances:
                raise ConfigError(lex.source, f"states.{word}.needs",
                                  f"unknown affordance {state.needs!r} (known in {kb.source}: "
                                  f"{', '.join(sorted(kb.affordances))})")
        return cls(lexicon=lex, grammar=load_grammar(grammar), affordances=kb)

    def index(self, state: WorldState) -> StateIndex:
        """The index of `state`, rebuilt only when a different state (or object count) comes in."""
        last = self._last
        if last is not None and last[0] is state and last[1] == len(state.objects):
            return last[2]
        built = StateIndex.build(state, self.lexicon, self.affordances)
        self._last = (state, len(state.objects), built)
        return built


@functools.lru_cache(maxsize=8)
def _load_cached(folder: str) -> GroundingKnowledge:
    base = Path(folder)
    return GroundingKnowledge.from_files(base / "lexicon.yaml", base / "grammar.yaml",
                                         base / "affordances.yaml")
