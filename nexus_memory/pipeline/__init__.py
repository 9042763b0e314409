"""Building every layer for a batch of ledger days of one platform, and the invariants checks verify."""
