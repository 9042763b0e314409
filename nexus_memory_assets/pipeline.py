"""`nexus-memory pipeline`: every event with work left, through Dagster in-process, one run per platform.

This is the code path of `make demo`, and it goes through Dagster as a UI launch does: the same job
(`memory_pipeline`, or `rerun_failed_episodes` for --only-failed), the same assets, checks and
resources, a range of days per run as a UI backfill makes, and run records in DAGSTER_HOME when it
is set. Before it starts anything, runs left unfinished by a killed process are marked failed.
Afterwards it says which events still have work left and why, so nothing is skipped in silence.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import dagster as dg
import yaml

from nexus_memory.core.config import Settings, SetupError
from nexus_memory.core.stores import Stores
from nexus_memory.events.partitions import Calendar, ledger_partitions, platform_batches, split_partition_key
from nexus_memory.mental_models.api import models_to_materialize
from nexus_memory.pipeline.layers import pending_events, pending_partitions
from nexus_memory.writer.run import FailedEpisode, failed_episodes
from nexus_memory_assets.consolidation.assets import mental_model_partitions, mental_models
from nexus_memory_assets.consolidation.jobs import consolidation_job, refresh_mental_models_job
from nexus_memory_assets.definitions import build_definitions
from nexus_memory_assets.partitions import pipeline_run_tags, register_partitions
from nexus_memory_assets.runs import WORKER_TAG, fail_orphaned_runs, worker_tag
from resources import StoresResource


def get_instance() -> dg.DagsterInstance:
    """The DAGSTER_HOME instance (runs show in the UI) when set, else a throwaway one. SetupError, with
    the one line to say, when DAGSTER_HOME cannot be one (a file, a relative path, a broken dagster.yaml)."""
    home = os.environ.get("DAGSTER_HOME")
    if not home:
        return dg.DagsterInstance.ephemeral()
    try:
        os.makedirs(home, exist_ok=True)
        return dg.DagsterInstance.get()
    except (OSError, dg.DagsterError, yaml.YAMLError) as exc:
        raise SetupError(f"DAGSTER_HOME={home} cannot hold the run records: {exc}") from exc


@dataclass
class PlatformRun:
    """One run: a platform's range of daily partitions, what each layer added, and how it ended."""

    platform: str
    first: str
    last: str
    run_id: str = ""
    success: bool = False
    rows: dict[str, int] = field(default_factory=dict)  # layer -> rows added
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)


@dataclass
class ConsolidationOutcome:
    """What `nexus-memory pipeline`'s consolidation did: the observations run and the mental models refreshed."""

    observations: str = "not run"  # 'ok' or 'failed'
    observation_rows: dict[str, Any] = field(default_factory=dict)  # the observations asset's counts
    mental_models: list[str] = field(default_factory=list)  # partitions refreshed
    failed: list[str] = field(default_factory=list)  # partitions whose refresh failed

    @property
    def ok(self) -> bool:
        return self.observations == "ok" and not self.failed


@dataclass
class PipelineOutcome:
    """What `nexus-memory pipeline` did, and what is left undone."""

    runs: list[PlatformRun] = field(default_factory=list)
    orphaned_runs: list[str] = field(default_factory=list)
    unprocessed_events: dict[str, int] = field(default_factory=dict)  # platform -> events with work left
    failed_episodes: list[FailedEpisode] = field(default_factory=list)
    consolidation: ConsolidationOutcome | None = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        layers_ok = all(r.success for r in self.runs) and not self.unprocessed_events and not self.failed_episodes
        return layers_ok and (self.consolidation is None or self.consolidation.ok)

    def as_dict(self) -> dict[str, Any]:
        return {
            "runs": [vars(r) for r in self.runs],
            "orphaned_runs_marked_failed": self.orphaned_runs,
            "unprocessed_events": self.unprocessed_events,
            "failed_episodes": [vars(f) for f in self.failed_episodes],
            "consolidation": vars(self.consolidation) if self.consolidation else None,
            "seconds": self.seconds,
        }


def _selected(stores: Stores, platforms: list[str] | None, only_failed: bool) -> list[tuple[str, str]]:
    """Ledger (day, platform) pairs to run: those with work left, or those with failed episodes."""
    if only_failed:
        pairs = sorted({split_partition_key(f.partition_key) for f in failed_episodes(stores)})
        return [p for p in pairs if platforms is None or p[1] in platforms]
    return pending_partitions(stores, platforms)


def _run_summary(run: PlatformRun, result: dg.ExecuteInProcessResult) -> None:
    """Rows per layer (a range run records the same metadata on each partition: take one) and errors."""
    run.run_id, run.success = result.run_id, result.success
    for event in result.get_asset_materialization_events():
        materialization = event.materialization
        layer = materialization.asset_key.to_user_string()
        rows = materialization.metadata.get("rows")
        if layer not in run.rows and rows is not None:
            run.rows[layer] = int(rows.value)  # type: ignore[arg-type]
    for event in result.get_step_failure_events():
        error = event.step_failure_data.error
        message = (error.message if error else event.message or "").strip().splitlines()
        run.errors.append(f"{event.step_key}: {message[0] if message else 'failed'}")


def run_consolidation_jobs(
    definitions: dg.Definitions,
    instance: dg.DagsterInstance,
    run_config: dict[str, Any] | None = None,
    progress: Callable[[str], None] | None = None,
) -> ConsolidationOutcome:
    """`nexus-memory pipeline`'s last steps, in-process through the same jobs the sensors launch:
    `consolidation` (observations), then `refresh_mental_models` for every partition that is due or new."""
    say = progress or (lambda line: None)
    outcome = ConsolidationOutcome()
    result = definitions.resolve_job_def(consolidation_job.name).execute_in_process(
        run_config=run_config, instance=instance, raise_on_error=False
    )
    outcome.observations = "ok" if result.success else "failed"
    for event in result.get_asset_materialization_events():
        outcome.observation_rows = {
            k: v.value for k, v in event.materialization.metadata.items() if isinstance(v.value, int | float)
        }
    say(f"observations: {outcome.observations}")
    name = mental_model_partitions.name or "mental_model"
    stores: StoresResource = definitions.resources["stores"]  # type: ignore[assignment]
    with stores.open() as s:
        todo = models_to_materialize(s, sorted(instance.get_materialized_partitions(mental_models.key)))
    new = [key for key in todo if key not in set(instance.get_dynamic_partitions(name))]
    if new:
        instance.add_dynamic_partitions(name, new)
    refresh = definitions.resolve_job_def(refresh_mental_models_job.name)
    for key in todo:
        done = refresh.execute_in_process(
            run_config=run_config, partition_key=key, instance=instance, raise_on_error=False
        )
        say(f"mental model {key}: {'ok' if done.success else 'FAILED'}")
        (outcome.mental_models if done.success else outcome.failed).append(key)
    return outcome


def run_pipeline(
    settings: Settings,
    *,
    platforms: list[str] | None = None,
    only_failed: bool = False,
    instance: dg.DagsterInstance | None = None,
    progress: Callable[[str], None] | None = None,
) -> PipelineOutcome:
    """Run every layer over the days with work left, one in-process Dagster run per platform.

    `progress` gets a line as each run starts; the layer lines of the run itself go to stderr
    (the `terse` logger) when `progress` is given, and nowhere else than the run log when not.
    """
    instance = instance or get_instance()
    outcome = PipelineOutcome(orphaned_runs=[run.run_id for run in fail_orphaned_runs(instance)])
    calendar = Calendar.from_settings(settings)
    with Stores(settings) as stores:
        selected, every_pair = _selected(stores, platforms, only_failed), ledger_partitions(stores)
    # Every day and platform of the ledger is a partition before any run names one.
    order = register_partitions(instance, every_pair, calendar)
    ranges = platform_batches(selected, calendar, order)
    definitions = build_definitions(settings)
    job = definitions.resolve_job_def("rerun_failed_episodes" if only_failed else "memory_pipeline")
    run_config = {"loggers": {"terse": {"config": {"log_level": "INFO" if progress else "CRITICAL"}}}}
    started = time.perf_counter()
    for i, (platform, first, last) in enumerate(ranges, 1):
        if progress:
            span = first if first == last else f"{first} .. {last}"
            progress(f"[{i}/{len(ranges)}] {platform}: partitions {span}")
        run = PlatformRun(platform, first, last)
        run_started = time.perf_counter()
        result = job.execute_in_process(
            run_config=run_config,
            instance=instance,
            raise_on_error=False,
            tags={**pipeline_run_tags(platform, first, last), WORKER_TAG: worker_tag()},
        )
        run.seconds = round(time.perf_counter() - run_started, 2)
        _run_summary(run, result)
        outcome.runs.append(run)
    # Layers 5 and 6 (observations, mental models) once every layer below them is done.
    outcome.consolidation = run_consolidation_jobs(definitions, instance, run_config, progress)
    outcome.seconds = round(time.perf_counter() - started, 2)
    with Stores(settings) as stores:
        left = pending_events(stores)
        outcome.unprocessed_events = {p: n for p, n in left.items() if platforms is None or p in platforms}
        outcome.failed_episodes = [
            f
            for f in failed_episodes(stores)
            if platforms is None or split_partition_key(f.partition_key)[1] in platforms
        ]
    return outcome
