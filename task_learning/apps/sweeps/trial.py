"""One trial of a sweep, run where Ray puts it (or in this process, for `sweep --serial` and the
bench): plain data in, plain data out, nothing of Ray here.

A trial never raises: an exception becomes `{"status": "failed", "error": "<one line>"}`, which the
driver reports and retries. A worker that dies mid-trial returns nothing; the driver sees Ray's
error instead. The measures are what the sweep's tables average over seeds.
"""
from __future__ import annotations

import logging
import os
import socket
import statistics
import time
from pathlib import Path
from typing import Any, Callable, Mapping

from task_learning.inputs.safe_text import printable

# What each kind measures, in table order: (key, column title, format).
MEASURES: dict[str, tuple[tuple[str, str, str], ...]] = {
    "stars": (("completion", "completion %", "{:.1f}"), ("yes_no", "yes/no", "{:.1f}"),
              ("words", "words", "{:.1f}"), ("calls", "LLM calls", "{:,.0f}"),
              ("round_trips", "round trips", "{:,.0f}"), ("tokens", "tokens", "{:,.0f}"),
              ("trial2_completion", "Trial #2 %", "{:.1f}"), ("trial2_calls", "Trial #2 calls", "{:.0f}")),
    "bcr": (("success_rate", "success %", "{:.1f}"), ("mean_actions", "actions", "{:.1f}"),
            ("candidates_per_decision", "candidates/decision", "{:.2f}"), ("llm_requests", "LLM requests", "{:,.0f}")),
    "llm_state": (("success_rate", "success %", "{:.1f}"), ("mean_steps", "steps", "{:.1f}"),
                  ("llm_calls", "LLM calls", "{:,.0f}"), ("tokens", "tokens", "{:,.0f}")),
}
PRIMARY = {"stars": "completion", "bcr": "success_rate", "llm_state": "success_rate"}


def make_trial_client(llm: Mapping[str, Any], seed: int) -> Any:
    """The LLMClient for one trial's model entry (spec.LLMEntry as plain data)."""
    from task_learning.llm.client import make_client

    spec, options = client_spec(llm)
    return make_client(spec, seed=seed, **options)


def client_spec(llm: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """make_client's spec string and options for a model entry."""
    provider = llm["provider"]
    spec = f"replay:{llm['cassette']}" if provider == "replay" else provider
    options = {k: llm[k] for k in ("base_url", "completion_model", "selection_model", "latency_s") if llm.get(k)}
    return spec, options


def _fresh(path: Path) -> Path:
    """A knowledge base file with nothing in it: a retried trial must not start from what its
    killed attempt had learned."""
    path.parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    return path


def _stars(params: Mapping[str, Any], kb_dir: Path, key: str) -> dict[str, Any]:
    from task_learning.planning.session import RunSpec, run_in_process

    spec_str, options = client_spec(params["llm"])
    condition = params["condition"]
    spec = RunSpec(scene=params["scene"], condition=condition, llm=spec_str, llm_options=options,
                   operator="simulated" if condition.endswith("+O") else "none",
                   db=_fresh(kb_dir / f"{key}.sqlite"), seed=params["seed"], engine=params["engine"],
                   elicitation=params["elicitation"], decoding=params.get("decoding", "free"))
    metrics, _ = run_in_process(spec)
    data = metrics.to_dict()
    measures = {"completion": data["completion"], "yes_no": data["yes_no"], "words": data["words"],
                "calls": data["usage"]["calls"], "round_trips": data["usage"]["requests"],
                "tokens": data["total_tokens"], "retrieved": data["retrieved"], "proposed": data["proposed"],
                "sourced": data["sourced"], "satisfied": data["satisfied"], "assertions": data["assertions"]}
    if params.get("trial2"):
        again, _ = run_in_process(spec)  # the same knowledge base: Trial #2
        measures.update(trial2_completion=round(again.completion, 1), trial2_calls=again.usage.calls,
                        trial2_yes_no=again.yes_no)
    return measures


def _bcr(params: Mapping[str, Any], _kb_dir: Path, _key: str) -> dict[str, Any]:
    from task_learning.bcr.runner import run_trial as bcr_trial

    client = make_trial_client(params["llm"], params["seed"]) if params["engine"] == "llm" else None
    decoding = "free"
    if client is not None:
        from task_learning.llm.constraints import resolve_decoding

        chosen, notice = resolve_decoding(params.get("decoding", "free"), client_spec(params["llm"])[0], client.provider)
        decoding = chosen.value
        if notice:  # on the worker's log, as the in-process STARS run says it: never silently free
            logging.getLogger(__name__).warning("%s", notice)
    n = int(params["trials"])
    results = []
    for i in range(n):
        results.append(bcr_trial(params["scene"], params["task"], params["engine"], client, params["seed"] * n + i,
                                 max_actions=params["max_actions"], mode=params["mode"], decoding=decoding))
        if client is not None:
            client.raise_if_unavailable()
    return {"success_rate": 100.0 * sum(r.success for r in results) / n,
            "mean_actions": statistics.fmean(r.actions for r in results),
            "candidates_per_decision": statistics.fmean(r.candidates_per_decision for r in results),
            "llm_requests": sum(r.llm_requests for r in results), "successes": sum(r.success for r in results),
            "runs": n}


def _llm_state(params: Mapping[str, Any], _kb_dir: Path, _key: str) -> dict[str, Any]:
    from task_learning.llm_state.agent import run_trial as llm_state_trial
    from task_learning.llm_state.household import load_household

    house = load_household()
    client = make_trial_client(params["llm"], params["seed"])
    maps, n = list(params["maps"]), int(params["trials"])
    results = []
    for i in range(n):
        results.append(llm_state_trial(params["task"], maps[i % len(maps)], params["method"], client,
                                       hands=params["hands"], household=house, trial=params["seed"] * n + i,
                                       temperature=params["temperature"], wording=params["prompts"]))
        client.raise_if_unavailable()
    return {"success_rate": 100.0 * sum(r.success for r in results) / n,
            "mean_steps": statistics.fmean(r.steps for r in results),
            "llm_calls": sum(r.llm_calls for r in results), "tokens": sum(r.tokens for r in results),
            "successes": sum(r.success for r in results), "runs": n}


RUNNERS: dict[str, Callable[[Mapping[str, Any], Path, str], dict[str, Any]]] = {
    "stars": _stars, "bcr": _bcr, "llm_state": _llm_state}


def one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return printable(text if len(text) <= 300 else text[:297] + "...")


def run_trial(kind: str, params: Mapping[str, Any], kb_dir: str, key: str) -> dict[str, Any]:
    """Run one trial; its measures, or the one-line reason it failed. `kb_dir` holds the
    knowledge bases STARS trials learn into (one per trial, named by its key)."""
    from task_learning.errors import TaskLearningError

    started = time.perf_counter()
    where = f"{socket.gethostname()}:{os.getpid()}"
    try:
        measures = RUNNERS[kind](params, Path(kb_dir), key)
    except TaskLearningError as exc:
        return {"status": "failed", "error": one_line(exc), "seconds": time.perf_counter() - started,
                "worker": where}
    except Exception as exc:  # noqa: BLE001 - a bug in a trial fails that trial, reported, not the sweep
        return {"status": "failed", "error": f"{type(exc).__name__}: {one_line(exc)}",
                "seconds": time.perf_counter() - started, "worker": where}
    return {"status": "done", "measures": measures, "seconds": time.perf_counter() - started, "worker": where}
