"""Token estimates for budgets (episode size, recall's max_tokens): no tokenizer, ~4 characters a token."""

from __future__ import annotations


def estimate_tokens(text: str) -> int:
    """Rough token count of `text`: len / 4, at least 1."""
    return max(1, len(text) // 4)
