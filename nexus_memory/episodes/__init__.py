"""Layer 2, episodes: events grouped by thread and time gap, by session, or by token budget."""
