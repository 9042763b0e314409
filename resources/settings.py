"""The base of the resources that carry Settings: optional overrides of its fields, the rest from the environment.

Each resource carries optional overrides of `Settings` fields (None: the environment's value) and
hands the core one `Settings` built by `load_settings(**overrides)`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Self

import dagster as dg

from nexus_memory.core.config import Settings, load_settings

# Settings a resource may override. The API key is left out on purpose: resource config is shown
# in the UI, so it always comes from OPENAI_API_KEY.
_OVERRIDABLE = (
    "data_dir",
    "inbox_dir",
    "partition_start",
    "tenant",
    "embedding_model",
    "torch_threads",
    "query_backend",
    "embed_precision",
    "model_cache_dir",
    "llm_base_url",
    "llm_model",
    "llm_timeout_s",
    "max_content_chars",
)


class SettingsResource(dg.ConfigurableResource):
    """Optional overrides of Settings fields; an unset (None) field keeps the environment's value."""

    data_dir: str | None = None
    inbox_dir: str | None = None
    partition_start: str | None = None
    tenant: str | None = None
    embedding_model: str | None = None
    torch_threads: int | None = None
    query_backend: str | None = None
    embed_precision: str | None = None
    model_cache_dir: str | None = None
    llm_base_url: str | None = None
    llm_model: str | None = None
    llm_timeout_s: float | None = None
    max_content_chars: int | None = None

    def settings(self) -> Settings:
        overrides = {name: getattr(self, name) for name in _OVERRIDABLE}
        return load_settings(**{name: value for name, value in overrides.items() if value is not None})

    @classmethod
    def from_settings(cls, settings: Settings) -> Self:
        """This resource with every overridable field taken from `settings`."""
        values: dict[str, Any] = {}
        for name in _OVERRIDABLE:
            value = getattr(settings, name)
            values[name] = str(value) if isinstance(value, Path) else value
        return cls(**values)
