"""The grammar a model's production rule is decoded in under `--decoding grounded`
(productions/grounded.py): generated from the rule language's own definition (its predicate table
and arities, the motor verbs, the effect kinds) and the robot's knowledge (the kinds it perceived),
so every text it allows is read by the rule parser; and the rules the language is written in
(the offline stand-in's) are inside it. The GBNF is read here by a small reader of the subset the
generator writes (literals, character classes, groups, alternatives, ?, {m,n}, rule names):
as a regular expression to test membership, and as a random generator to test what it allows."""
from __future__ import annotations

import json
import random
import re
import string
from pathlib import Path

import pytest
import yaml

from task_learning.productions import grounded
from task_learning.productions.knowledge import EnvKnowledge, Receptacle, Thing, WorldKnowledge
from task_learning.productions.language import (
    MOTOR_FORMS,
    PREDICATES,
    MatchContext,
    RuleError,
    check_replay,
    parse_condition,
    parse_rule_text,
    validate_effect,
)

PATTERNS = ["explore <receptacle>", "find a/an <object>", "pick and place a/an <object> in/on a/an <receptacle>"]
RULE_CUE = '{"name": "'
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|\[(?:[^\]\\]|\\.)*\]|\{\d+,\d+\}|[()|?*]|[a-z][a-z0-9_]*')


def _env() -> EnvKnowledge:
    return EnvKnowledge(
        location="CounterTop|+01.00|+00.90|-00.50",
        receptacles={"CounterTop|+01.00|+00.90|-00.50": Receptacle("CounterTop|+01.00|+00.90|-00.50", "CounterTop"),
                     "Fridge|-02.10|+00.00|+01.07": Receptacle("Fridge|-02.10|+00.00|+01.07", "Fridge", openable=True)},
        objects={"Apple|+00.20|+00.95|-00.40": Thing("Apple|+00.20|+00.95|-00.40", "Apple")})


class Grammar:
    """A GBNF grammar without recursion, as the generator writes it."""

    def __init__(self, text: str) -> None:
        self.rules = {}
        for line in text.strip().splitlines():
            name, _, body = line.partition(" ::= ")
            self.rules[name.strip()] = _TOKEN.findall(body)

    def _parse(self, tokens: list[str], i: int = 0) -> tuple[tuple, int]:
        """An alternation of sequences of (atom, (min, max)) up to ')' or the end."""
        alternatives, sequence = [], []
        while i < len(tokens) and tokens[i] != ")":
            tok = tokens[i]
            if tok == "|":
                alternatives.append(sequence)
                sequence, i = [], i + 1
                continue
            if tok == "(":
                atom, i = self._parse(tokens, i + 1)
                i += 1  # ')'
            else:
                atom, i = ("tok", tok), i + 1
            repeat = (1, 1)
            if i < len(tokens) and tokens[i] == "?":
                repeat, i = (0, 1), i + 1
            elif i < len(tokens) and tokens[i].startswith("{"):
                low, high = tokens[i][1:-1].split(",")
                repeat, i = (int(low), int(high)), i + 1
            sequence.append((atom, repeat))
        alternatives.append(sequence)
        return ("alt", alternatives), i

    def tree(self, rule: str = "root") -> tuple:
        return self._parse(self.rules[rule])[0]

    def regex(self, node: tuple | None = None) -> str:
        node = node or self.tree()
        if node[0] == "tok":
            tok = node[1]
            if tok.startswith('"'):
                return re.escape(json.loads(tok))
            if tok.startswith("["):
                return tok
            return self.regex(self.tree(tok))
        parts = []
        for sequence in node[1]:
            parts.append("".join(f"(?:{self.regex(atom)}){{{low},{high}}}" for atom, (low, high) in sequence))
        return "(?:" + "|".join(parts) + ")"

    def sample(self, rng: random.Random, node: tuple | None = None) -> str:
        node = node or self.tree()
        if node[0] == "tok":
            tok = node[1]
            if tok.startswith('"'):
                return json.loads(tok)
            if tok.startswith("["):
                pool = [c for c in string.ascii_letters + string.digits + " <>/'_|:-.\"\\" if re.fullmatch(tok, c)]
                return rng.choice(pool)
            return self.sample(rng, self.tree(tok))
        sequence = rng.choice(node[1])
        return "".join(self.sample(rng, atom) for atom, (low, high) in sequence
                       for _ in range(rng.randint(low, min(high, low + 3))))


def test_the_grammar_is_generated_from_the_predicate_table_the_motor_verbs_and_the_kinds_perceived():
    text = grounded.rule_language(PATTERNS, _env())
    predicates = text.split("predicate ::= ", 1)[1].splitlines()[0]
    for predicate in PREDICATES.values():
        assert f'"{predicate.name}(' in predicates
    assert '"located(" arg ", " arg ")"' in predicates and '"gripper_empty()"' in predicates
    assert 'knows(\\\\\\"" statement' in predicates  # the statement quoted inside the JSON string
    motor = text.split("motor ::= ", 1)[1].splitlines()[0]
    verbs = [m.split('"')[1].strip() for m in re.sub(r"\([^)]*\)", "", motor).split(" | ")]
    assert verbs == [v for v, _ in MOTOR_FORMS]
    assert '"put " effectvariable " " ("in" | "on") " " effectvariable' in motor
    assert 'kind ::= "Apple" | "CounterTop" | "Fridge"\n' in text  # kinds, never an instance's id
    assert "|+00" not in text
    assert 'task ::= "explore <receptacle>" | "find a/an <object>" | "pick and place' in text
    variable = text.split("variable ::= ", 1)[1].splitlines()[0]
    assert variable == '"<k>" | "<object>" | "<r>" | "<receptacle>" | "<t>" | "<x>"'  # no <strong>, no <b>
    assert '"is(" arg ", " boundkind ")"' in predicates and 'boundkind ::= kind | "<object>" | "<receptacle>"' in text


def test_the_rules_the_language_is_written_in_are_inside_the_grammar():
    """The offline stand-in's rules (config/offline_model/productions.yaml) of at most five plain
    conditions and the grammar's variable names, with the kinds they name perceived."""
    data = yaml.safe_load(Path("config/offline_model/productions.yaml").read_text())
    names = set(grounded.variables(PATTERNS + ["slice a/an <object>", "clear the countertops"]))
    rules = [s["rule"] for s in data["strategies"]
             if len(s["rule"]["conditions"]) <= grounded.MAX_CONDITIONS
             and all(isinstance(c, str) and "none(" not in c for c in s["rule"]["conditions"])
             and set(re.findall(r"<(\w+)>", json.dumps(s["rule"]))) <= names]
    assert len(rules) >= 8
    env = _env()
    for kind in ("Knife", "Cabinet", "SinkBasin", "StoveBurner", "Drawer", "Lettuce"):
        env.receptacles[kind] = Receptacle(kind, kind)
    patterns = sorted({r["task"] for r in rules})
    language = re.compile(Grammar(grounded.rule_language(patterns, env)).regex())
    for rule in rules:
        text = json.dumps({k: rule[k] for k in ("name", "task", "conditions", "effect")})
        assert language.fullmatch(text[len(RULE_CUE):]), text
        parse_rule_text(text)


@pytest.mark.parametrize("seed", range(5))
def test_every_text_the_grammar_allows_is_read_by_the_rule_parser(seed):
    """Random texts of the grammar: JSON with the four fields, a family's task, each condition a
    predicate of the table with its arity, an effect of the language. Only whether its variables
    are bound in order is left to the parser's check (and the replay), as the grammar cannot know it."""
    grammar = Grammar(grounded.rule_language(PATTERNS, _env()))
    rng = random.Random(seed)
    for _ in range(40):
        text = RULE_CUE + grammar.sample(rng)
        data = json.loads(text)
        assert list(data) == ["name", "task", "conditions", "effect"] and data["task"] in PATTERNS
        assert len(data["conditions"]) <= grounded.MAX_CONDITIONS
        for i, condition in enumerate(data["conditions"]):
            parse_condition(condition, f"conditions[{i}]")
        validate_effect(data["effect"], "effect")
        try:
            parse_rule_text(text)
        except RuleError as exc:
            assert "binds it" in str(exc) or "nothing binds" in str(exc) or "bound" in str(exc), exc


def test_the_english_rule_is_the_asked_form_with_an_effect_of_the_language_and_no_dots():
    grammar = Grammar(grounded.english_rule(PATTERNS).grammar)
    language = re.compile(grammar.regex())
    assert language.fullmatch(" explore <receptacle> AND <receptacle> is explored THEN choose special action: done")
    assert language.fullmatch(" find a/an <object> AND holding <x> THEN choose motor action: put <x> on <r>")
    assert not language.fullmatch(" find a/an <object> AND holding <strong> THEN choose special action: done")
    assert not language.fullmatch(" ... AND ... THEN choose ...")
    assert not language.fullmatch(" explore <receptacle> THEN choose move to the sink")
    rng = random.Random(0)
    for _ in range(40):
        sentence = grammar.sample(rng)
        assert "..." not in sentence and " THEN choose " in sentence
        validate_effect(sentence.split(" THEN choose ", 1)[1], "effect")


def test_a_rule_is_for_the_family_of_its_decision_and_may_attend_to_any_family():
    from task_learning.productions.learner import Family, LLMAdvisor

    advisor = LLMAdvisor(None, [Family(p) for p in PATTERNS])  # type: ignore[arg-type]  # no call is made
    assert advisor.patterns_for("explore Fridge|-02.10|+00.00|+01.07") == ["explore <receptacle>"]
    assert advisor.patterns_for("wash a/an plate") == PATTERNS  # no family binds it: every pattern
    text = grounded.rule_language(advisor.patterns_for("find a/an apple"), _env(), PATTERNS)
    assert 'task ::= "find a/an <object>"\n' in text
    assert text.split("subtask ::= ", 1)[1].count("(") == len(PATTERNS)


def test_the_effect_is_of_the_kind_and_verb_of_the_choice_the_rule_is_made_for():
    def effect(option: str) -> str:
        return grounded.rule_language(PATTERNS[:1], _env(), PATTERNS, option).split("effect ::= ", 1)[1]
    assert effect("motor action: move to Fridge|-02.10|+00.00|+01.07").startswith(
        '"motor action: " motor\nmotor ::= "move to " effectvariable\n')  # a kind never replays to an instance
    assert effect("motor action: put Apple|1 in Fridge|2").startswith(
        '"motor action: " motor\nmotor ::= "put " effectvariable " " ("in" | "on") " " effectvariable\n')
    assert effect("special action: 'done'").startswith('"special action: done"\n')
    assert effect("attend to subtask: find a/an apple").startswith('"attend to subtask: " subtask\n')
    assert '"special action: quit"' in effect("")  # no choice given: every effect of the language


@pytest.mark.parametrize("option", ["", "motor action: move to Fridge|-02.10|+00.00|+01.07", "special action: done",
                                    "attend to subtask: find a/an apple", "motor action: put Apple|1 on CounterTop|2"])
def test_every_rule_a_grammar_names_is_defined(option):
    """llama.cpp refuses a grammar that names an undefined rule or a rule whose name has an '_'
    (measured: HTTP 400 "failed to parse grammar")."""
    for text in (grounded.rule_language(PATTERNS[:1], _env(), PATTERNS, option),
                 grounded.english_rule(PATTERNS[:1], PATTERNS, option).grammar):
        grammar = Grammar(text)
        named = {t for tokens in grammar.rules.values() for t in tokens if re.fullmatch(r"[a-z][a-z0-9_]*", t)}
        assert named <= set(grammar.rules), named - set(grammar.rules)
        assert all(re.fullmatch(r"[a-zA-Z0-9-]+", name) for name in grammar.rules)  # GBNF's names: no '_'


SINK, BURNER, DRAWER, DRAWER2 = ("Sink|-01.90|+00.97|-01.50|SinkBasin", "StoveBurner|-00.47|+00.92|-02.37",
                                 "Drawer|-01.56|+00.33|-00.20", "Drawer|-01.56|+00.84|+00.20")


def _kitchen(location: str = "kitchen", held: str = "") -> EnvKnowledge:
    """A state of the explore decisions recorded with the model (FloorPlan1, 2026-12-02)."""
    receptacles = {SINK: Receptacle(SINK, "SinkBasin", 1.5), BURNER: Receptacle(BURNER, "StoveBurner", 2.0),
                   DRAWER: Receptacle(DRAWER, "Drawer", 1.0, openable=True),
                   DRAWER2: Receptacle(DRAWER2, "Drawer", 1.2, openable=True),
                   "CounterTop|+01.00|+00.90|-00.50": Receptacle("CounterTop|+01.00|+00.90|-00.50", "CounterTop", 0.5)}
    objects = {"Apple|+00.20|+00.95|-00.40": Thing("Apple|+00.20|+00.95|-00.40", "Apple", DRAWER),
               "Knife|+00.10|+00.95|-00.40": Thing("Knife|+00.10|+00.95|-00.40", "Knife", held or DRAWER)}
    return EnvKnowledge(location=location, receptacles=receptacles, objects=objects)


DECISIONS = [  # (pattern, task, state, chosen option)
    ("explore <receptacle>", f"explore {SINK}", _kitchen(), f"motor action: move to {SINK}"),
    ("explore <receptacle>", f"explore {SINK}", _kitchen(SINK), f"motor action: move to {BURNER}"),
    ("explore <receptacle>", f"explore {SINK}", _kitchen(SINK), f"motor action: move to {DRAWER}"),
    ("explore <receptacle>", f"explore {DRAWER}", _kitchen(DRAWER), f"motor action: open {DRAWER}"),
    ("explore <receptacle>", f"explore {SINK}", _kitchen(SINK), "special action: done"),
    ("find a/an <object>", "find a/an apple", _kitchen(DRAWER), "motor action: pick up Apple|+00.20|+00.95|-00.40"),
    ("find a/an <object>", "find a/an apple", _kitchen(SINK, "RobotGripper"),
     "motor action: put Knife|+00.10|+00.95|-00.40 on CounterTop|+01.00|+00.90|-00.50"),
    ("find a/an <object>", "find a/an apple", _kitchen(), f"attend to subtask: explore {DRAWER}"),
]


@pytest.mark.parametrize("decision", DECISIONS, ids=lambda d: d[3].split(":")[1][:24])
def test_every_rule_the_grammar_of_a_decision_allows_replays_on_its_state(decision):
    """Random rules of the decision's grammar: each parses, applies on the state it is made for and
    gives the chosen option (the replay check the learner runs, unchanged), whatever conditions the
    model picks, in any number up to the bound."""
    pattern, task, env, option = decision
    constraint = grounded.structured_rule([pattern], env, PATTERNS, option, task)
    assert constraint is not None and constraint.grammar
    grammar = Grammar(constraint.grammar)
    ctx = MatchContext(task, env, WorldKnowledge())
    rng = random.Random(0)
    for _ in range(60):
        text = RULE_CUE + grammar.sample(rng)
        rule = parse_rule_text(text)
        assert rule.task == pattern and len(rule.conditions) <= grounded.MAX_CONDITIONS
        assert check_replay(rule, ctx, option) == "", text
        assert "|" not in text  # kinds and variables, never an instance's id


def test_the_rules_the_model_wrote_and_its_replay_refused_are_outside_the_grammar_of_their_decision():
    """Measured 2026-12-02 (docs/llm.md): each was refused by its replay."""
    task = f"explore {SINK}"
    first = Grammar(grounded.structured_rule(PATTERNS[:1], _kitchen(), PATTERNS, f"motor action: move to {SINK}", task).grammar)
    away = Grammar(grounded.structured_rule(PATTERNS[:1], _kitchen(SINK), PATTERNS, f"motor action: move to {DRAWER}",
                                            task).grammar)
    inside, outside_first, outside_away = re.compile(first.regex()), first, re.compile(away.regex())

    def rule(conditions: list[str], effect: str) -> str:
        return json.dumps({"name": "m", "task": "explore <receptacle>", "conditions": conditions,
                           "effect": effect})[len(RULE_CUE):]
    move = "motor action: move to <receptacle>"
    assert inside.fullmatch(rule(["not at(<receptacle>)", "not explored(<receptacle>)"], move))
    assert not inside.fullmatch(rule(["openable(<receptacle>)"], move))  # the sink does not open
    assert not inside.fullmatch(rule(["not at_type(<t>)", "at_type(<t>)"], move))  # contradictory, <t> free
    assert not re.compile(outside_first.regex()).fullmatch(rule([], "motor action: move to <object>"))
    # the drawer chosen in front of the sink: "move to <receptacle>" replays to the sink; the drawer
    # is bound by a condition whose first solution it is (the nearest drawer)
    assert not outside_away.fullmatch(rule([], move))
    assert outside_away.fullmatch(rule(["nearest(<r>, Drawer)", "not explored(<r>)"], "motor action: move to <r>"))
    assert not outside_away.fullmatch(rule(["is(<r>, Drawer)", "explored(<r>)"], "motor action: move to <r>"))


def test_no_grammar_when_no_rule_of_the_language_gives_the_choice_and_the_learner_asks_for_none():
    """The farthest of three closed, unexplored, empty drawers, the robot at none of them: no
    condition of the language (nor a condition and a filter: "not nearest" gives the second) picks
    it first, so no rule can replay to it; the learner asks for none (no call is made)."""
    from task_learning.productions.agent import Decision
    from task_learning.productions.learner import Family, LLMAdvisor
    from task_learning.productions.prompts import SelectionAnswer

    third = "Drawer|-01.56|+00.84|+00.90"
    option = f"motor action: move to {third}"
    task = f"explore {SINK}"
    env = _kitchen()
    env.objects.clear()  # the drawers differ by their distance only
    env.receptacles[third] = Receptacle(third, "Drawer", 1.4, openable=True)
    assert grounded.structured_rule(PATTERNS[:1], env, PATTERNS, option, task) is None
    advisor = LLMAdvisor(None, [Family(p) for p in PATTERNS], learn=True, decoding="grounded")  # type: ignore[arg-type]
    decision = Decision(task=task, env=env, world=WorldKnowledge(), options=[option], history=[], blacklist=[], reason="no_production")
    assert advisor.generate(decision, [], "", SelectionAnswer(option=option, purpose="", text="")) is None  # no call made
    assert advisor.stats.unwritable == 1


def test_without_a_decision_the_rule_is_decoded_in_the_languages_generic_grammar():
    constraint = grounded.structured_rule(PATTERNS, _env(), PATTERNS, "", "")
    assert constraint is not None and constraint.grammar == grounded.rule_language(PATTERNS, _env(), PATTERNS)
