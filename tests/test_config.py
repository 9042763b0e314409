"""Settings are the one source of configuration: environment, defaults, overrides, and the Dagster resources."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from nexus_memory.core.config import Settings, load_settings
from resources import EmbedderResource, StoresResource, WriterResource, resources_for


def test_default_directories_are_under_the_working_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NEXUS_DATA_DIR", raising=False)
    monkeypatch.delenv("NEXUS_INBOX_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    settings = load_settings()
    monkeypatch.chdir(tmp_path.parent)  # made absolute when read: a later chdir moves nothing
    assert settings.data_dir == tmp_path / "data"
    assert settings.inbox_dir == tmp_path / "inbox"


def test_environment_then_overrides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEXUS_DATA_DIR", str(tmp_path / "from-env"))
    monkeypatch.setenv("NEXUS_TORCH_THREADS", "3")
    assert load_settings().data_dir == tmp_path / "from-env"
    assert load_settings().torch_threads == 3
    assert load_settings(data_dir=str(tmp_path / "given")).data_dir == tmp_path / "given"
    with pytest.raises(TypeError, match="unknown settings"):
        load_settings(data_directory=tmp_path)


def test_unset_resource_fields_keep_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEXUS_DATA_DIR", str(tmp_path / "env"))
    monkeypatch.setenv("NEXUS_EMBEDDING_MODEL", "all-MiniLM-L6-v2")
    assert StoresResource().settings().data_dir == tmp_path / "env"
    overridden = StoresResource(data_dir=str(tmp_path / "mine"), max_content_chars=0)
    assert overridden.settings().data_dir == tmp_path / "mine"
    assert overridden.settings().max_content_chars == 0  # 0 is a value, not "unset"


def test_one_settings_reaches_every_resource(settings: Settings) -> None:
    chosen = replace(settings, embedding_model="BAAI/bge-small-en-v1.5", torch_threads=2, llm_timeout_s=5.0)
    for resource in resources_for(chosen).values():
        assert resource.settings() == chosen
    assert isinstance(resources_for()["stores"], StoresResource)


def test_the_writer_resource_follows_its_settings(settings: Settings) -> None:
    assert WriterResource.from_settings(settings).get_writer().name == "offline"
    llm = replace(settings, llm_base_url="http://127.0.0.1:9/v1", llm_model="tiny", llm_timeout_s=7.0)
    writer = WriterResource.from_settings(llm).get_writer()
    assert writer.name == "llm:tiny"
    assert writer.client.timeout_s == 7.0  # type: ignore[attr-defined]
    assert EmbedderResource.from_settings(llm).settings().llm_model == "tiny"
