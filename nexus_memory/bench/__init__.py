"""Benchmarks behind `nexus-memory bench`: extract (the offline writer against LoCoMo's annotations),
locomo (retrieval recall@k on LoCoMo), recall (latency and index quality at scale) and coldstart
(a cold `nexus-memory recall` / `context` process, ONNX query path against torch)."""
