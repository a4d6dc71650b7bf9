"""The sweep file: a YAML grid of experiments, validated on load by typed models (pydantic v2).

A sweep names one or more experiments, each a grid over its own axes (STARS: scenes x conditions
x seeds x LLMs; BCR: tasks x modes x engines x seeds x LLMs; LLM-State: tasks x methods x seeds x
LLMs), and how the run goes (`retries`, `workers`). `task-learning sweep FILE` expands the grid
into trials (task_learning/apps/sweeps/grid.py). Every error is one line naming the file and the key,
like the rest of config/: "sweep.yaml: experiments[0].conditions[2]: unknown condition 'STAR+O'
(did you mean 'STARS+O'?)". Names (scenes, tasks, maps) are checked against config/ at load, so a
typo stops the sweep before any trial starts, not in the middle of it.
"""
from __future__ import annotations

import difflib
import math
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import AfterValidator, BeforeValidator, Field, model_validator
from pydantic_core import PydanticCustomError

from task_learning.errors import TaskLearningError
from task_learning.inputs.schema import Schema, load_model, validate

KINDS = ("stars", "bcr", "llm_state")
MAX_SEEDS = 1000
MAX_TRIALS_PER_CELL = 1000
MAX_WORKERS = 256
# Trials one sweep may hold. Counted from the axes' lengths before a single trial is built: a
# 77 KB file of LLM entries times 1000 seeds times the conditions made 18 million trials, 4 GB,
# before the first ran. A sweep of this many trials is days of work at a second each.
MAX_SWEEP_TRIALS = 100_000


def _hint(value: str, known: list[str] | tuple[str, ...]) -> str:
    match = difflib.get_close_matches(value, list(known), n=1)
    return f" (did you mean {match[0]!r}?)" if match else f" (known: {', '.join(known)})"


def _seeds(value: Any) -> Any:
    """`seeds: 3` means seeds 0, 1, 2; a list is taken as given."""
    if isinstance(value, int) and not isinstance(value, bool):
        if not 1 <= value <= MAX_SEEDS:
            raise PydanticCustomError("seed_count", "a seed count must be between 1 and {max}, got {value}",
                                      {"max": MAX_SEEDS, "value": value})
        return list(range(value))
    return value


Seed = Annotated[int, Field(ge=0, le=2**32 - 1)]
Seeds = Annotated[list[Seed], BeforeValidator(_seeds), Field(min_length=1, max_length=MAX_SEEDS)]


def _unique(values: list[Any]) -> list[Any]:
    seen: set[str] = set()
    repeated = sorted({str(v) for v in values if repr(v) in seen or seen.add(repr(v))})  # type: ignore[func-returns-value]
    if repeated:
        raise PydanticCustomError("repeated", "repeated value(s): {values}", {"values": ", ".join(repeated)})
    return values


def _scene(name: str) -> str:
    from task_learning.world.scene import load_scene

    try:
        load_scene(name)
    except TaskLearningError as exc:
        raise PydanticCustomError("unknown_scene", "{error}", {"error": str(exc)}) from None
    return name


def _condition(name: str) -> str:
    from task_learning.planning.session import CONDITIONS

    upper = name.upper()
    if upper not in CONDITIONS:
        raise PydanticCustomError("unknown_condition", "unknown condition {name}{hint}",
                                  {"name": repr(name), "hint": _hint(upper, CONDITIONS)})
    return upper


def _bcr_task(name: str) -> str:
    from task_learning.bcr.tasks import load_tasks

    try:
        load_tasks().task(name)
    except TaskLearningError as exc:
        raise PydanticCustomError("unknown_task", "{error}", {"error": str(exc)}) from None
    return name


def _household_task(name: str) -> str:
    from task_learning.llm_state.household import load_household

    try:
        load_household().task(name)
    except TaskLearningError as exc:
        raise PydanticCustomError("unknown_task", "{error}", {"error": str(exc)}) from None
    return name


def _household_map(name: str) -> str:
    from task_learning.llm_state.household import load_household

    try:
        load_household().map(name)
    except TaskLearningError as exc:
        raise PydanticCustomError("unknown_map", "{error}", {"error": str(exc)}) from None
    return name


def _llm_method(name: str) -> str:
    from task_learning.llm_state.agent import METHODS

    if name not in METHODS:
        raise PydanticCustomError("unknown_method", "unknown method {name}{hint}",
                                  {"name": repr(name), "hint": _hint(name, METHODS)})
    return name


SceneName = Annotated[str, AfterValidator(_scene)]
ConditionName = Annotated[str, AfterValidator(_condition)]


class LLMEntry(Schema):
    """One model a grid runs with. A bare string is a provider: `offline`, `openai` (the endpoint of
    config/llm.yaml / OPENAI_BASE_URL) or `replay:FILE`. The API key is never in the sweep file: it
    comes from OPENAI_API_KEY, as for every other command."""

    provider: Literal["offline", "openai", "replay"]
    label: str | None = Field(default=None, min_length=1, max_length=60)  # its name in the tables
    base_url: str | None = Field(default=None, pattern=r"^https?://")
    completion_model: str | None = None
    selection_model: str | None = None
    cassette: str | None = None  # replay only
    latency_s: float = Field(default=0.0, ge=0.0, le=60.0)  # simulated round-trip latency (benches)

    @model_validator(mode="before")
    @classmethod
    def _from_string(cls, data: Any) -> Any:
        if isinstance(data, str):
            kind, _, argument = data.partition(":")
            return {"provider": kind, "cassette": argument} if argument else {"provider": kind}
        return data

    @model_validator(mode="after")
    def _consistent(self) -> "LLMEntry":
        if (self.provider == "replay") != bool(self.cassette):
            raise PydanticCustomError("replay", "a replay provider needs a cassette (replay:FILE), and only it")
        if self.provider != "openai" and (self.base_url or self.completion_model or self.selection_model):
            raise PydanticCustomError("endpoint", "base_url, completion_model and selection_model are for the "
                                                  "openai provider")
        return self

    @property
    def name(self) -> str:
        """How tables name it: its label, else the provider (and the endpoint's host)."""
        if self.label:
            return self.label
        if self.base_url:
            host = self.base_url.split("://", 1)[1].split("/", 1)[0].rsplit("@", 1)[-1]
            return f"openai@{host}"
        return f"replay:{Path(self.cassette or '').name}" if self.provider == "replay" else self.provider

    @property
    def is_offline(self) -> bool:
        return self.provider == "offline"


LLMs = Annotated[list[LLMEntry], Field(min_length=1), AfterValidator(_unique)]


# How the grid's model answers (docs/llm.md, grounded decoding): the sweep's providers (offline,
# openai, replay) all decode freely unless asked, as `--decoding auto` does with them; grounded
# sends the constraint where the endpoint takes one (config/llm.yaml openai.constraints) and
# falls back to free decoding with one line where it does not. LLM-State's grounded form needs
# its bounded answers, which its grid does not ask for: it has no decoding here.
Decoding = Literal["free", "grounded"]


# The grids' list defaults are plain lists: pydantic copies a default for every instance (ruff
# knows that of BaseModel's direct subclasses only, hence its RUF012 notes on these lines).
class StarsGrid(Schema):
    """The STARS paper: each trial learns the scene's task once under one condition on a fresh
    knowledge base (the simulated operator answers the +O conditions), with the world's starting
    placements varied by the seed; `trial2` also runs Trial #2 on that knowledge base."""

    kind: Literal["stars"]
    scenes: Annotated[list[SceneName], Field(min_length=1), AfterValidator(_unique)]
    conditions: Annotated[list[ConditionName], Field(min_length=1), AfterValidator(_unique)]
    seeds: Seeds
    llm: LLMs = Field(default_factory=lambda: [LLMEntry(provider="offline")])
    elicitation: Literal["batched", "concurrent", "across-objects"] = "batched"
    engine: Literal["heuristic", "llm"] = "heuristic"
    trial2: bool = False
    decoding: Decoding = "free"

    @model_validator(mode="after")
    def _stars_star(self) -> "StarsGrid":
        from task_learning.world.scene import load_scene

        if "STARS*" in self.conditions:
            lacking = [s for s in self.scenes if not load_scene(s).selection_context]
            if lacking:
                raise PydanticCustomError("stars_star", "STARS* needs a scene with footnote 3's context "
                                                        "(tidy_kitchen); not: {scenes}", {"scenes": ", ".join(lacking)})
        return self

    def axes(self) -> dict[str, int]:
        return {"scenes": len(self.scenes), "conditions": len(self.conditions), "llm": len(self.llm),
                "seeds": len(self.seeds)}


class BCRGrid(Schema):
    """The BCR paper: each trial is `trials` seeded BCR runs of one task in one mode (world seeds
    seed*trials .. seed*trials+trials-1), measured as their success rate and mean actions."""

    kind: Literal["bcr"]
    scene: SceneName = "bcr_kitchen"
    tasks: Annotated[list[Annotated[str, AfterValidator(_bcr_task)]], Field(min_length=1), AfterValidator(_unique)]
    modes: Annotated[list[Literal["paper", "guarded"]], Field(min_length=1), AfterValidator(_unique)] = ["guarded"]  # noqa: RUF012
    engines: Annotated[list[Literal["llm", "heuristic"]], Field(min_length=1), AfterValidator(_unique)] = ["llm"]  # noqa: RUF012
    seeds: Seeds
    trials: int = Field(default=10, ge=1, le=MAX_TRIALS_PER_CELL)
    max_actions: int = Field(default=100, ge=1, le=10_000)
    decoding: Decoding = "free"
    llm: LLMs = Field(default_factory=lambda: [LLMEntry(provider="offline")])

    def axes(self) -> dict[str, int]:
        return {"tasks": len(self.tasks), "modes": len(self.modes), "engines": len(self.engines),
                "llm": len(self.llm), "seeds": len(self.seeds)}


class LLMStateGrid(Schema):
    """The LLM-State paper: each trial is `trials` runs of one task with one method on the LLM-State paper's household
    (run i on maps[i mod len(maps)], run number seed*trials+i, which keeps draws apart above
    temperature 0), measured as success rate and mean steps."""

    kind: Literal["llm_state"]
    tasks: Annotated[list[Annotated[str, AfterValidator(_household_task)]], Field(min_length=1),
                     AfterValidator(_unique)]
    methods: Annotated[list[Annotated[str, AfterValidator(_llm_method)]], Field(min_length=1),
                       AfterValidator(_unique)] = ["ours"]  # noqa: RUF012
    maps: Annotated[list[Annotated[str, AfterValidator(_household_map)]], Field(min_length=1),
                    AfterValidator(_unique)] = ["map1", "map2", "map3", "map4", "map5"]  # noqa: RUF012
    seeds: Seeds
    trials: int = Field(default=5, ge=1, le=MAX_TRIALS_PER_CELL)
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    prompts: Literal["own", "paper"] = "own"
    hands: int = Field(default=2, ge=1, le=4)
    llm: LLMs = Field(default_factory=lambda: [LLMEntry(provider="offline")])

    def axes(self) -> dict[str, int]:
        return {"tasks": len(self.tasks), "methods": len(self.methods), "llm": len(self.llm),
                "seeds": len(self.seeds)}


Experiment = Annotated[Union[StarsGrid, BCRGrid, LLMStateGrid], Field(discriminator="kind")]


def _workers(value: Any) -> Any:
    return None if value == "auto" else value


class Sweep(Schema):
    """The whole file."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,79}$")
    experiments: Annotated[list[Experiment], Field(min_length=1)]
    # A trial that fails (its exception) or is killed (its worker died) runs again up to this often.
    retries: int = Field(default=1, ge=0, le=10)
    # Local Ray workers (one trial each at a time): "auto" = one per core this process may use.
    workers: Annotated[Union[Annotated[int, Field(ge=1, le=MAX_WORKERS)], None], BeforeValidator(_workers)] = None
    # Where results.sqlite, the trials' knowledge bases, Ray's logs and the plots go; relative
    # paths are relative to the working folder. Default: artifacts/sweeps/<name>.
    out: str | None = None

    @model_validator(mode="after")
    def _bounded(self) -> "Sweep":
        """Refuse a grid of more than MAX_SWEEP_TRIALS trials, counted from its axes (nothing is
        built), naming the count and the largest experiment's axes."""
        sizes = [math.prod(experiment.axes().values()) for experiment in self.experiments]
        total = sum(sizes)
        if total > MAX_SWEEP_TRIALS:
            largest = max(range(len(sizes)), key=sizes.__getitem__)
            axes = " x ".join(f"{n} {name}" for name, n in self.experiments[largest].axes().items())
            raise PydanticCustomError(
                "too_many_trials", "{total} trials: more than the {limit} a sweep may hold (experiments[{index}]: "
                "{axes} = {size}); split it into several sweeps or shorten an axis",
                {"total": f"{total:,}", "limit": f"{MAX_SWEEP_TRIALS:,}", "index": largest, "axes": axes,
                 "size": f"{sizes[largest]:,}"})
        return self


def parse_sweep(data: Any, file: str | Path) -> Sweep:
    """A Sweep from parsed YAML; ConfigError naming the file and key on the first problem."""
    return validate(Sweep, data, file=file)


def load_sweep(path: str | Path) -> Sweep:
    return load_model(Sweep, path)
