"""Layer 3, facts: the writer (offline extractor and LLM), its tools, and the state a fact is in."""
