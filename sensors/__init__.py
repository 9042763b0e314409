"""Every sensor of the code location, one module per concern.

new_events.py     inbox files become ingest runs; ledger rows with work left become pipeline runs
sessions.py       a new session ends the ones before it: consolidate them
consolidation.py  new fact vectors: consolidate the facts waiting
mental_models.py  mental models due or new: refresh them, a partition each
"""

import dagster as dg

from sensors.consolidation import consolidate_after_embeddings
from sensors.mental_models import mental_models_sensor
from sensors.new_events import new_events_sensor
from sensors.sessions import new_session_sensor

__all__ = [
    "build_sensors",
    "consolidate_after_embeddings",
    "mental_models_sensor",
    "new_events_sensor",
    "new_session_sensor",
]


def build_sensors() -> list[dg.SensorDefinition]:
    """The sensors of the code location."""
    return [
        new_events_sensor,
        new_session_sensor,
        consolidate_after_embeddings,
        mental_models_sensor,
    ]
