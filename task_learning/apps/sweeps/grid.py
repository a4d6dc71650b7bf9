"""A sweep's grid expanded into trials, each with a key that stays the same from run to run.

The key is a hash of the trial's kind and parameters (not of its position in the file), so a
rerun recognises finished trials even when the file gained a scene or a seed, and a trial whose
parameters changed is a new trial.
"""
from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import dataclass
from typing import Any, Iterator

from task_learning.apps.sweeps.spec import BCRGrid, LLMEntry, LLMStateGrid, StarsGrid, Sweep


@dataclass(frozen=True)
class Trial:
    """One unit of work a Ray task runs: `kind` and the plain-data `params` run_trial takes."""

    kind: str
    params: dict[str, Any]

    @property
    def stored_params(self) -> dict[str, Any]:
        """The params as they are kept (results.sqlite) and hashed into the key: credentials in
        the model's base_url masked as the terminal shows them (`http://***@host/v1`). Only the
        trial itself, on its worker, sees the URL with them; a rotated password keeps the keys."""
        llm = self.params.get("llm")
        if not isinstance(llm, dict) or not llm.get("base_url"):
            return self.params
        from task_learning.llm.http_guard import split_credentials

        return {**self.params, "llm": {**llm, "base_url": split_credentials(str(llm["base_url"])).shown}}

    @property
    def key(self) -> str:
        canonical = json.dumps({"kind": self.kind, "params": self.stored_params}, sort_keys=True,
                               separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]

    @property
    def label(self) -> str:
        """A short human name: kind, the grid values, the seed."""
        p = self.params
        llm = p["llm"]["name"]
        grounded = " grounded" if p.get("decoding") == "grounded" else ""
        if self.kind == "stars":
            return f"stars {p['scene']} {p['condition']} {llm}{grounded} seed {p['seed']}"
        if self.kind == "bcr":
            return f"bcr {p['task']} {p['mode']} {p['engine']} {llm}{grounded} seed {p['seed']}"
        return f"llm_state {p['task']} {p['method']} {llm} seed {p['seed']}"


def _llm(entry: LLMEntry) -> dict[str, Any]:
    """The model as plain data (what crosses to a Ray worker and goes into the key)."""
    data = entry.model_dump(exclude_defaults=True)
    data["name"] = entry.name
    return data


def _decoding(decoding: str) -> dict[str, str]:
    """Grounded decoding as a parameter of the trial; free (the default) is left out, so the keys
    of sweeps written before the option existed stay what they were (a rerun skips their trials)."""
    return {"decoding": decoding} if decoding != "free" else {}


def _stars(grid: StarsGrid) -> Iterator[Trial]:
    for scene, condition, llm, seed in itertools.product(grid.scenes, grid.conditions, grid.llm, grid.seeds):
        yield Trial("stars", {"scene": scene, "condition": condition, "llm": _llm(llm), "seed": seed,
                              "elicitation": grid.elicitation, "engine": grid.engine,
                              "trial2": grid.trial2 and condition.endswith("+O"), **_decoding(grid.decoding)})


def _bcr(grid: BCRGrid) -> Iterator[Trial]:
    for task, mode, engine, llm, seed in itertools.product(grid.tasks, grid.modes, grid.engines, grid.llm,
                                                           grid.seeds):
        yield Trial("bcr", {"scene": grid.scene, "task": task, "mode": mode, "engine": engine,
                            "llm": _llm(llm), "seed": seed, "trials": grid.trials,
                            "max_actions": grid.max_actions, **_decoding(grid.decoding)})


def _llm_state(grid: LLMStateGrid) -> Iterator[Trial]:
    for task, method, llm, seed in itertools.product(grid.tasks, grid.methods, grid.llm, grid.seeds):
        yield Trial("llm_state", {"task": task, "method": method, "maps": list(grid.maps), "llm": _llm(llm),
                                  "seed": seed, "trials": grid.trials, "temperature": grid.temperature,
                                  "prompts": grid.prompts, "hands": grid.hands})


def expand(sweep: Sweep) -> list[Trial]:
    """Every trial of every experiment, in file order; a trial two experiments share runs once."""
    trials: dict[str, Trial] = {}
    for experiment in sweep.experiments:
        if isinstance(experiment, StarsGrid):
            found: Iterator[Trial] = _stars(experiment)
        elif isinstance(experiment, BCRGrid):
            found = _bcr(experiment)
        else:
            found = _llm_state(experiment)
        for trial in found:
            trials.setdefault(trial.key, trial)
    return list(trials.values())
