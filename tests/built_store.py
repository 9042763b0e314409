"""A store built the way the pipeline builds one: the sample events -> episodes -> facts -> vectors.

Built once per test session (the real model, the offline writer, no Dagster); each test gets its
own copy, so writes in one test never reach another.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from nexus_memory.bench.coldstart import ensure_store
from nexus_memory.core.config import Settings, load_settings

_BUILT: dict[str, Path] = {}


def built_copy(tmp_path_factory: pytest.TempPathFactory, target: Path) -> Settings:
    """Settings for a fresh copy of the session's built sample store at `target`/data."""
    if "sample" not in _BUILT:
        source = tmp_path_factory.mktemp("built-store") / "data"
        ensure_store(source)
        _BUILT["sample"] = source
    shutil.copytree(_BUILT["sample"], target / "data")
    return load_settings(data_dir=target / "data", inbox_dir=target / "inbox")
