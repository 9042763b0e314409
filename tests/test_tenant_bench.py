"""`bench tenants` runs each tenant in a process of its own on a data directory of its own, all at once, and sums
them up right. The Dagster side is a stand-in here (what it runs is `bench backfill`'s, tested there): it
reads the tenant's store, so the figures come from each tenant's own ingested history."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from nexus_memory.bench import tenants
from nexus_memory.core.config import Settings
from nexus_memory.core.stores import Stores


def _pipeline(settings: Settings, home: Path) -> dict[str, Any]:
    started = time.perf_counter()
    with Stores(settings) as stores:
        (count,) = stores.conn.execute("SELECT count(*) FROM events").fetchone()
    assert settings.tenant and str(settings.data_dir).endswith("/data") and not home.exists()
    assert count == 40, (settings.tenant, count)  # its own history only: 40 events
    return {"wall_s": time.perf_counter() - started, "ok": True, "runs": 1}


def test_tenants_run_side_by_side_each_on_its_own_history(tmp_path: Path) -> None:
    result = tenants.run(3, 40, _pipeline, days=5, directory=tmp_path)

    assert result["ok"] and result["tenants"] == 3 and result["events_per_tenant"] == 40
    together = result["together"]
    assert [t["tenant"] for t in together["per_tenant"]] == ["bench-0", "bench-1", "bench-2"]
    assert all(t["runs"] == 1 and t["seconds"] >= t["ingest_s"] for t in together["per_tenant"])
    span = together["seconds"]  # rounded to 0.1 s
    assert 3 * 40 / (span + 0.05) - 0.1 <= together["events_per_s"] <= 3 * 40 / max(span - 0.05, 0.001) + 0.1
    assert together["latency_s"]["min"] <= together["latency_s"]["median"] <= together["latency_s"]["max"]
    assert result["throughput_ratio"] > 0 and result["latency_ratio"] > 0
    assert list(tmp_path.iterdir()) == []  # the tenants' directories are gone


def test_a_failing_tenant_is_reported_not_waited_for(tmp_path: Path) -> None:
    def broken(settings: Settings, home: Path) -> dict[str, Any]:
        raise RuntimeError("no Dagster here")

    try:
        tenants.run(2, 10, broken, days=2, directory=tmp_path)
    except RuntimeError as exc:
        assert "bench-0 failed: RuntimeError: no Dagster here" in str(exc)
    else:
        raise AssertionError("a failing tenant must fail the bench")
