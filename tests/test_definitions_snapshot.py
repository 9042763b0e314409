"""The whole code location, pinned: every asset, check, job, schedule, sensor, pool and resource by name.

The UI, `make demo`, `nexus-memory pipeline` and the deploy/ examples name these; a reorganisation of the
Dagster glue must leave every one of them as it is.
"""

from __future__ import annotations

import dagster as dg
import pytest

from nexus_memory_assets.definitions import defs

MEMORY = "memory"
ANALYTICS = "analytics"
LAYER = "MultiPartitionsDefinition"  # (day, platform): the days and platforms that hold events
PER_MODEL = "DynamicPartitionsDefinition"  # one partition per mental model

# asset key -> (partitions definition type, group, pool)
ASSETS: dict[str, tuple[str | None, str, str | None]] = {
    "events": (LAYER, MEMORY, "nexus_sqlite"),
    "episodes": (LAYER, MEMORY, "nexus_sqlite"),
    "facts": (LAYER, MEMORY, "nexus_sqlite"),
    "embeddings": (LAYER, MEMORY, "nexus_sqlite"),
    "observations": (None, MEMORY, "nexus_sqlite"),
    "mental_models": (PER_MODEL, MEMORY, "nexus_sqlite"),
    "ingest_activity": (None, ANALYTICS, None),
    "writer_outcomes": (None, ANALYTICS, None),
    "entity_graph": (None, ANALYTICS, None),
    "consolidation_coverage": (None, ANALYTICS, None),
    "embedding_coverage": (None, ANALYTICS, None),
}

# asset key -> the keys it depends on
DEPS: dict[str, set[str]] = {
    "events": set(),
    "episodes": {"events"},
    "facts": {"episodes"},
    "embeddings": {"facts"},
    "observations": {"embeddings"},
    "mental_models": {"observations"},
    "ingest_activity": {"events", "episodes", "facts"},
    "writer_outcomes": {"episodes", "facts"},
    "entity_graph": {"facts"},
    "consolidation_coverage": {"facts"},
    "embedding_coverage": {"embeddings"},
}

# (asset, check) -> (blocking, partitioned)
CHECKS: dict[tuple[str, str], tuple[bool, bool]] = {
    ("episodes", "episodes_cover_events"): (False, True),
    ("episodes", "episodes_do_not_overlap"): (True, True),
    ("episodes", "episode_links_intact"): (True, True),
    ("facts", "facts_have_provenance"): (True, True),
    ("facts", "facts_in_keyword_index"): (False, True),
    ("facts", "fact_links_intact"): (False, False),
    ("facts", "merges_have_candidates"): (True, False),
    ("facts", "no_failed_episodes"): (False, True),
    ("embeddings", "facts_embedded"): (False, True),
    ("embeddings", "vector_index_matches_embeddings"): (False, True),
    ("embeddings", "fact_vectors_current"): (False, False),
    ("observations", "observations_not_duplicated"): (False, False),
    ("observations", "observation_facts_exist"): (False, False),
}

# job name -> (the asset keys it selects, its ops that are not assets or checks, with their pools)
JOBS: dict[str, tuple[set[str], dict[str, str | None]]] = {
    "memory_pipeline": ({"events", "episodes", "facts", "embeddings"}, {}),
    "rerun_failed_episodes": ({"facts", "embeddings"}, {}),
    "consolidation": ({"observations"}, {}),
    "refresh_mental_models": ({"mental_models"}, {}),
    "analytics": (
        {"ingest_activity", "writer_outcomes", "entity_graph", "consolidation_coverage", "embedding_coverage"},
        {},
    ),
    "ingest_inbox_file": (set(), {"import_file": "nexus_sqlite"}),
    "reembed_job": (set(), {"reembed_vectors": "nexus_sqlite"}),
    "nightly_vector_index": (set(), {"retrain_vector_indexes": "nexus_sqlite"}),
    "nightly_enrichment": (set(), {"enrich_entities": "nexus_sqlite", "detect_conflicts": "nexus_sqlite"}),
    "nightly_decay": (set(), {"apply_decay": "nexus_sqlite"}),
    "weekly_reflection": (set(), {"write_reflection": "nexus_sqlite"}),
    "forget_job": (set(), {"forget_target": "nexus_sqlite"}),
}

# schedule name -> (cron, job, runs by default)
SCHEDULES: dict[str, tuple[str, str, bool]] = {
    "nightly_enrichment_schedule": ("0 2 * * *", "nightly_enrichment", True),
    "nightly_consolidation": ("0 3 * * *", "consolidation", True),
    "nightly_decay_schedule": ("0 4 * * *", "nightly_decay", True),
    "nightly_vector_index_schedule": ("30 4 * * *", "nightly_vector_index", True),
    "weekly_reflection_schedule": ("0 3 * * 0", "weekly_reflection", True),
    "analytics_hourly": ("0 * * * *", "analytics", False),
}

# sensor name -> (the jobs it launches, minimum interval in seconds, runs by default)
SENSORS: dict[str, tuple[set[str], int, bool]] = {
    "new_events_sensor": ({"memory_pipeline", "ingest_inbox_file"}, 15, True),
    "new_session_sensor": ({"consolidation"}, 60, True),
    "consolidate_after_embeddings": ({"consolidation"}, 30, True),
    "mental_models_sensor": ({"refresh_mental_models"}, 60, True),
}

RESOURCES = {"stores", "writer", "embedder", "consolidator"}
LOGGERS = {"console", "terse"}


@pytest.fixture(scope="module")
def repository() -> dg.RepositoryDefinition:
    return defs.get_repository_def()


def test_assets(repository: dg.RepositoryDefinition) -> None:
    graph = repository.asset_graph
    found: dict[str, tuple[str | None, str, str | None]] = {}
    deps: dict[str, set[str]] = {}
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        partitions = type(node.partitions_def).__name__ if node.partitions_def else None
        name = key.to_user_string()
        found[name] = (partitions, node.group_name, repository.assets_defs_by_key[key].op.pool)
        deps[name] = {parent.to_user_string() for parent in node.parent_keys}
    assert found == ASSETS
    assert deps == DEPS


def test_layer_assets_run_a_range_of_days_in_one_run(repository: dg.RepositoryDefinition) -> None:
    for name in ("events", "episodes", "facts", "embeddings"):
        policy = repository.assets_defs_by_key[dg.AssetKey(name)].backfill_policy
        assert policy == dg.BackfillPolicy.single_run(), name


def test_asset_checks(repository: dg.RepositoryDefinition) -> None:
    graph = repository.asset_graph
    found = {
        (key.asset_key.to_user_string(), key.name): (
            graph.get(key).blocking,
            graph.get(key).partitions_def is not None,
        )
        for key in graph.asset_check_keys
    }
    assert found == CHECKS


def test_jobs(repository: dg.RepositoryDefinition) -> None:
    check_ops = {f"{asset}_{check}" for asset, check in CHECKS}
    found: dict[str, tuple[set[str], dict[str, str | None]]] = {}
    for job in repository.get_all_jobs():
        if job.name.startswith("__ASSET_JOB"):
            continue  # Dagster's own job of every asset
        nodes = {node.name: node for node in job.nodes_in_topological_order}
        assets = {name for name in nodes if dg.AssetKey(name) in repository.assets_defs_by_key}
        ops = {
            name: node.definition.pool  # type: ignore[attr-defined]
            for name, node in nodes.items()
            if name not in assets and name not in check_ops
        }
        found[job.name] = (assets, ops)
    assert found == JOBS


def test_partitioned_jobs(repository: dg.RepositoryDefinition) -> None:
    partitioned = {
        job.name: type(job.partitions_def).__name__ for job in repository.get_all_jobs() if job.partitions_def
    }
    assert partitioned == {
        "memory_pipeline": LAYER,
        "rerun_failed_episodes": LAYER,
        "refresh_mental_models": PER_MODEL,
    }


def test_layer_partitions_are_the_days_and_platforms_with_events(repository: dg.RepositoryDefinition) -> None:
    """Both dimensions are dynamic sets the sensor and the pipeline fill (docs/layers.md, "Partitions"): the
    instance's `day` and `platform` partitions, named as the dimensions are."""
    partitions = repository.get_job("memory_pipeline").partitions_def
    assert isinstance(partitions, dg.MultiPartitionsDefinition)
    dimensions = {
        dimension.name: (type(dimension.partitions_def).__name__, dimension.partitions_def.name)  # type: ignore[attr-defined]
        for dimension in partitions.partitions_defs
    }
    assert dimensions == {
        "day": ("DynamicPartitionsDefinition", "day"),
        "platform": ("DynamicPartitionsDefinition", "platform"),
    }


def test_schedules(repository: dg.RepositoryDefinition) -> None:
    found = {
        schedule.name: (
            schedule.cron_schedule,
            schedule.job_name,
            schedule.default_status == dg.DefaultScheduleStatus.RUNNING,
        )
        for schedule in repository.schedule_defs
    }
    assert found == SCHEDULES


def test_sensors(repository: dg.RepositoryDefinition) -> None:
    found = {
        sensor.name: (
            {target.job_name for target in sensor.targets},
            sensor.minimum_interval_seconds,
            sensor.default_status == dg.DefaultSensorStatus.RUNNING,
        )
        for sensor in repository.sensor_defs
    }
    assert found == SENSORS
    assert all(sensor.required_resource_keys == {"stores"} for sensor in repository.sensor_defs)


def test_resources_loggers_and_executor() -> None:
    assert set(defs.resources or {}) == RESOURCES
    assert set(defs.loggers or {}) == LOGGERS
    assert defs.executor is dg.in_process_executor
