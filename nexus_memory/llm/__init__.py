"""Talking to an OpenAI-compatible server: one client (`client.LLMClient`) for every LLM operation."""
