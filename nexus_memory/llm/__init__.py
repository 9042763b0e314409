"""Talking to an OpenAI-compatible server: one client for every LLM operation (writer, consolidation, reflection)."""
