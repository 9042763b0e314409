"""Layers 5 and 6 in Dagster: the `observations` asset, the `mental_models` asset, their checks and jobs.

  assets.py  observations (unpartitioned: whatever is pending) and mental_models (a partition per model)
  checks.py  observations_not_duplicated, observation_facts_exist
  jobs.py    consolidation, refresh_mental_models, and the nightly_consolidation schedule

Automation: consolidation runs (1) after new facts land (sensors/consolidation.py, on `embeddings`
materialisations); (2) nightly at 03:00, ending every open session first (jobs.py); (3) when a session
ends (a new session id appears: sensors/sessions.py, the one session trigger). Models are refreshed by
a sensor that asks for the partitions that are due (sensors/mental_models.py).
"""

import dagster as dg

from nexus_memory_assets.consolidation.assets import mental_models, observations
from nexus_memory_assets.consolidation.checks import observation_facts_exist, observations_not_duplicated
from nexus_memory_assets.consolidation.jobs import consolidation_job, nightly_consolidation, refresh_mental_models_job

defs = dg.Definitions(
    assets=[observations, mental_models],
    asset_checks=[observations_not_duplicated, observation_facts_exist],
    jobs=[consolidation_job, refresh_mental_models_job],
    schedules=[nightly_consolidation],
)
