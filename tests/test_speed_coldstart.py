"""A cold query process loads only what a query needs: its own command group, the query model's
weights mapped from one file, no importlib.metadata for the export's key."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest
from built_store import built_copy

from nexus_memory import cli
from nexus_memory.embeddings import query_encoder
from nexus_memory.embeddings.model import DEFAULT_MODEL, Embedder, get_embedder, model_location

# What no query command may import: the operator's analytics (Arrow, DuckDB, Polars), the benchmarks,
# Dagster, torch, the writer's extraction (a query reads only its date helpers).
HEAVY = (
    "nexus_memory.analytics",
    "pyarrow",
    "duckdb",
    "polars",
    "nexus_memory.cli.bench",
    "dagster",
    "torch",
    "nexus_memory.writer.extractor.facts",
)


def _registered(group: str) -> list[str]:
    subcommands = argparse.ArgumentParser().add_subparsers()
    cli.group_module(group).register(subcommands)
    return list(subcommands.choices)


def test_the_command_table_names_each_command_of_each_group() -> None:
    registered = {command: group for group in cli.GROUPS for command in _registered(group)}
    assert registered == cli.COMMAND_GROUPS


def test_a_command_builds_only_its_own_group() -> None:
    parser = cli.build_parser("recall")
    [subcommands] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert sorted(subcommands.choices) == sorted(_registered("memory"))
    # No command, or one no table names: every group, so argparse lists or rejects them as before.
    for command in (None, "no-such-command"):
        [every] = [a for a in cli.build_parser(command)._actions if isinstance(a, argparse._SubParsersAction)]
        assert sorted(every.choices) == sorted(cli.COMMAND_GROUPS)


@pytest.mark.parametrize(
    ("argv", "name"),
    [(["recall", "x"], "recall"), (["-h", "recall"], None), (["bench", "coldstart"], "bench"), ([], None)],
)
def test_command_name_is_the_first_argument_unless_an_option(argv: list[str], name: str | None) -> None:
    assert cli.command_name(argv) == name


def test_an_unknown_command_is_still_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.main(["no-such-command"])
    assert exit_.value.code == 2 and "invalid choice" in capsys.readouterr().err


def test_cold_recall_and_context_import_no_other_group(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """On a store with vectors, so that the query model is opened (the export made by building it)."""
    settings = built_copy(tmp_path_factory, tmp_path)
    script = (
        "import json, os, sys\n"
        "from nexus_memory.cli import main\n"
        "from nexus_memory.embeddings import query_encoder\n"
        "sys.argv = ['nexus-memory', 'recall', 'When is the Atlas launch?', '--json']\n"
        "main()\n"
        "main(['context', 'When is the Atlas launch?'])\n"
        "assert query_encoder._FEW_QUERIES[0] and 'onnxruntime' in sys.modules\n"
        f"heavy = [m for m in {HEAVY!r} if m in sys.modules]\n"
        "groups = sorted(m for m in sys.modules if m.startswith('nexus_memory.cli.'))\n"
        "print(json.dumps([heavy, groups, 'importlib.metadata' in sys.modules,\n"
        "                  os.environ.get('OPENBLAS_NUM_THREADS'), query_encoder._FEW_QUERIES[0]]))\n"
    )
    env = {**os.environ, "NEXUS_DATA_DIR": str(settings.data_dir), "HF_HUB_OFFLINE": "1"}
    env.pop("OPENBLAS_NUM_THREADS", None)
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    assert "Atlas" in out.stdout
    heavy, groups, metadata_imported, blas_threads, few_queries = json.loads(out.stdout.strip().splitlines()[-1])
    assert heavy == [] and groups == ["nexus_memory.cli.common", "nexus_memory.cli.memory"]
    assert metadata_imported is False
    assert blas_threads == "1" and few_queries is True


def test_other_commands_and_callers_keep_prepacking_and_blas_threads(tmp_path: Path) -> None:
    script = (
        "import json, os, sys\n"
        "from nexus_memory.cli import main\n"
        "from nexus_memory.embeddings import query_encoder\n"
        "main(['recall', 'When is the launch?'])\n"  # a caller's argv: not a process of its own
        "sys.argv = ['nexus-memory', 'stats']\n"
        "main()\n"
        "print(json.dumps([os.environ.get('OPENBLAS_NUM_THREADS'), query_encoder._FEW_QUERIES[0]]))\n"
    )
    env = {**os.environ, "NEXUS_DATA_DIR": str(tmp_path / "data")}
    env.pop("OPENBLAS_NUM_THREADS", None)
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [None, False]


def test_installed_versions_read_as_importlib_metadata_does() -> None:
    packages = ("numpy", "onnxruntime", "tokenizers", "sentence-transformers", "PyYAML", "no-such-package-x")
    expected: dict[str, str | None] = {}
    for package in packages:
        try:
            expected[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            expected[package] = None
    assert query_encoder.installed_versions(packages) == expected
    assert expected["no-such-package-x"] is None and expected["numpy"] is not None


@pytest.fixture
def export(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A checked export in a cache of its own."""
    monkeypatch.setenv("NEXUS_MODEL_CACHE", str(tmp_path / "cache"))
    Embedder(DEFAULT_MODEL, get_embedder().model, query_backend="onnx").encode_query("make the export")
    return query_encoder.export_dir(DEFAULT_MODEL, model_location(DEFAULT_MODEL))


def test_the_export_keeps_its_weights_in_a_file_of_their_own(export: Path) -> None:
    check = json.loads((export / "check.json").read_text())
    weights = export / query_encoder.WEIGHTS
    assert check["weights_bytes"] == weights.stat().st_size > 10 * (export / "model.onnx").stat().st_size
    assert len(check["weights_sha256"]) == 64
    assert query_encoder.checked_encoder(DEFAULT_MODEL, model_location(DEFAULT_MODEL)) is not None
    with weights.open("ab") as f:  # changed weights: the export is no longer trusted
        f.write(b"\0")
    assert query_encoder.checked_encoder(DEFAULT_MODEL, model_location(DEFAULT_MODEL)) is None


def test_a_model_opened_for_few_queries_gives_the_same_vectors(export: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    texts = ["When is the Atlas launch now?", "kitchen sink"]
    prepacked = query_encoder.checked_encoder(DEFAULT_MODEL, model_location(DEFAULT_MODEL))
    monkeypatch.setattr(query_encoder, "_FEW_QUERIES", [True])
    unpacked = query_encoder.checked_encoder(DEFAULT_MODEL, model_location(DEFAULT_MODEL))
    assert prepacked is not None and unpacked is not None
    np.testing.assert_allclose(unpacked.encode(texts), prepacked.encode(texts), atol=1e-5)
