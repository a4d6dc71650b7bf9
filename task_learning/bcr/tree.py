"""BCR's candidate tree (the BCR paper §III-B) as a networkx DiGraph.

One goal node per unmet goal literal; its children are the actions whose effects achieve it (the
paper's roots). Candidates are the action leaves. An action that succeeds leaves the tree with all
its siblings; a blocked action gets exactly the resolution actions of the condition met as
children. The tree itself knows nothing of the world: the agent decides what succeeded.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Iterable

import networkx as nx

from task_learning.bcr.domain import GroundAction
from task_learning.bcr.literals import literal_text
from task_learning.types import GoalLiteral

log = logging.getLogger(__name__)

GOAL = "goal"
ACTION = "action"


@dataclass
class Candidate:
    """A leaf offered to the selection engine."""

    node: int
    action: GroundAction
    goal_index: int  # which goal literal's tree it belongs to (goals are worked in order)
    depth: int  # 1 for a root action, +1 per resolution level
    parent_action: GroundAction | None  # the blocked action it resolves, None for a root
    condition: str  # the blocking condition it resolves, "" for a root

    @property
    def text(self) -> str:
        return str(self.action)


class CandidateTree:
    """The forest of action trees for one task; node ids are stable ints."""

    def __init__(self) -> None:
        self.graph = nx.DiGraph()
        self._next_id = 0
        self._goal_nodes: dict[GoalLiteral, int] = {}
        # The tree at its largest, for inspection. Snapshotting only when the tree is about to
        # shrink from a new maximum keeps blocks (which only grow it) free of copies.
        self._peak: CandidateTree | None = None

    # ---- structure ---------------------------------------------------------------------------
    def _add(self, **attrs: Any) -> int:
        node = self._next_id
        self._next_id += 1
        self.graph.add_node(node, **attrs)
        return node

    def goal_node(self, goal: GoalLiteral) -> int | None:
        return self._goal_nodes.get(goal)

    def add_goal(self, goal: GoalLiteral, index: int) -> int:
        node = self._goal_nodes.get(goal)
        if node is None:
            node = self._add(kind=GOAL, literal=goal, goal_index=index, label=literal_text(goal),
                             status="open", depth=0)
            self._goal_nodes[goal] = node
        return node

    def remove_goal(self, goal: GoalLiteral) -> None:
        node = self._goal_nodes.pop(goal, None)
        if node is not None:
            self._remove_subtree(node)

    def add_children(self, parent: int, actions: Iterable[GroundAction], label: str = "") -> list[int]:
        """Attach actions under `parent` (roots under a goal node, resolutions under a blocked
        action); an action already a child is not duplicated."""
        existing = {self.graph.nodes[c]["action"] for c in self.graph.successors(parent)}
        pdata = self.graph.nodes[parent]
        added = []
        for action in actions:
            if action in existing:
                continue
            existing.add(action)
            child = self._add(kind=ACTION, action=action, goal_index=pdata["goal_index"],
                              label=str(action), status="open", depth=pdata["depth"] + 1,
                              detail="")
            self.graph.add_edge(parent, child, label=label)
            added.append(child)
        return added

    def block(self, node: int, condition: str, description: str,
              resolutions: Iterable[GroundAction]) -> list[int]:
        """A blocking condition was met on `node`: exactly its resolution actions become its
        children. Returns the new children ([] when every resolution was excluded)."""
        data = self.graph.nodes[node]
        data["status"] = "blocked"
        data["detail"] = description
        data["condition"] = condition
        for child in list(self.graph.successors(node)):
            self._remove_subtree(child)
        return self.add_children(node, resolutions, label=condition)

    def succeed(self, node: int) -> list[GroundAction]:
        """The action at `node` succeeded: it and its siblings (same parent) leave the tree.
        Returns the actions removed."""
        parents = list(self.graph.predecessors(node))
        if not parents:
            removed = [self.graph.nodes[node].get("action")]
            self._remove_subtree(node)
            return [a for a in removed if a is not None]
        parent = parents[0]
        removed = []
        for sibling in list(self.graph.successors(parent)):
            removed.append(self.graph.nodes[sibling]["action"])
            self._remove_subtree(sibling)
        pdata = self.graph.nodes[parent]
        if pdata["kind"] == ACTION:
            pdata["status"] = "open"  # resolved: the blocked action is a candidate again
        return removed

    def prune(self, node: int, reason: str = "") -> None:
        """Remove a dead end (a loop broken, an action with no way forward)."""
        if node in self.graph:
            log.debug("pruned %s: %s", self.graph.nodes[node].get("label"), reason)
            self._remove_subtree(node)

    def _remove_subtree(self, node: int) -> None:
        if node not in self.graph:
            return
        if self._peak is None or len(self) > len(self._peak):
            self._peak = self.copy()
        doomed = [node, *nx.descendants(self.graph, node)]
        self.graph.remove_nodes_from(doomed)

    def children(self, node: int) -> list[int]:
        return list(self.graph.successors(node))

    def parent(self, node: int) -> int | None:
        parents = list(self.graph.predecessors(node))
        return parents[0] if parents else None

    # ---- reading -----------------------------------------------------------------------------
    def candidates(self) -> list[Candidate]:
        """The action leaves, by goal order then by age (older first); an action reachable as two
        leaves is offered once (the deepest)."""
        out: dict[GroundAction, Candidate] = {}
        # networkx's plain adjacency dicts: the views build an object per lookup
        nodes = self.graph._node
        succ = self.graph._succ
        pred = self.graph._pred
        leaves = [(data["goal_index"], node) for node, data in nodes.items()
                  if data["kind"] == ACTION and not succ[node]]
        for _, node in sorted(leaves):
            data = nodes[node]
            parent = next(iter(pred[node]), None)
            pdata = nodes[parent] if parent is not None else {}
            is_action = pdata.get("kind") == ACTION
            cand = Candidate(
                node=node, action=data["action"], goal_index=data["goal_index"],
                depth=data["depth"], parent_action=pdata.get("action") if is_action else None,
                condition=pdata.get("condition", "") if is_action else "")
            known = out.get(cand.action)
            if known is None or cand.depth > known.depth:
                out[cand.action] = cand
        return list(out.values())

    def nodes_for(self, action: GroundAction) -> list[int]:
        """Every leaf holding this action (a success resolves them all)."""
        return [n for n, d in self.graph.nodes(data=True)
                if d["kind"] == ACTION and d["action"] == action and not self.graph.out_degree(n)]

    def mark_selected(self, node: int) -> None:
        for _, data in self.graph.nodes(data=True):
            if data.get("status") == "selected":
                data["status"] = "open"
        if node in self.graph:
            self.graph.nodes[node]["status"] = "selected"

    def peak(self) -> "CandidateTree":
        """The tree at its largest so far (this tree itself when it is now at its largest)."""
        return self if self._peak is None or len(self) >= len(self._peak) else self._peak

    def copy(self) -> "CandidateTree":
        """A snapshot (node data shared, structure copied), e.g. the tree at its largest."""
        twin = CandidateTree()
        twin.graph = self.graph.copy()
        twin._next_id = self._next_id
        twin._goal_nodes = dict(self._goal_nodes)
        return twin

    @property
    def goals(self) -> list[GoalLiteral]:
        return list(self._goal_nodes)

    def __len__(self) -> int:
        return int(self.graph.number_of_nodes())

    # ---- export ------------------------------------------------------------------------------
    def to_dot(self, title: str = "bcr") -> str:
        """Graphviz DOT: goals as boxes, blocked actions red, candidates green."""
        colours = {"blocked": "red", "selected": "blue", "open": "darkgreen", "failed": "grey"}
        lines = [f'digraph "{_esc(title)}" {{', "  rankdir=TB;", '  node [fontname="Helvetica"];']
        for node, data in sorted(self.graph.nodes(data=True)):
            shape = "box" if data["kind"] == GOAL else "ellipse"
            status = data.get("status", "open")
            if data["kind"] == ACTION and status == "open" and self.graph.out_degree(node) == 0:
                status = "candidate" if status == "open" else status
            colour = colours.get(data.get("status", "open"), "black")
            label = data["label"] + (f"\\n[{data['condition']}]" if data.get("condition") else "")
            lines.append(f'  n{node} [label="{_esc(label)}", shape={shape}, color={colour}];')
        for a, b, data in self.graph.edges(data=True):
            label = data.get("label", "")
            lines.append(f'  n{a} -> n{b}' + (f' [label="{_esc(label)}"]' if label else "") + ";")
        lines.append("}")
        return "\n".join(lines) + "\n"

    def to_records(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Nodes and edges as plain dicts (the CandidateTree message's TreeNode/TreeEdge)."""
        nodes = []
        for node, data in sorted(self.graph.nodes(data=True)):
            parent = self.parent(node)
            is_leaf = data["kind"] == ACTION and self.graph.out_degree(node) == 0
            kind = data["kind"] if data["kind"] == GOAL else (
                "candidate" if is_leaf else ("resolution" if data["depth"] > 1 else "action"))
            nodes.append({"id": node, "parent_id": -1 if parent is None else parent,
                          "label": data["label"], "kind": kind,
                          "status": data.get("status", "open"), "detail": data.get("detail", "")})
        edges = [{"parent_id": a, "child_id": b, "label": d.get("label", "")}
                 for a, b, d in self.graph.edges(data=True)]
        return nodes, edges


def _esc(text: str) -> str:
    return str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\\\\n", "\\n")


def render_png(dot_text: str, path: str) -> bool:
    """Draw a DOT tree to PNG with graphviz's `dot` if installed, else with matplotlib from the
    DOT's own nodes and edges. Returns False when neither is available."""
    import shutil
    import subprocess

    exe = shutil.which("dot")
    if exe:
        result = subprocess.run([exe, "-Tpng", "-o", path], input=dot_text.encode(),
                                capture_output=True, check=False)
        return result.returncode == 0
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig = draw_tree(dot_text)
    fig.savefig(path, format="png", dpi=100, bbox_inches="tight", pad_inches=0.2)
    plt.close(fig)
    return True


def draw_tree(dot_text: str) -> Any:
    """The matplotlib figure of a DOT tree: one row per depth, every label whole. Labels are
    drawn unclipped in boxes and the figure is sized to the widest row of labels, so none is cut
    at the axes' edge or hidden under its neighbour (networkx clips labels to the axes)."""
    import re

    import matplotlib.pyplot as plt

    graph = nx.DiGraph()
    for node, label in re.findall(r'^\s*(n\d+) \[label="((?:[^"\\]|\\.)*)"', dot_text, re.M):
        graph.add_node(node, label=label.replace("\\n", "\n").replace('\\"', '"'))
    for a, b in re.findall(r"^\s*(n\d+) -> (n\d+)", dot_text, re.M):
        graph.add_edge(a, b)
    pos = _layered_layout(graph)
    labels = nx.get_node_attributes(graph, "label")
    widest = max((max(len(line) for line in str(text).split("\n")) for text in labels.values()), default=10)
    per_row: dict[float, int] = {}
    for _x, y in pos.values():
        per_row[y] = per_row.get(y, 0) + 1
    columns = max(per_row.values(), default=1)
    # Spread each row so neighbouring labels (about 0.065 inch per character at 7 pt) never meet.
    spacing = max(1.0, widest * 0.07)
    pos = {n: (x * spacing, y) for n, (x, y) in pos.items()}
    fig, ax = plt.subplots(figsize=(max(6.0, columns * spacing + 1.0), max(4.0, 1.3 * len(per_row) + 1.0)))
    nx.draw_networkx_edges(graph, pos, ax=ax, arrows=True, node_size=1500)
    for node, (x, y) in pos.items():
        ax.text(x, y, labels.get(node, node), ha="center", va="center", fontsize=7, clip_on=False,
                bbox={"boxstyle": "round,pad=0.3", "fc": "#dde", "ec": "#99a"})
    if pos:
        xs = [x for x, _y in pos.values()]
        ys = [y for _x, y in pos.values()]
        ax.set_xlim(min(xs) - spacing / 2, max(xs) + spacing / 2)
        ax.set_ylim(min(ys) - 0.5, max(ys) + 0.5)
    ax.axis("off")
    return fig


def _layered_layout(graph: nx.DiGraph) -> dict[str, tuple[float, float]]:
    depth: dict[str, int] = {}
    for node in nx.topological_sort(graph):
        preds = list(graph.predecessors(node))
        depth[node] = 0 if not preds else max(depth[p] for p in preds) + 1
    by_level: dict[int, list[str]] = {}
    for node, level in depth.items():
        by_level.setdefault(level, []).append(node)
    pos: dict[str, tuple[float, float]] = {}
    for level, nodes in by_level.items():
        for i, node in enumerate(nodes):
            pos[node] = (i - len(nodes) / 2, -level)
    return pos
