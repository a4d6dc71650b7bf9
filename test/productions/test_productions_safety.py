"""No generated text is ever executed as code, and bad rules are refused by name (the bootstrapped-productions paper made safe).

The paper imports LLM-written Python. Here an LLM's rule is JSON, parsed and validated; these tests
hand the learning loop answers full of Python (a ```py block as the paper's, code in every field)
while exec/eval/compile/__import__-by-name are booby-trapped, and check that nothing ran and nothing
was stored.
"""
from __future__ import annotations

import ast
import builtins
import json
from pathlib import Path

import pytest

import task_learning.productions as productions_pkg
from task_learning.productions import prompts
from task_learning.productions.agent import ProductionSet
from task_learning.productions.language import RuleError, parse_rule_text, production_from_dict
from task_learning.productions.learner import LLMAdvisor
from test.productions.test_productions_golden import ENGLISH_ANSWER, SELECTION_ANSWER, lettuce_decision
from test.productions_helpers import ScriptedProvider, scripted_client


def python_answer(sentinel: Path) -> str:
    return f"""[Python Implementation]
```py
import os
class SliceObject:
    def precondition(self, *args):
        open({str(sentinel)!r}, "w").write("ran")
        return True, ""
    def apply(self):
        return "motor action: put Lettuce_895e9ec5 on CounterTop4"
```
"""


def code_in_fields(sentinel: Path) -> str:
    payload = f"__import__('os').system('touch {sentinel}')"
    rule = {"name": "slice-x", "task": "slice a/an <object>",
            "conditions": [payload, f"knows({payload})", "holding(<x>)"],
            "effect": f"motor action: put <x> on {payload}"}
    return "[Rule Implementation]\n```json\n" + json.dumps(rule) + "\n```"


def test_generated_code_is_never_executed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sentinel = tmp_path / "executed"
    ran: list[str] = []

    def trap(name: str):
        def refuse(*args: object, **kwargs: object) -> None:
            ran.append(name)
            raise AssertionError(f"{name} was called on generated text")
        return refuse

    for name in ("exec", "eval", "compile"):
        monkeypatch.setattr(builtins, name, trap(name))
    provider = ScriptedProvider({
        prompts.SELECTION: [SELECTION_ANSWER], prompts.ENGLISH: [ENGLISH_ANSWER],
        prompts.RULE: [python_answer(sentinel)], prompts.REVISION: [code_in_fields(sentinel), python_answer(sentinel)],
    })
    advisor = LLMAdvisor(scripted_client(provider), [], learn=True, max_revisions=3)
    advice = advisor.advise(lettuce_decision())
    monkeypatch.undo()
    assert advice is not None and advice.production is None  # the action may be taken; no rule is kept
    assert not sentinel.exists() and ran == []
    assert advisor.stats.rejected == 1
    errors = advisor.stats.replay_failures
    assert errors[0].startswith("RuleError: rule: no JSON object found")  # the ```py block is not even read
    assert "cannot read condition" in errors[1] or "unknown predicate" in errors[1]


@pytest.mark.parametrize("data, message", [
    ({"name": "x", "task": "t", "conditions": ["__import__('os').system('id')"], "effect": "special action: done"},
     "unknown predicate '__import__'"),
    ({"name": "x", "task": "t", "conditions": ["holding(<x>); import os"], "effect": "special action: done"},
     "cannot read condition"),
    ({"name": "x", "task": "t", "conditions": ["exec(<a>)"], "effect": "special action: done"}, "unknown predicate 'exec'"),
    ({"name": "x", "task": "t", "conditions": ["holding(<x>, <y>)"], "effect": "special action: done"},
     "holding takes 1 argument(s), got 2"),
    ({"name": "x", "task": "t", "conditions": [], "effect": "motor action: teleport home"}, "unknown motor action"),
    ({"name": "x", "task": "t", "conditions": [], "effect": "os.system('id')"}, "the effect must start with"),
    ({"name": "x", "task": "t", "conditions": [], "effect": "motor action: move to <nowhere>"},
     "<nowhere> is not bound"),
    ({"name": "x", "task": "t", "conditions": ["is(<a>, <kind>)"], "effect": "special action: done"},
     "uses <kind> before any condition binds it"),
    ({"name": "x", "task": "t", "conditions": [], "effect": "special action: done", "code": "import os"},
     "unknown field(s) code"),
    ({"name": "../etc/passwd", "task": "t", "conditions": [], "effect": "special action: done"}, "name"),
    ({"name": "x", "task": "t", "conditions": [{"any": ["holding(<x>)"]}], "effect": "special action: done"},
     'must be {"none"'),
    ("print('hi')", "expected an object"),
])
def test_bad_rules_are_refused_naming_the_field(data: object, message: str) -> None:
    with pytest.raises(RuleError) as caught:
        production_from_dict(data, where="rule")
    assert message in str(caught.value)


def test_malformed_json_is_a_rule_error() -> None:
    with pytest.raises(RuleError, match="malformed JSON"):
        parse_rule_text('```json\n{"name": "x", "task": }\n```')


def test_the_first_json_object_is_the_rule_and_what_follows_it_is_ignored() -> None:
    text = ('{"name": "a", "task": "explore <r>", "conditions": [], "effect": "special action: done"},\n'
            '"effect": "motor action: move to <r>"}, {"name": "b"}')
    rule = parse_rule_text(text)
    assert (rule.name, rule.effect) == ("a", "special action: done")
    with pytest.raises(RuleError, match="unknown field"):
        parse_rule_text('{"name": "SinkBasin", "task": "explore <r>", "condition": "a sink"}, {"name": "b"}')
    with pytest.raises(RuleError, match="no JSON object"):
        parse_rule_text('[Rule Implementation] the rule as one JSON object in a ```json block')


@pytest.mark.parametrize("answer, rule", [
    ("[Generalized Rule]\nIF the current task is explore <r> THEN choose special action: done.",
     "IF the current task is explore <r> THEN choose special action: done."),
    ("[Generalized Rule]\nIF the current task is ... AND ... THEN choose ...", ""),  # the instructions, copied
    ("[Generalized Rule]: the rule with those constants replaced by <variables>, in the form IF x THEN y", ""),
    ("[Generalized Rule]\nIF the current task is explore <r>", ""),  # no THEN: no choice
    ("[Generalized Rule]\nnone", ""),
])
def test_a_generalized_rule_is_read_only_in_the_form_asked(answer: str, rule: str) -> None:
    assert prompts.parse_generalized_rule(answer) == rule


def test_the_rule_package_has_no_way_to_run_code() -> None:
    """Static check: nothing under task_learning/productions calls exec/eval/compile, imports
    importlib or uses __import__."""
    folder = Path(productions_pkg.__file__).parent
    for path in sorted(folder.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                assert node.func.id not in ("exec", "eval", "compile", "__import__"), f"{path.name}: {node.func.id}"
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] + [getattr(node, "module", "") or ""]
                assert not any(n.startswith(("importlib", "runpy", "subprocess")) for n in names), path.name


def test_stored_rule_that_no_longer_validates_is_refused_on_load(tmp_path: Path) -> None:
    from task_learning.kb import KnowledgeBase
    from task_learning.productions.memory import load_productions, persistent_set, production_record

    db = tmp_path / "kb.sqlite"
    with KnowledgeBase(db) as kb:
        good = production_from_dict({"name": "ok", "task": "t", "conditions": ["gripper_empty()"],
                                     "effect": "special action: done"})
        persistent_set(kb).add(good)
        record = production_record(good)
        record["name"] = "tampered"
        record["rule"] = dict(record["rule"], name="tampered", conditions=["run_shell(<x>)"])
        kb.save_production(record)
        with pytest.raises(RuleError, match=r"production 'tampered'.*unknown predicate 'run_shell'"):
            load_productions(kb)
    assert isinstance(ProductionSet(), ProductionSet)
