"""The ONNX query encoder: same vectors as torch, checked once when exported, and no torch after that."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from nexus_memory.embeddings import model as embedding_model
from nexus_memory.embeddings import query_encoder
from nexus_memory.embeddings.model import DEFAULT_MODEL, Embedder, get_embedder, model_location

QUERIES = [
    "Which company does Alice work for?",
    "",
    "🙂 emoji and ünïcödé",
    "very long query " * 400,  # past the model's 256-token window: both paths must truncate alike
]


@pytest.fixture(scope="module")
def model():
    return get_embedder().model


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test exports into its own cache: a broken export made on purpose must not reach others."""
    monkeypatch.setenv("NEXUS_MODEL_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_onnx_matches_torch_and_is_checked_once(model, own_cache: Path) -> None:
    torch_side = Embedder(DEFAULT_MODEL, model, query_backend="torch")
    onnx_side = Embedder(DEFAULT_MODEL, model, query_backend="onnx")
    for text in QUERIES:
        expected = torch_side.encode_query(text)
        got = onnx_side.encode_query(text)
        assert got.shape == expected.shape and got.dtype == np.float32
        assert float(got @ expected) > 0.9999, text[:40]
    assert onnx_side.query_backend == "onnx" and onnx_side._query_encoder is not None
    # Several queries in one run (padded to the longest): each row as if embedded alone.
    together = onnx_side.encode_queries(QUERIES)
    assert together.shape == (len(QUERIES), 384)
    for row, text in zip(together, QUERIES, strict=True):
        assert float(row @ torch_side.encode_query(text)) > 0.9999, text[:40]
    assert onnx_side.encode_queries([]).shape == (0, 384)

    [folder] = list((own_cache / "onnx").iterdir())  # one export, no leftover temporary folder
    assert folder == query_encoder.export_dir(DEFAULT_MODEL, model_location(DEFAULT_MODEL))
    check = json.loads((folder / "check.json").read_text())
    assert check["ok"] and check["model"] == DEFAULT_MODEL and check["parity_min_cosine"] >= 0.9999
    # fp32 queries against bf16 documents: recorded beside the export, near 1 and below the exact twin's.
    assert 0.999 < check["recipe_parity_min_cosine"]["bf16"] < 1.0
    assert check["onnx_bytes"] == (folder / "model.onnx").stat().st_size and len(check["onnx_sha256"]) == 64
    # Later embedders trust the record: no new export and no parity run against torch.
    stamp = (folder / "model.onnx").stat().st_mtime_ns
    fresh = Embedder(DEFAULT_MODEL, model, query_backend="onnx")
    fresh._torch_query = None  # type: ignore[assignment,method-assign]  (a parity run would call it)
    fresh.encode_query("again")
    assert (folder / "model.onnx").stat().st_mtime_ns == stamp


def test_query_path_never_imports_torch_once_exported(model, own_cache: Path) -> None:
    Embedder(DEFAULT_MODEL, model, query_backend="onnx").encode_query("make the export")
    expected = Embedder(DEFAULT_MODEL, model, query_backend="torch").encode_query("Who is Tyler's employer?")
    script = (
        "import json, sys\n"
        "from nexus_memory.embeddings.model import get_embedder\n"
        'vector = get_embedder().encode_query("Who is Tyler\'s employer?")\n'
        "heavy = [m for m in ('torch', 'sentence_transformers', 'transformers') if m in sys.modules]\n"
        "print(json.dumps({'heavy': heavy, 'vector': vector.tolist()}))\n"
    )
    env = {"NEXUS_MODEL_CACHE": str(own_cache), "NEXUS_QUERY_BACKEND": "onnx", "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    result = json.loads(out.stdout)
    assert result["heavy"] == []
    assert float(np.array(result["vector"], dtype=np.float32) @ expected) > 0.9999


def test_failure_falls_back_to_torch(model, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    def broken(*_args: object) -> None:
        raise ImportError("No module named 'onnxruntime'")

    monkeypatch.setattr(query_encoder, "_export", broken)
    embedder = Embedder(DEFAULT_MODEL, model, query_backend="onnx")
    vector = embedder.encode_query("where does Alice work?")
    assert embedder.query_backend == "torch" and embedder._query_encoder is None
    assert float(vector @ embedder.encode(["where does Alice work?"])[0]) > 0.9999
    assert "stays on torch" in caplog.text and "onnxruntime" in caplog.text


def test_parity_miss_is_recorded_and_refused(model, monkeypatch: pytest.MonkeyPatch, own_cache: Path) -> None:
    """An export that does not reproduce the torch vectors is never used, and not made again."""
    real_open = query_encoder._open

    def skewed(*args: object) -> query_encoder.OnnxQueryEncoder:
        encoder = real_open(*args)  # type: ignore[arg-type]
        encoder.pooling = "cls"  # a different pooling: plausible vectors, wrong ones
        return encoder

    monkeypatch.setattr(query_encoder, "_open", skewed)
    embedder = Embedder(DEFAULT_MODEL, model, query_backend="onnx")
    embedder.encode_query("anything")
    assert embedder.query_backend == "torch"
    [folder] = list((own_cache / "onnx").iterdir())
    check = json.loads((folder / "check.json").read_text())
    assert check["ok"] is False and check["parity_min_cosine"] < 0.9999
    assert query_encoder.checked_encoder(DEFAULT_MODEL, model_location(DEFAULT_MODEL)) is None

    def no_export(*_args: object) -> None:
        raise AssertionError("exported again")

    monkeypatch.setattr(query_encoder, "_export", no_export)
    again = Embedder(DEFAULT_MODEL, model, query_backend="onnx")
    again.encode_query("anything")
    assert again.query_backend == "torch"


def test_changed_export_is_not_trusted(model, own_cache: Path) -> None:
    Embedder(DEFAULT_MODEL, model, query_backend="onnx").encode_query("make the export")
    folder = query_encoder.export_dir(DEFAULT_MODEL, model_location(DEFAULT_MODEL))
    assert query_encoder.checked_encoder(DEFAULT_MODEL, model_location(DEFAULT_MODEL)) is not None
    with (folder / "model.onnx").open("ab") as f:
        f.write(b"\0")
    assert query_encoder.checked_encoder(DEFAULT_MODEL, model_location(DEFAULT_MODEL)) is None


def test_get_embedder_loads_nothing_when_an_export_is_checked(model, monkeypatch: pytest.MonkeyPatch) -> None:
    Embedder(DEFAULT_MODEL, model, query_backend="onnx").encode_query("make the export")
    monkeypatch.setattr(embedding_model, "_EMBEDDERS", {})
    loads: list[str] = []
    monkeypatch.setattr(embedding_model, "_load_model", lambda name: loads.append(name) or model)
    embedder = get_embedder()
    assert embedder.dimension == 384 and embedder._model is None
    embedder.encode_query("still no model")
    assert loads == []
    embedder.encode(["documents need the model"])
    assert loads == [DEFAULT_MODEL]


def test_a_new_export_removes_the_superseded_ones(model, own_cache: Path) -> None:
    """Exports made for older library versions or model files are deleted when the current one is
    written; another model's export and a folder still being written stay."""
    onnx = own_cache / "onnx"
    stale = onnx / f"{DEFAULT_MODEL}-{'0' * 16}"
    other_model = onnx / f"bge-small-en-v1.5-{'1' * 16}"
    in_progress = onnx / f"{DEFAULT_MODEL}-{'2' * 16}.123.part"
    for folder in (stale, other_model, in_progress):
        folder.mkdir(parents=True)
        (folder / "check.json").write_text('{"ok": true}')
    Embedder(DEFAULT_MODEL, model, query_backend="onnx").encode_query("make the export")
    current = query_encoder.export_dir(DEFAULT_MODEL, model_location(DEFAULT_MODEL))
    assert sorted(p.name for p in onnx.iterdir()) == sorted([current.name, other_model.name, in_progress.name])
    assert query_encoder.checked_encoder(DEFAULT_MODEL, model_location(DEFAULT_MODEL)) is not None


def test_another_installs_export_stays_and_a_gone_installs_goes(model, own_cache: Path, tmp_path: Path) -> None:
    """Two environments sharing the cache keep each other's export (else each write deletes the other's,
    and every cold process loads torch to export again); an export whose install is gone is deleted."""
    onnx = own_cache / "onnx"
    elsewhere = tmp_path / "other-venv" / "all-MiniLM-L6-v2"
    elsewhere.mkdir(parents=True)
    other_install = onnx / f"{DEFAULT_MODEL}-{'3' * 16}"
    gone_install = onnx / f"{DEFAULT_MODEL}-{'4' * 16}"
    for folder, source in ((other_install, elsewhere), (gone_install, tmp_path / "removed-venv")):
        folder.mkdir(parents=True)
        (folder / "check.json").write_text(json.dumps({"ok": True, "source": str(source)}))
    Embedder(DEFAULT_MODEL, model, query_backend="onnx").encode_query("make the export")
    current = query_encoder.export_dir(DEFAULT_MODEL, model_location(DEFAULT_MODEL))
    assert sorted(p.name for p in onnx.iterdir()) == sorted([current.name, other_install.name])
    assert query_encoder.read_check(current)["source"] == str(model_location(DEFAULT_MODEL))
