"""Layer 6, mental models: versioned reports over observations, facts, episodes and derived events, and
their dossiers. See api.py for the operations and report.py for what a report holds."""

from nexus_memory.mental_models.api import (
    ModelError,
    after_consolidation,
    create_model,
    ensure_emergent,
    get_model,
    list_models,
    pin_model,
    refresh_due,
    refresh_model,
)
from nexus_memory.mental_models.dossiers import sync_dossiers
from nexus_memory.mental_models.store import Model

__all__ = [
    "Model",
    "ModelError",
    "after_consolidation",
    "create_model",
    "ensure_emergent",
    "get_model",
    "list_models",
    "pin_model",
    "refresh_due",
    "refresh_model",
    "sync_dossiers",
]
