"""The consolidator resource: which LLM, if any, consolidates facts into observations and narrates mental models."""

from __future__ import annotations

import dagster as dg

from nexus_memory.core.config import Settings, load_settings
from nexus_memory.mental_models.narrative import Narrator, configured_narrator


class ConsolidatorResource(dg.ConfigurableResource):
    """Who consolidates: the writer's LLM when NEXUS_LLM_BASE_URL/NEXUS_LLM_MODEL are set, else offline rules."""

    llm_base_url: str = ""
    llm_model: str = ""
    offline: bool = False

    def llm_settings(self, settings: Settings) -> Settings:
        """The environment's settings for the store at settings.data_dir, with this resource's LLM, if it names one."""
        overrides = {"llm_base_url": self.llm_base_url, "llm_model": self.llm_model}
        return load_settings(data_dir=settings.data_dir, **{k: v for k, v in overrides.items() if v})

    def narrator(self, settings: Settings) -> Narrator | None:
        """The LLM that writes mental models as narratives, when one is configured (else offline reports)."""
        return configured_narrator(self.llm_settings(settings), offline=self.offline)
