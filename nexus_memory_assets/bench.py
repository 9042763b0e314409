"""The Dagster side of `bench backfill`: run_pipeline on a fresh persistent instance, timed per layer step."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nexus_memory.core.config import Settings
from nexus_memory.pipeline.layers import LAYERS
from nexus_memory_assets.instance import persistent_instance
from nexus_memory_assets.pipeline import run_pipeline


def timed_pipeline(settings: Settings, home: Path, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Every platform's range through `run_pipeline` on an instance at `home` (SQLite, as `make ui` has);
    with `progress`, the runs' lines and progress go to stderr as `nexus-memory pipeline` shows them.

    `wall_s` is run_pipeline's up to its consolidation, which is timed apart (`consolidation_s`);
    `seconds` are summed over its runs: each layer's step and the asset checks' steps (the rest of
    `wall_s` is orchestration: creating and starting runs, finding work).
    """
    instance = persistent_instance(home)
    try:
        started = time.perf_counter()
        outcome = run_pipeline(settings, instance=instance, progress=progress)
        wall_s = time.perf_counter() - started
        seconds = dict.fromkeys([*LAYERS, "checks"], 0.0)
        for run in outcome.runs:
            for stats in instance.get_run_step_stats(run.run_id):
                spent = (stats.end_time or stats.start_time or 0) - (stats.start_time or 0)
                seconds[stats.step_key if stats.step_key in LAYERS else "checks"] += spent
        rows = {layer: sum(run.rows.get(layer, 0) for run in outcome.runs) for layer in LAYERS}
        # run_pipeline ends with consolidation (observations, mental models), after every layer's runs.
        consolidation_s = max(0.0, outcome.seconds - sum(run.seconds for run in outcome.runs))
        return {
            "wall_s": wall_s - consolidation_s,
            "seconds": seconds,
            "rows": rows,
            "consolidation_s": consolidation_s,
            "observations": (outcome.consolidation.observation_rows if outcome.consolidation else {}),
            "ok": outcome.ok,
            "runs": len(outcome.runs),
        }
    finally:
        instance.dispose()
