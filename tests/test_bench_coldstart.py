"""`nexus-memory bench coldstart` as a smoke test: one cold process per command and query path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from built_store import built_copy

from nexus_memory import cli
from nexus_memory.bench.coldstart import BACKENDS, measure, run


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


def test_cli_recall_and_context_never_import_torch(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> None:
    """The cold path the benchmark times: once the export is checked, no torch in the process."""
    settings = built_copy(tmp_path_factory, tmp_path)
    script = (
        "import json, sys\n"
        "from nexus_memory.cli import main\n"
        "main(['recall', 'When is the Atlas launch?', '--json'])\n"
        "main(['context', 'When is the Atlas launch?'])\n"
        "heavy = [m for m in ('torch', 'sentence_transformers', 'transformers') if m in sys.modules]\n"
        "print(json.dumps(heavy))\n"
    )
    env = {**os.environ, "NEXUS_DATA_DIR": str(settings.data_dir), "NEXUS_QUERY_BACKEND": "onnx"}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    *answers, heavy = out.stdout.strip().splitlines()
    assert json.loads(heavy) == []
    assert "Atlas" in "\n".join(answers) and "## Relevant memory" in out.stdout
