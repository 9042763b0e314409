"""Layer 5, observations: consolidation of facts into observations (a background job; docs/layers.md).

`consolidate(stores, pick_consolidator(settings))` consolidates every pending fact: with the writer's LLM
when one is configured, else with the offline rules (the default of `consolidate(stores)`).
See run.py for the loop and store.py for how observations are versioned.
"""

from nexus_memory.observations.run import ConsolidationBusy, ConsolidationReport, consolidate, pick_consolidator

__all__ = ["ConsolidationBusy", "ConsolidationReport", "consolidate", "pick_consolidator"]
