"""Crash recovery: `nexus-memory pipeline` killed with SIGKILL at several points, then run again.

Each kill leaves a Dagster run STARTED, holding its platform's run slot and its step's pool slot; the
next pipeline marks it failed and frees them, finishes the work, and the stores end up as those of
an uninterrupted run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import dagster as dg
import numpy as np
import pytest
from webserver import REPO, dagster_home

from nexus_memory.core.config import Settings, load_settings
from nexus_memory.core.stores import Stores
from nexus_memory.embeddings.query_encoder import PARITY_MIN_COSINE
from nexus_memory.events.ledger import RawRecord, ingest
from nexus_memory_assets.pipeline import run_pipeline

PEOPLE = ["Priya Kapoor", "Raj Patel", "Dana Whitfield", "Marcus Lee"]
TEXTS = [
    "We moved the Atlas launch to March 25 because the vendor slipped.",
    "Priya is moving to Berlin in May for the new office.",
    "Raj said the payments SDK will not be ready until March 14.",
    "Dana booked the offsite in Lisbon because the Porto venue was full.",
]


def _records() -> list[dict[str, Any]]:
    """Two platforms, two days, a thread per person: enough episodes to be killed among."""
    records = []
    for day in (3, 4):
        for i, person in enumerate(PEOPLE):
            for j in range(2):
                records.append(
                    {
                        "id": f"c{day}{i}{j}",
                        "platform": "chat",
                        "sender_id": f"user{i}",
                        "sender_name": person,
                        "thread_id": f"t{i}",
                        "content": TEXTS[(i + j + day) % len(TEXTS)],
                        "as_of": f"2025-03-0{day}T{9 + i}:0{j}:00Z",
                    }
                )
        records.append(
            {
                "id": f"m{day}",
                "platform": "mail",
                "sender_id": "dana@northwind.example",
                "sender_name": "Dana Whitfield",
                "thread_id": f"launch{day}",
                "content": TEXTS[day % len(TEXTS)],
                "as_of": f"2025-03-0{day}T15:00:00Z",
            }
        )
    return records


def _ingest(settings: Settings) -> None:
    with Stores(settings) as stores:
        ingest(stores, [RawRecord("kill-test", i, r, json.dumps(r)) for i, r in enumerate(_records(), 1)])


def _fingerprint(settings: Settings) -> dict[str, Any]:
    """The stores' content without generated ids and clocks."""
    with Stores(settings) as stores:
        q = stores.conn.execute
        facts = {r[0]: r[1] for r in q("SELECT id, text || ' @' || source_event_id || ' ' || as_of FROM facts")}
        entities = {r[0]: f"{r[1]} ({r[2]})" for r in q("SELECT id, name, type FROM entities")}
        vectors = {
            facts[r[0]]: np.frombuffer(r[1], dtype=np.float32)
            for r in q("SELECT target_id, embedding FROM embeddings WHERE target_type = 'fact'")
        }
        return {
            # The partitioned layers' episodes; knowledge episodes (observations) are versioned by each
            # consolidation, so a pipeline run more often leaves more of their versions.
            "episodes": sorted(
                tuple(r)
                for r in q(
                    "SELECT id, partition_key, event_count, parent_id FROM episodes WHERE partition_key IS NOT NULL"
                )
            ),
            "outcomes": sorted(tuple(r) for r in q("SELECT episode_id, status, facts_written FROM episode_processing")),
            "processed": sorted(r[0] for r in q("SELECT event_id FROM memory_processing_log")),
            "facts": sorted(facts.values()),
            "entities": sorted(entities.values()),
            "links": sorted(
                f"{facts[r[0]]} -> {entities[r[1]]}" for r in q("SELECT fact_id, entity_id FROM fact_entities")
            ),
            "causal": sorted(
                f"{facts[r[0]]} -> {facts[r[1]]}" for r in q("SELECT from_fact_id, to_fact_id FROM causal_links")
            ),
            "candidates": sorted(
                f"{entities[r[0]]} ~ {entities[r[1]]} {r[2]}"
                for r in q("SELECT entity_a_id, entity_b_id, status FROM merge_candidates")
            ),
            "vector_keys": sorted(vectors),
            "index_rows": q("SELECT count(*) FROM vec_embeddings").fetchone()[0],
            "_vectors": vectors,
        }


# Each kill point: (module, attribute owner, attribute, SIGKILL on the n-th call, before calling it).
KILLS = [
    # Inside the third episode's transaction (the writer has begun; nothing of it may survive).
    ("nexus_memory.writer.offline_writer", "OfflineWriter", "write", 3),
    # In the embeddings step, before its first batch of vectors is stored.
    ("nexus_memory.embeddings.vectors.index", "VectorIndex", "add", 1),
    # Between layers of the second platform's run (events done, episodes not started).
    ("nexus_memory.pipeline.layers", None, "run_layer", 6),
]

KILLER = """
import os, signal, sys
import {module} as target
owner = getattr(target, {owner!r}) if {owner!r} else target
original = getattr(owner, {name!r})
calls = [0]
def killing(*args, **kwargs):
    calls[0] += 1
    if calls[0] == {at}:
        os.kill(os.getpid(), signal.SIGKILL)
    return original(*args, **kwargs)
setattr(owner, {name!r}, killing)
from nexus_memory.cli import main
sys.exit(main(["pipeline"]))
"""


def _killed_pipeline(env: dict[str, str], module: str, owner: str | None, name: str, at: int) -> None:
    code = KILLER.format(module=module, owner=owner, name=name, at=at)
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == -signal.SIGKILL, f"not killed at {module}.{name} #{at}: {done.stderr[-2000:]}"


def _unfinished(instance: dg.DagsterInstance) -> list[str]:
    statuses = [dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.NOT_STARTED]
    return [r.run_id for r in instance.get_runs(filters=dg.RunsFilter(statuses=statuses))]


def reference_and_fresh(
    tmp_path: Path, ingest_events: Callable[[Settings], None], name: str
) -> tuple[Settings, Settings]:
    """Stores an uninterrupted pipeline built from `ingest_events`, and fresh stores (`name`) with the same events."""
    reference = load_settings(data_dir=tmp_path / "reference", inbox_dir=tmp_path / "inbox")
    ingest_events(reference)
    assert run_pipeline(reference, instance=dg.DagsterInstance.ephemeral()).ok
    settings = load_settings(data_dir=tmp_path / name, inbox_dir=tmp_path / "inbox")
    ingest_events(settings)
    return reference, settings


@pytest.mark.slow
def test_pipeline_killed_at_several_points_then_rerun_matches_an_uninterrupted_run(tmp_path: Path) -> None:
    reference, settings = reference_and_fresh(tmp_path, _ingest, "killed")
    home = dagster_home(tmp_path)
    env = {**os.environ, "DAGSTER_HOME": str(home), "NEXUS_DATA_DIR": str(settings.data_dir)}
    orphans: list[str] = []
    for module, owner, name, at in KILLS:
        _killed_pipeline(env, module, owner, name, at)
        instance = dg.DagsterInstance.from_config(str(home))
        # The killed run is left STARTED (the one before it was marked failed by this pipeline's start).
        [orphan] = _unfinished(instance)
        orphans.append(orphan)
        instance.dispose()

    instance = dg.DagsterInstance.from_config(str(home))
    assert orphans[-1] in instance.event_log_storage.get_concurrency_run_ids()  # it holds a pool slot
    outcome = run_pipeline(settings, instance=instance)
    assert outcome.ok, outcome.as_dict()
    assert outcome.orphaned_runs == orphans[-1:]
    assert _unfinished(instance) == []
    for run_id in orphans:
        assert instance.get_run_by_id(run_id).status == dg.DagsterRunStatus.FAILURE
    assert not set(orphans) & instance.event_log_storage.get_concurrency_run_ids()

    got, want = _fingerprint(settings), _fingerprint(reference)
    got_vectors, want_vectors = got.pop("_vectors"), want.pop("_vectors")
    assert got == want
    # Batches differ (after a kill, between processes): the same vectors up to rounding, which in
    # bfloat16 (NEXUS_EMBED_PRECISION) moves single components by ~1e-3.
    for key, vector in want_vectors.items():
        assert float(got_vectors[key] @ vector) >= PARITY_MIN_COSINE, key
