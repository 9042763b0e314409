"""The memory writer: turns events into facts, entities, causal links, contacts and introductions."""
