"""Layers 3 and 4 in Dagster: the `observations` asset, the `mental_models` asset (one dynamic partition per
model), their jobs, the nightly schedule, the sensors that run them, and their asset checks.

Partitioning, on purpose (see the README):
- `observations` is not partitioned. Consolidation works per entity across every day and platform (a
  person's facts arrive from all of them), and its unit of pending work is "facts not yet consolidated",
  tracked in the store; an unpartitioned asset that takes whatever is pending is incremental by
  construction, and one run at a time per store is enforced by the core (a lock).
- `mental_models` has one dynamic partition per model (its root id), so a person refreshes one model
  from the UI, and a refresh costs one model's report, never all of them.

Automation: consolidation runs (1) after new facts land, from a sensor on `embeddings` materialisations;
(2) nightly at 03:00, ending every open session first; (3) when a session ends (a new session id
appears: sensors/sessions.py, the one session trigger). Models are refreshed by a sensor that asks
for the partitions that are due.
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import dagster as dg

from nexus_memory.core.config import Settings, load_settings
from nexus_memory.embeddings.step import embed_pending
from nexus_memory.lifecycle import sessions
from nexus_memory.mental_models import ensure_emergent, refresh_model, sync_dossiers
from nexus_memory.mental_models.api import models_to_materialize
from nexus_memory.mental_models.narrative import Narrator, configured_narrator
from nexus_memory.observations import ConsolidationBusy, consolidate, pick_consolidator
from nexus_memory.observations.duplicates import near_duplicate_pairs
from nexus_memory.observations.store import dangling_observation_facts, pending_fact_count
from nexus_memory.observations.triggers import facts_high_water
from resources import EmbedderResource, StoresResource

SQLITE_POOL = "nexus_sqlite"  # the write pool of every asset that writes the stores (assets.py)
GROUP = "memory"  # one group: the lineage shows all six layers in one graph
mental_model_partitions = dg.DynamicPartitionsDefinition(name="mental_model")


class ConsolidatorResource(dg.ConfigurableResource):
    """Who consolidates: the writer's LLM when NEXUS_LLM_BASE_URL/NEXUS_LLM_MODEL are set, else offline rules."""

    llm_base_url: str = ""
    llm_model: str = ""
    offline: bool = False

    def _settings(self, settings: Settings) -> Settings:
        overrides = {"llm_base_url": self.llm_base_url, "llm_model": self.llm_model}
        return load_settings(data_dir=settings.data_dir, **{k: v for k, v in overrides.items() if v})

    def get(self, settings: Settings) -> Any:
        return pick_consolidator(self._settings(settings), offline=self.offline)

    def narrator(self, settings: Settings) -> Narrator | None:
        """The LLM that writes mental models as narratives, when one is configured (else offline reports)."""
        return configured_narrator(self._settings(settings), offline=self.offline)


class SessionConfig(dg.Config):
    """nightly: end every open session first (the 03:00 run); otherwise only those a newer session ended."""

    nightly: bool = False


def _md_table(header: list[str], rows: list[list[object]]) -> dg.MetadataValue:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c).replace("|", "/") for c in row) + " |" for row in rows]
    return dg.MetadataValue.md("\n".join(lines))


@dg.asset(
    deps=[dg.AssetKey("embeddings")],
    group_name=GROUP,
    pool=SQLITE_POOL,
    description="Layer 3: facts consolidated into versioned observations (one entity, one topic each), "
    "plus an emergent mental model for each most-discussed entity.",
)
def observations(
    context: dg.AssetExecutionContext, config: SessionConfig, stores: StoresResource, consolidator: ConsolidatorResource
) -> dg.MaterializeResult:
    settings = stores.settings()
    with stores.open() as s:
        worker = consolidator.get(settings)
        try:
            report = consolidate(
                s, worker, on_progress=lambda n, r: context.log.info(f"{n} facts seen, {r.isolated} isolated")
            )
        except ConsolidationBusy as busy:
            context.log.info(str(busy))
            return dg.MaterializeResult(metadata={"skipped": str(busy)})
        # Sessions that ended (a newer one started, or the nightly run) are stamped once their facts are
        # consolidated; the consolidation they wait for is the one that just ran.
        ended = sessions.consolidate_ended(s, nightly=config.nightly, consolidate=lambda _: report.as_dict())
        created = ensure_emergent(s, settings.emergent_models, narrator=consolidator.narrator(settings))
        dossiers = sync_dossiers(s)
    if created:
        context.instance.add_dynamic_partitions(
            mental_model_partitions.name or "mental_model", [m.root_id for m in created]
        )
    metadata: dict[str, Any] = {
        "consolidator": report.consolidator,
        "facts_consolidated": report.consolidated,
        "facts_isolated": report.isolated,
        "facts_failed": report.failed,
        "facts_waiting_for_vectors": report.waiting_for_vectors,
        "observations_created": report.observations_created,
        "observations_versioned": report.observations_versioned,
        "observations_retired": report.observations_retired,
        "near_duplicates_merged": report.merged_duplicates,
        "observations": report.observations,
        "facts_per_observation": report.facts_per_observation,
        "stale_observations": report.stale_observations,
        "llm_prompt_tokens": report.prompt_tokens,
        "llm_completion_tokens": report.completion_tokens,
        "sessions_ended": ended.ended,
        "sessions_consolidated": ended.consolidated,
        "emergent_models_created": len(created),
        "dossiers_written": dossiers,
        "seconds": report.seconds,
    }
    if report.failures:
        metadata["failures"] = _md_table(["fact", "error"], [[f["fact_id"], f["error"]] for f in report.failures[:50]])
        # Good facts are committed; failing the step says a rerun is needed (only failed facts are redone).
        raise dg.Failure(
            description=f"{report.failed} facts could not be consolidated; rerun to retry them", metadata=metadata
        )
    return dg.MaterializeResult(metadata=metadata)


@dg.asset(
    partitions_def=mental_model_partitions,
    deps=[observations],
    group_name=GROUP,
    pool=SQLITE_POOL,
    description="Layer 4: one mental model (a versioned report and its markdown dossier) per partition.",
)
def mental_models(
    context: dg.AssetExecutionContext,
    stores: StoresResource,
    embedder: EmbedderResource,
    consolidator: ConsolidatorResource,
) -> dg.MaterializeResult:
    model_key = context.partition_key
    model = embedder.get()
    narrator = consolidator.narrator(stores.settings())
    with stores.open() as s:
        fresh, changed = refresh_model(s, model_key, embedder=model, narrator=narrator)
        embed_pending(s, model, target_types=("mental_model",))
    context.log.info(f"{model_key}: {'new version' if changed else 'unchanged'} v{fresh.version}")
    return dg.MaterializeResult(
        metadata={
            "model": fresh.id,
            "name": fresh.name,
            "version": fresh.version,
            "new_version": changed,
            "subtype": fresh.subtype,
            "observations": sum(1 for t, _ in fresh.sources if t == "observation"),
            "report_chars": len(fresh.description),
            "report": dg.MetadataValue.md(fresh.description[:4000]),
            "llm_prompt_tokens": narrator.prompt_tokens if narrator else 0,
            "llm_completion_tokens": narrator.completion_tokens if narrator else 0,
        }
    )


consolidation_job = dg.define_asset_job(
    "consolidation",
    selection=dg.AssetSelection.assets(observations),
    description="Consolidate pending facts into observations (and create emergent mental models).",
)

refresh_mental_models_job = dg.define_asset_job(
    "refresh_mental_models",
    selection=dg.AssetSelection.assets(mental_models),
    description="Refresh the selected mental models (one partition per model).",
)

nightly_consolidation = dg.ScheduleDefinition(
    name="nightly_consolidation",
    job=consolidation_job,
    cron_schedule="0 3 * * *",
    run_config={"ops": {"observations": {"config": {"nightly": True}}}},
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Every night at 03:00 (UTC): end every open session and consolidate, whatever the sensors did.",
)


@dg.sensor(
    job=consolidation_job,
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Watches `embeddings`: when new fact vectors land, consolidate them (one run per batch of facts).",
)
def consolidate_after_embeddings(context: dg.SensorEvaluationContext, stores: StoresResource) -> dg.SensorResult:
    latest = context.instance.fetch_materializations(dg.AssetKey("embeddings"), limit=1).records
    seen = int(context.cursor or 0)
    if not latest or latest[0].storage_id <= seen:
        return dg.SensorResult(skip_reason="no new fact vectors")
    cursor = str(latest[0].storage_id)
    with stores.open() as s:
        pending, high_water = pending_fact_count(s.conn), facts_high_water(s.conn)
    if not pending:
        return dg.SensorResult(skip_reason="no fact waits for consolidation", cursor=cursor)
    return dg.SensorResult(run_requests=[dg.RunRequest(run_key=f"facts:{high_water}")], cursor=cursor)


@dg.sensor(
    job=refresh_mental_models_job,
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Registers new mental models as partitions and refreshes the ones that are due "
    "(stale and refreshed after consolidation) or never materialised.",
)
def mental_models_sensor(context: dg.SensorEvaluationContext, stores: StoresResource) -> dg.SensorResult:
    name = mental_model_partitions.name or "mental_model"
    known = set(context.instance.get_dynamic_partitions(name))
    materialized = context.instance.get_materialized_partitions(mental_models.key)
    with stores.open() as s:
        todo = models_to_materialize(s, sorted(materialized))
        versions = {key: _current_id(s, key) for key in todo}
    new = [key for key in todo if key not in known]
    return dg.SensorResult(
        run_requests=[dg.RunRequest(run_key=f"{key}:{versions[key]}", partition_key=key) for key in todo],
        dynamic_partitions_requests=[mental_model_partitions.build_add_request(new)] if new else [],
        skip_reason=None if todo else "no mental model is due",
    )


def _current_id(stores: Any, root_id: str) -> str:
    from nexus_memory.mental_models import get_model

    return get_model(stores, root_id).id


@dg.asset_check(asset=observations, description="No two current observations of one entity are near-duplicates.")
def observations_not_duplicated(context: dg.AssetCheckExecutionContext, stores: StoresResource) -> dg.AssetCheckResult:
    with stores.open() as s:
        pairs = near_duplicate_pairs(s.conn)
    return dg.AssetCheckResult(
        passed=not pairs,
        metadata={"near_duplicate_pairs": len(pairs), "examples": dg.MetadataValue.json([list(p) for p in pairs[:5]])},
    )


@dg.asset_check(asset=observations, description="observation_facts only point at facts that exist (provenance).")
def observation_facts_exist(context: dg.AssetCheckExecutionContext, stores: StoresResource) -> dg.AssetCheckResult:
    with stores.open() as s:
        dangling = dangling_observation_facts(s.conn)
    return dg.AssetCheckResult(passed=dangling == 0, metadata={"links_to_missing_facts": dangling})


CONSOLIDATION_ASSETS = [observations, mental_models]
CONSOLIDATION_CHECKS = [observations_not_duplicated, observation_facts_exist]
CONSOLIDATION_JOBS = [consolidation_job, refresh_mental_models_job]
CONSOLIDATION_SCHEDULES = [nightly_consolidation]
CONSOLIDATION_SENSORS = [consolidate_after_embeddings, mental_models_sensor]


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


def run_consolidation(
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
