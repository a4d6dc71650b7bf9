"""Every node that talks to a model reads its `decoding` parameter (issue 43: one option on every
command and node). The parameter is declared for every node with LLM endpoint parameters; a node
that declares it and never reads it decodes freely without saying so, which this test refuses.
Read from the sources: no ROS graph."""
from __future__ import annotations

import ast
from pathlib import Path

NODES = Path(__file__).resolve().parents[2] / "nodes" / "nodes"
PLUMBING = NODES.parent / "plumbing"


def _has_llm_parameters_class(tree: ast.Module) -> bool:
    return any(isinstance(n, ast.ClassDef) and any(getattr(b, "id", "") == "LLMEndpointParameters" for b in n.bases)
               for n in ast.walk(tree))


def _declares_llm_parameters(tree: ast.Module) -> bool:
    """The node's parameters class derives from LLMEndpointParameters, in its module or in the
    plumbing/<node>_params.py module it imports them from."""
    if _has_llm_parameters_class(tree):
        return True
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.endswith("_params"):
            params = PLUMBING / f"{node.module.rsplit('.', 1)[-1]}.py"
            if params.is_file() and _has_llm_parameters_class(ast.parse(params.read_text())):
                return True
    return False


def _reads_decoding(tree: ast.Module) -> bool:
    return any(isinstance(node, ast.Attribute) and node.attr == "decoding" for node in ast.walk(tree))


def test_every_node_with_an_llm_reads_its_decoding_parameter():
    with_llm = {}
    for path in sorted(NODES.glob("*.py")):
        tree = ast.parse(path.read_text())
        if _declares_llm_parameters(tree):
            with_llm[path.stem] = _reads_decoding(tree)
    assert {"goal_elicitation", "action_selector", "planner", "anticipation"} <= set(with_llm)
    assert [name for name, reads in with_llm.items() if not reads] == []
