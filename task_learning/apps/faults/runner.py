"""Select and run fault probes; a probe that crashes is reported as not handled, never a crash."""
from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from task_learning.apps.faults import (
    batch_probes,
    data_probes,
    hostile_probes,
    import_probes,
    input_probes,
    llm_probes,
    persistence_probes,
    ros_probes,
    web_probes,
)
from task_learning.apps.faults.base import CATEGORIES, Probe, ProbeContext, ProbeResult

log = logging.getLogger(__name__)


def all_probes() -> list[Probe]:
    return (llm_probes.probes() + input_probes.cli_probes() + hostile_probes.cli_probes()
            + input_probes.config_probes() + hostile_probes.config_probes()
            + persistence_probes.probes() + hostile_probes.persistence_probes() + import_probes.probes()
            + ros_probes.probes() + batch_probes.probes() + web_probes.probes() + data_probes.probes())


def run_probes(ctx: ProbeContext, categories: Sequence[str] = CATEGORIES,
               on_result: Callable[[ProbeResult], None] | None = None) -> list[ProbeResult]:
    results: list[ProbeResult] = []
    for probe in all_probes():
        if probe.category not in categories or (ctx.fast and not probe.fast):
            continue
        try:
            outcome = probe.run(ctx)
        except Exception as exc:  # the probe itself broke: a finding, reported as such
            log.debug("probe %s crashed", probe.name, exc_info=True)
            outcome = ProbeResult(probe.category, probe.name, False, f"probe crashed: {type(exc).__name__}: {exc}")
        for result in outcome if isinstance(outcome, list) else [outcome]:
            results.append(result)
            if on_result is not None:
                on_result(result)
    return results
