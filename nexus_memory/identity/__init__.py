"""Who is who: entities, handles, aliases, merge candidates, merges and the writer's notes."""
