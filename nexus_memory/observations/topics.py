"""Words of a fact: content words, a coarse life-topic category, and a topic label for a group of facts.

The category is a guard, not the clustering: facts join an observation by vector similarity, but never
across two different categories ("Alice works at Google" and "Alice lives in Boston" both say "Alice"
and sit close in vector space). English only, like the offline writer.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence

from nexus_memory.recall.keyword import extract_terms

# Category -> word stems (see `stem`). Ordered: on a tie the earlier category wins.
_CATEGORY_WORDS: dict[str, str] = {
    "work": """work job career office company boss colleague coworker manager hire promot salary client employ
               intern startup business team deadline launch project meet review migrat""",
    "home": """apartment house home rent lease landlord tenant move neighborhood neighbour neighbor room
               garden backyard patio""",
    "family": """mom dad mother father sister brother son daughter kid child children famil parent husband wife
                 grandma grandpa grandmother grandfather baby adopt cousin aunt uncle niece nephew""",
    "relationships": """boyfriend girlfriend partner dating marri wedding engag divorc breakup friend""",
    "health": """doctor hospital sick ill health therap medic injur surgery diet allerg dentist pain clinic
                 symptom diagnos anxiety depress counsel""",
    "education": """school universit college class course degree study student exam graduat teacher lectur
                    homework""",
    "arts": """paint art draw sketch pottery sculpt photograph museum gallery craft music guitar piano violin
               sing song concert band album drum book read novel author poem poetry writ""",
    "sports": """run marathon gym yoga hike hiking swim soccer football basketball tennis cycl bike climb ski surf
                 workout exercis race trail""",
    "travel": """trip travel vacation flight fly airport hotel abroad tour camp beach roadtrip layover""",
    "food": """food cook recipe restaurant dinner lunch breakfast eat vegan vegetarian bake cake coffee pizza""",
    "pets": """dog cat pet puppy kitten horse guinea hamster bird turtle""",
    "money": """money pay paid invoice budget price cost loan bank debt invest saving""",
    "community": """lgbtq trans transgender pride activis volunteer charity church faith religio communit protest""",
    "technology": """software code app computer database server deploy api sdk laptop postgres schema backfill""",
}
_SUFFIXES = ("ings", "ing", "ies", "es", "ed", "s")


def stem(word: str) -> str:
    """A crude English stem: one common suffix off when at least three letters remain."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


_CATEGORY_ORDER = list(_CATEGORY_WORDS)
_STEMS: dict[str, str] = {}
for _category, _words in _CATEGORY_WORDS.items():
    for _word in _words.split():
        _STEMS.setdefault(stem(_word), _category)

# Words that say nothing about what a group of facts is about (LoCoMo-style chat is full of them).
_GENERIC_TEXT = """
    shared photo picture pic great good love loves loved lot lots feel feels felt make makes made time
    times day days going go went got get really also new one two way something much many like well
    awesome amazing cool happy glad nice thanks thank sure always never still even back see seeing look
    looking looks want wants wanted help helps helped keep kept take takes took tried try trying week
    weeks month months year years today tomorrow yesterday last next since ago around
"""
GENERIC = frozenset(_GENERIC_TEXT.split())
_DATE_ANNOTATION = re.compile(r"\((?:on|in|the week|the weekend|around)[^)]*\)")


def content_words(text: str) -> list[str]:
    """Lower-cased non-stopword terms of `text` in order (recall's definition), date notes removed."""
    return extract_terms(_DATE_ANNOTATION.sub(" ", text))


def category(words: Iterable[str]) -> str | None:
    """The life-topic category most of these words belong to (None when none does)."""
    return top_category(category_counts(words))


def category_counts(words: Iterable[str]) -> Counter[str]:
    """How many of these words belong to each life-topic category (summable across word lists)."""
    counts: Counter[str] = Counter()
    for word in words:
        found = _STEMS.get(stem(word)) or _STEMS.get(word)
        if found:
            counts[found] += 1
    return counts


def top_category(counts: Counter[str]) -> str | None:
    """The category with the most words (on a tie the earlier in _CATEGORY_WORDS); None when there is none."""
    if not counts:
        return None
    return min(counts, key=lambda c: (-counts[c], _CATEGORY_ORDER.index(c)))


def topic_label(word_lists: Sequence[Sequence[str]], exclude: set[str], max_words: int = 3) -> str:
    """'category: word, word' for a group of facts: its category and its most repeated specific words."""
    counts: Counter[str] = Counter()
    first_seen: dict[str, int] = {}
    for words in word_lists:
        for word in set(words):
            if word in exclude or word in GENERIC or word.isdigit() or len(word) < 3:
                continue
            counts[word] += 1
            first_seen.setdefault(word, len(first_seen))
    repeated = [w for w in counts if counts[w] >= 2] or list(counts)
    top = sorted(repeated, key=lambda w: (-counts[w], first_seen[w]))[:max_words]
    group = category(w for words in word_lists for w in words)
    label = ", ".join(top) if top else "general"
    return f"{group}: {label}" if group else label
