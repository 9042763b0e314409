"""What happens to memory after it is written: decay, confirmation and correction, conflicts, merges
undone, weekly reflection, entity enrichment, session consolidation and forgetting.

One concern per module; each is plain Python over the stores (no Dagster), called by the Dagster jobs
in nexus_memory_assets/lifecycle.py, the CLI and the agent tools:

  state.py          fact_state: confidence, decay rate, visibility and supersession beside immutable facts
  decay.py          confidence x exp(-rate x days since last access); soft-delete below the threshold
  corrections.py    confirm (protect) and correct (supersede and hide) a fact
  statements.py     the kind of statement a fact makes ("lives in", "works at", ...) for conflicts
  conflicts.py      a later fact contradicting an earlier one about the same entity
  reconsolidate.py  observations and mental models resting on facts that changed: marked stale
  merge_journal.py  what a merge moved, written inside the merge; unmerge.py undoes a merge from it
  reflection.py     the weekly reflection (a protected mental model get_context appends)
  enrichment.py     nightly re-extraction of entities for facts with few links
  sessions.py       sessions that ended, waiting for consolidation (sessions_consolidations)
  runs.py           lifecycle_runs: one row per maintenance run
  forget/           forgetting an event, a fact, a sender or an entity, leaving no trace in the bytes

Times are unix milliseconds; every function that looks at the clock takes `now` so tests can fix it.
"""
