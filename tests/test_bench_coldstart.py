"""`nexus-memory bench coldstart` as a smoke test: one cold process per command and query path."""

from __future__ import annotations

from pathlib import Path

import pytest
from built_store import built_copy

from nexus_memory import cli
from nexus_memory.bench_coldstart import BACKENDS, measure, run


@pytest.mark.slow
def test_coldstart_bench_runs_both_paths(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> None:
    settings = built_copy(tmp_path_factory, tmp_path)
    report = run(1, data_dir=settings.data_dir)
    assert report["runs"] == 1 and report["store"]["facts"] > 0
    assert report["onnx_export_existed_before_run"] is True  # building the store made the export
    for command in ("recall", "context"):
        for backend in BACKENDS:
            figures = report["results"][command][backend]
            assert figures["runs"] == 1 and figures["min_s"] == figures["median_s"] == figures["max_s"] > 0
            assert figures["median_rss_mb"] > 10
        assert report["results"][command]["speedup_median"] > 0
    assert isinstance(report["meets_target"], bool) and isinstance(report["same_top5_recall_results"], bool)


def test_measure_reports_a_child_failure(tmp_path: Path) -> None:
    sample = measure(["/bin/sh", "-c", "echo out; echo broken >&2; exit 3"], {"PATH": "/bin:/usr/bin"})
    assert sample["returncode"] == 3 and sample["stdout"] == "out\n" and "broken" in sample["stderr"]
    assert sample["seconds"] > 0 and sample["rss_mb"] > 0


def test_cli_rejects_zero_runs() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        cli.main(["bench", "coldstart", "--runs", "0"])
