"""Layer 1, events: the immutable ledger, its importers, ingest and the inbox."""
