"""The open state of the LLM-State paper (section IV-B): key objects, object entries and a summary.

* key objects (ŝ_t): an add-only list grown by the attention prompt, never shrunk;
* object entries: key -> attribute strings ("closed", "in_kitchen", "in_hand"; none yet = []),
  rebuilt by the state estimator from the whole action history at every rebuild, so an error of
  one rebuild does not carry over to the next (the paper's reason for not updating recursively);
* summary: one free text ("Reasoning: ...") narrating the history and explaining failures.

Updates arrive as parsed calls (calls.py); the state decides which to accept: attention may only
add names that were observed (or rooms); the estimator may only describe key objects or observed
names (an estimator answer about objects never observed is dropped and counted).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Collection, Iterable

from task_learning.llm_state.calls import Call

ATTRIBUTE_SEPARATOR = " | "
MAX_ATTRIBUTES = 16  # an entry with more is cut: a runaway answer must not bloat every prompt


def split_attributes(value: str) -> list[str]:
    """"closed | in_kitchen" -> ["closed", "in_kitchen"]; "[]" or "" -> []."""
    text = value.strip()
    if text in ("", "[]", "none", "None"):
        return []
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    parts = [p.strip().strip("'\"").strip() for p in text.replace(",", "|").split("|")]
    out: list[str] = []
    for part in parts:
        if part and part not in out:
            out.append(part)
    return out[:MAX_ATTRIBUTES]


@dataclass
class UpdateReport:
    """What one attention or estimator answer changed, and what was refused (with reasons)."""

    applied: int = 0
    rejected: list[str] = field(default_factory=list)


@dataclass
class OpenState:
    """The LLM-State representation, mutated only through `add_key_objects` and `rebuild`."""

    key_objects: list[str] = field(default_factory=list)
    entries: dict[str, list[str]] = field(default_factory=dict)
    summary: str = ""

    def add_key_objects(self, calls: Iterable[Call], known: Collection[str]) -> UpdateReport:
        """Attention (ŝ_t = E(O_t, I) + ŝ_{t-1}): add-only; names never observed are refused."""
        report = UpdateReport()
        for call in calls:
            name = call.args[0] if call.args else ""
            if call.name != "add_related_objects" or not name:
                report.rejected.append(f"{call.render()}: not an attention call")
            elif name not in known:
                report.rejected.append(f"{name}: never observed")
            elif name not in self.key_objects:
                self.key_objects.append(name)
                self.entries.setdefault(name, [])
                report.applied += 1
        return report

    def rebuild(self, calls: Iterable[Call], known: Collection[str], *, with_summary: bool = True,
                with_objects: bool = True) -> UpdateReport:
        """State estimator (s_t = C(ŝ_t, A_h, O_t)): entries start empty for every key object and
        take the answer's update_state values (a later value for the same object replaces an
        earlier one); the summary is the answer's last update_reasoning. An update on an object
        that is neither a key object nor observed is refused; one on an observed non-key object
        adds it as an entry (the estimator saw it matter)."""
        report = UpdateReport()
        entries: dict[str, list[str]] = {name: [] for name in self.key_objects}
        summary = ""
        for call in calls:
            if call.name == "update_reasoning" and call.args:
                summary = call.args[0].strip()
                report.applied += 1
            elif call.name == "update_state" and len(call.args) == 2:
                name = call.args[0].strip()
                if name not in entries and name not in known:
                    report.rejected.append(f"{name}: never observed")
                    continue
                entries[name] = split_attributes(call.args[1])
                report.applied += 1
            else:
                report.rejected.append(f"{call.render()}: not an estimator call")
        self.entries = entries if with_objects else {}
        self.summary = summary if with_summary else ""
        return report

    # ----------------------------------------------------------------------- rendering
    def render(self, *, with_summary: bool = True, with_objects: bool = True) -> str:
        """The state block's body as the appendix shows it ("name: a | b", "name: []", then
        "Reasoning: ...")."""
        lines: list[str] = []
        if with_objects:
            for name in self.key_objects + [n for n in self.entries if n not in self.key_objects]:
                attrs = self.entries.get(name, [])
                lines.append(f"{name}: {ATTRIBUTE_SEPARATOR.join(attrs) if attrs else '[]'}")
        if with_summary and self.summary:
            lines.extend(["", "", f"Reasoning: {self.summary}"])
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {"key_objects": list(self.key_objects),
                "objects": {k: list(v) for k, v in self.entries.items()},
                "summary": self.summary}


class LatestState:
    """The newest open state of a running LLM-State loop, for readers beside it (BCR's prompt
    when both are on, a ROS publisher): pass `update` as LLMStateAgent's `on_state` and `render`
    as LLMEngine's `state_notes`. Holds a copy, so a reader never sees a half-rebuilt state."""

    def __init__(self) -> None:
        self._state: OpenState | None = None

    def update(self, state: OpenState) -> None:
        self._state = OpenState(list(state.key_objects), {k: list(v) for k, v in state.entries.items()},
                                state.summary)

    @property
    def state(self) -> OpenState | None:
        return self._state

    def render(self) -> str:
        """The state block's body ("name: a | b" lines, then "Reasoning: ..."); "" before any."""
        return self._state.render() if self._state is not None else ""
