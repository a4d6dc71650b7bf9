"""The LLM side of the bootstrapped-productions paper: action selection, and while bootstrapping production generation.

English rule -> structured rule -> replay check on the state it was made in (it must apply and
give the chosen option) -> revision with the error fed back, at most `max_revisions` rounds
(counted in `self.stats`); a rule that never passes is not stored. Then, per task family, the
critic: end condition (shown with the family's subtask option from then on) and keep / modify /
remove for each rule. Every call goes through the one LLMClient.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any, Sequence

from task_learning.llm.answer_bounds import AnswerBound, bound_for
from task_learning.llm.base import NEXT_TURN, LLMRequest, flatten_conversation
from task_learning.llm.client import LLMClient
from task_learning.llm.constraints import Constraint
from task_learning.productions import grounded, prompts
from task_learning.productions.agent import Advice, Decision, ProductionSet
from task_learning.productions.knowledge import EnvKnowledge, WorldKnowledge, name_equal
from task_learning.productions.language import (
    DONE,
    QUIT,
    SUBTASK,
    MatchContext,
    Production,
    RuleError,
    check_replay,
    parse_rule_text,
    same_option,
    task_binding,
)

log = logging.getLogger(__name__)
MAX_TOKENS = {prompts.SELECTION: 900, prompts.ENGLISH: 600, prompts.RULE: 700, prompts.REVISION: 700,
              prompts.CRITIC: 700, prompts.STATEMENT: 5}
# Where an answer's protocol ends at a known line, the model is stopped there: the selection answer's
# last section is [End] (the paper's appendix), and a base model that does not stop by itself would
# otherwise run on to max_tokens, as it would past its next turn (docs/llm.md "Stop sequences"). The
# other answers end at no fixed delimiter.
STOP = {prompts.SELECTION: (prompts.SELECTION_END, NEXT_TURN)}
# The prompt types a base model's bounded answers cover (config/prompts/bounded_answers.yaml, under
# `answers="bounded"`): measured, the local base model never wrote the selection's [Option
# Suggestion] section and copied [Possible Options] to its 900 tokens, and its English-rule, rule and
# revision answers copied their instructions to 600-700 tokens (docs/llm.md). The critic (once per
# family that learned a production) and the one-word world statements keep their requests.
BOUNDED = {prompts.SELECTION: "production_selection", prompts.ENGLISH: "production_english",
           prompts.RULE: "production_rule", prompts.REVISION: "production_revision"}


def _bounded_text(bound: AnswerBound, text: str) -> str:
    """What the parser reads of a bounded answer: the cue's last line (the section's heading) and
    the model's text; an answer that opens with a section of its own is read as it is (the offline
    stand-in writes the paper's whole answer, whatever the request's cue)."""
    return text if text.lstrip().startswith("[") else bound.answer(text)


@dataclass
class Family:
    pattern: str  # "find a/an <object>"
    end_condition: str = ""  # from the critic; a family with one is offered as a subtask option


@dataclass
class GenerationStats:
    generated: int = 0
    rejected: int = 0
    revisions: int = 0
    replay_failures: list[str] = field(default_factory=list)
    # grounded decoding: choices no rule of the language replays to on their state (no rule asked)
    unwritable: int = 0


class LLMAdvisor:
    """Advisor over an LLMClient. `learn`: also generate a production for each choice."""

    def __init__(self, client: LLMClient, families: Sequence[Family], *, learn: bool = False,
                 max_revisions: int = 3, max_invalid: int = 2, answers: str = "paper",
                 decoding: str = "free") -> None:
        self.client = client
        self.answers = answers  # paper | bounded (a base model's answers: llm/answer_bounds.py)
        # grounded: bounded answers constrained to what the agent can use (productions/grounded.py)
        self.grounded = decoding == "grounded"
        self.families = list(families)
        self.learn = learn
        self.max_revisions = max_revisions
        self.max_invalid = max_invalid
        self.stats = GenerationStats()
        self.scope = "productions"  # what the client's per-scope request cap counts (set per task)

    # ------------------------------------------------------------------------------ requests
    def _ask(self, kind: str, messages: list[tuple[str, str]], context: dict[str, Any],
             constraint: Constraint | None = None) -> str:
        """One answer; `constraint` (grounded decoding) applies to bounded answers only: the
        grammars are written for the text after their cue."""
        bound = bound_for(BOUNDED[kind], self.answers) if kind in BOUNDED else None
        if bound is None:
            request = LLMRequest(prompt_type=kind, messages=tuple(messages), max_tokens=MAX_TOKENS[kind],
                                 stop=STOP.get(kind, ()), context=context, scope=self.scope)
        else:  # the same context: the offline stand-in answers the same
            request = LLMRequest(prompt_type=kind, prompt=bound.prompt(flatten_conversation(messages)),
                                 max_tokens=bound.max_tokens, stop=bound.stop, context=context, scope=self.scope,
                                 constraint=constraint if self.grounded else None)
        response = self.client.complete(request)
        if not response.ok:
            log.warning("%s request failed: %s", kind, response.error)
            return ""
        return response.text if bound is None else _bounded_text(bound, response.text)

    def patterns_for(self, task: str) -> list[str]:
        """The task patterns a rule made for `task` may have (grounded decoding): the families'
        that bind it (measured: offered every family's, the model wrote an explore decision's
        rule for 'slice a/an <object>'); every family's when none does."""
        own = [f.pattern for f in self.families if task_binding(f.pattern, task) is not None]
        return own or [f.pattern for f in self.families]

    def subtask_options(self, task: str) -> list[tuple[str, str]]:
        return [(f.pattern, f.end_condition) for f in self.families
                if f.end_condition and task_binding(f.pattern, task) is None]

    def allowed(self, option: str, decision: Decision) -> bool:
        if any(name_equal(option, b) for b in decision.blacklist):
            return False
        if option in (DONE, QUIT) or any(same_option(option, o) for o in decision.options):
            return True
        if option.startswith(SUBTASK):
            sub = option[len(SUBTASK):].strip()
            return any(task_binding(p, sub) is not None and "<" not in sub
                       for p, _ in self.subtask_options(decision.task))
        return False

    # ------------------------------------------------------------------------------ selection
    def selection_messages(self, decision: Decision) -> list[tuple[str, str]]:
        user = prompts.selection_user_prompt(decision.task, decision.env, decision.history, decision.options,
                                             self.subtask_options(decision.task), decision.blacklist)
        return [("system", prompts.SELECTION_SYSTEM), ("user", user)]

    def selection_context(self, decision: Decision) -> dict[str, Any]:
        return {"task": decision.task, "env": decision.env.to_dict(), "options": list(decision.options),
                "subtasks": [p for p, _ in self.subtask_options(decision.task)],
                "blacklist": list(decision.blacklist), "reason": decision.reason}

    def advise(self, decision: Decision) -> Advice | None:
        messages = self.selection_messages(decision)
        context = self.selection_context(decision)
        for attempt in range(self.max_invalid + 1):
            text = self._ask(prompts.SELECTION, messages, context | {"attempt": attempt},
                             grounded.selection(decision.options, decision.blacklist))
            answer = prompts.parse_selection(text) if text else None
            if answer is not None and self.allowed(answer.option, decision):
                production = self.generate(decision, messages, text, answer) if self.learn else None
                return Advice(answer.option, answer.purpose, production)
            said = answer.option if answer else "(no option found)"
            messages = messages + [("assistant", text), ("user", f"{said!r} is not one of the possible options "
                                    "or is blacklisted. Choose again from [Possible Options].")]
        return None

    # ------------------------------------------------------------------------------ generation
    def generate(self, decision: Decision, messages: list[tuple[str, str]], selection_text: str,
                 answer: prompts.SelectionAnswer) -> Production | None:
        rule_constraint = grounded.structured_rule(self.patterns_for(decision.task), decision.env,
                                                   [f.pattern for f in self.families], answer.option,
                                                   decision.task) if self.grounded else None
        if self.grounded and rule_constraint is None:
            self.stats.unwritable += 1
            log.info("no rule of the language replays to %r on this state: none asked", answer.option)
            return None
        conversation = messages + [("assistant", selection_text), ("user", prompts.ENGLISH_INSTRUCTIONS)]
        base = {"task": decision.task, "env": decision.env.to_dict(), "option": answer.option}
        english_text = self._ask(prompts.ENGLISH, conversation, base,
                                 grounded.english_rule(self.patterns_for(decision.task), [f.pattern for f in self.families],
                                                       answer.option))
        english = prompts.parse_generalized_rule(english_text)
        if not english:
            return None
        rule_messages = [("system", prompts.rule_system_prompt()),
                         ("user", english_text + "\n\n" + prompts.RULE_INSTRUCTIONS)]
        rule_text = self._ask(prompts.RULE, rule_messages, base | {"english": english}, rule_constraint)
        ctx = MatchContext(decision.task, decision.env, decision.world)
        production = self.check_and_revise(rule_text, ctx, answer.option, messages[1][1], base | {"english": english})
        if production is None:
            return None
        production.english = english
        production.provenance = {
            "created_at": time.time(), "llm": self.client.provider_name, "task": decision.task,
            "option": answer.option, "state": decision.env.to_dict(),
            "conversation": [list(m) for m in conversation] + [["assistant", english_text]],
            "rule_answer": rule_text, "revisions": production.provenance.get("revisions", 0),
            "replay_errors": production.provenance.get("replay_errors", []),
        }
        self.stats.generated += 1
        return production

    def check_and_revise(self, rule_text: str, ctx: MatchContext, option: str, selection_user: str,
                         context: dict[str, Any]) -> Production | None:
        """Parse, replay, revise: the first version that passes, or None (never stored)."""
        errors: list[str] = []
        for round_ in range(self.max_revisions + 1):
            production: Production | None = None
            try:
                production = parse_rule_text(rule_text, where="rule")
                error = check_replay(production, ctx, option)
            except RuleError as exc:
                error = f"RuleError: {exc}"
            if production is not None and not error:
                production.provenance = {"revisions": round_, "replay_errors": errors}
                return production
            errors.append(error)
            self.stats.replay_failures.append(error)
            if round_ == self.max_revisions:
                break
            self.stats.revisions += 1
            user = (selection_user + "\n\n[Expected Return of the precondition]\n(True, \"\") and the effect "
                    f"\"{option}\"\n\n[Your Rule]\n{rule_text}\n\n[Your Rule Return]\n{error}\n\n"
                    + prompts.REVISION_INSTRUCTIONS)
            rule_text = self._ask(prompts.REVISION, [("system", prompts.rule_system_prompt()), ("user", user)],
                                  context | {"error": error, "round": round_ + 1},
                                  grounded.structured_rule(self.patterns_for(ctx.task), ctx.env,
                                                           [f.pattern for f in self.families], option, ctx.task))
        self.stats.rejected += 1
        log.info("rule rejected after %d revision(s): %s", self.max_revisions, errors[-1] if errors else "")
        return None

    # ------------------------------------------------------------------------------ critic
    def critique(self, family: Family, productions: ProductionSet, world: WorldKnowledge) -> dict[str, str]:
        """Summarise the family's end condition; keep / modify / remove each of its rules. A
        modified rule is regenerated from its new English and must pass the replay check on the
        state it was first made in, else the old one stays."""
        own = [p for p in productions if p.task == family.pattern]
        if not own:
            return {}
        text = self._ask(prompts.CRITIC, [("system", prompts.CRITIC_SYSTEM),
                                          ("user", prompts.critic_prompt(family.pattern, [(p.name, p.english, p.effect)
                                                                                          for p in own]))],
                         {"family": family.pattern, "rules": [{"name": p.name, "english": p.english,
                                                               "effect": p.effect} for p in own]})
        answer = prompts.parse_critic(text)
        if answer.end_condition:
            family.end_condition = answer.end_condition
        outcome: dict[str, str] = {}
        for p in own:
            verdict, english = answer.verdicts.get(p.name, ("keep", ""))
            if verdict == "remove":
                productions.remove(p.name)
            elif verdict == "modify" and english and p.provenance.get("state"):
                state = EnvKnowledge.from_dict(p.provenance["state"])
                ctx = MatchContext(str(p.provenance.get("task", "")), state, world)
                option = str(p.provenance.get("option", ""))
                constraint = grounded.structured_rule(self.patterns_for(ctx.task), state,
                                                      [f.pattern for f in self.families], option, ctx.task)
                rule_text = "" if self.grounded and constraint is None else self._ask(
                    prompts.RULE, [("system", prompts.rule_system_prompt()),
                                   ("user", f"[Generalized Rule]\n{english}\n\n" + prompts.RULE_INSTRUCTIONS)],
                    {"english": english, "task": ctx.task, "env": p.provenance["state"], "option": option}, constraint)
                new = self.check_and_revise(rule_text, ctx, option, "", {"english": english}) if rule_text else None
                if new is None:
                    verdict = "keep (modification failed its replay check)"
                else:
                    p.conditions, p.effect, p.english = new.conditions, new.effect, english
                    productions.changed(p)
            outcome[p.name] = verdict
        return outcome

    # ------------------------------------------------------------------------------ statements
    def oracle(self, statement: str) -> bool | None:
        text = self._ask(prompts.STATEMENT, [("system", "Answer True or False."),
                                             ("user", f"Is this statement true in a typical household? {statement}")],
                         {"statement": statement})
        return prompts.parse_truth(text)
