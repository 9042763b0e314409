"""Shared fixtures: a fresh set of stores in a temporary directory for each test."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from webserver import webserver  # noqa: F401  (a fixture: the real dagster-webserver, for every test module)

from nexus_memory.core.config import Settings, load_settings
from nexus_memory.core.stores import Stores


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return load_settings(data_dir=tmp_path / "data", inbox_dir=tmp_path / "inbox")


@pytest.fixture
def stores(settings: Settings) -> Iterator[Stores]:
    with Stores(settings) as opened:
        yield opened
