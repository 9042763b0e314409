"""Benchmarks behind `nexus-memory bench`: extract (the offline writer against LoCoMo's annotations),
locomo (retrieval recall@k on LoCoMo) and recall (latency and index quality at scale)."""
