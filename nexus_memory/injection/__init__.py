"""Memory injection: the context block put in front of an agent's turn, and its noise gate."""
