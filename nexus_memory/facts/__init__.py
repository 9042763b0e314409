"""Layer 3, facts: the state a fact is in, and the rules every fact write obeys (writer and agents alike)."""
