"""The memory writer: turns episodes into facts, entities, causal links, contacts and introductions.

Two writers share one set of tools (`tools.py`): the offline extractor and the LLM (tool loop or
structured output). The writer sits above recall because the LLM writer searches memory before it writes.
"""
