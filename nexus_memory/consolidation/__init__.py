"""Layer 3: consolidation of facts into observations (seed 002's background job).

`consolidate(stores)` runs the offline consolidator; pass `LLMConsolidator.from_settings(...)` to use
the writer's LLM instead. See run.py for the loop and store.py for how observations are versioned.
"""

from nexus_memory.consolidation.run import ConsolidationReport, consolidate

__all__ = ["ConsolidationReport", "consolidate"]
