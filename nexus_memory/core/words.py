"""The one English stopword list: recall's terms, the fact dedup, the extractor and the benchmarks start from it."""

from __future__ import annotations


def word_set(text: str) -> frozenset[str]:
    """A word list written as whitespace-separated text (easier to read and edit than a literal)."""
    return frozenset(text.split())


# The common English function words, with the halves a tokenizer that splits at apostrophes leaves of "I'd",
# "you'll", "I'm", "we're", "it's", "I've" and "can't".
# A use that needs another set derives it from this one with named words and says why.
STOPWORDS = word_set(
    """
    a about above after again against all am an and any are as at be because been before being below
    between both but by can could d did do does doing down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just ll m me more
    most my myself no nor not now of off on once only or other our ours ourselves out over own re s same
    she should so some such t than that the their theirs them themselves then there these they this
    those through to too under until up ve very was we were what when where which while who whom why
    will with would you your yours yourself yourselves
    """
)
