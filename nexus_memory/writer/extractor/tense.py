"""Which way a clause points in time: the tense of the verb nearest a phrase, read without a parser.

A relative date such as "on Friday" names the Friday before the message in a past clause ("Kestrel told us on
Friday") and the one after it in a planned one ("we'll meet on Friday"). The clause is cut at punctuation and at
the words that start another clause ("that", "and", "because" ...), and the tense cue nearest the phrase inside it
wins; a clause without one takes the nearest cue of the sentence's other clauses (not those before a clause opened
by "that": "said on Monday that the launch slips to Thursday").
"""

from __future__ import annotations

import re
from typing import Literal

from nexus_memory.core.words import word_set
from nexus_memory.writer.extractor.words import IRREGULAR_PAST

Tense = Literal["past", "present", "future", "none"]

# Words, contractions kept whole ("won't", "I'll"); curly apostrophes are read as straight ones.
_TOKEN_RE = re.compile(r"[A-Za-z0-9]+(?:['\u2019][A-Za-z]+)*")
# Punctuation that ends a clause, and the subset that ends a sentence (no cue is taken across it).
_CLAUSE_PUNCT_RE = re.compile(r"[,;:.!?()\u2013\u2014]|\s-\s")
_SENTENCE_PUNCT_RE = re.compile(r"[.!?]\s")
# Words that start another clause (with its own verb and tense).
_CLAUSE_WORDS = word_set("that which because but although though whereas while and or if when whenever unless")
# "so" starts a clause only before its subject ("so we left"); "so excited" is a degree.
_SUBJECTS = word_set("i we you he she they it")

# Past verbs of a plan: an infinitive after one points ahead ("agreed to ship on Friday").
_INTENT = word_set("""
agreed decided promised planned arranged offered asked told invited scheduled booked vowed
""")
# Words that frame what follows as done, with no verb to say so: "Thanks for dinner on Saturday", "Following up on
# Friday's meeting", "Per our call on Tuesday". They count after any verb of the phrase's own clause.
_LOOKS_BACK = word_set("thanks thank following per further congrats congratulations")
# Pronouns whose "'s" is "is" or "has", never a possessive.
_PRONOUNS = word_set("he she it that there what who here")

_PAST_AUX = word_set("was were wasn't weren't did didn't had hadn't")
_FUTURE_AUX = word_set("""
will won't shall shan't gonna wanna let's can can't cannot could couldn't should shouldn't must might would
wouldn't gotta
""")
_PRESENT_AUX = word_set("am is are isn't aren't do does don't doesn't")
_HAVE = word_set("have has haven't hasn't")
# Past tense forms with no -ed; "bit" and "fit" read as nouns and adjectives more often than as verbs.
_PAST_FORMS = IRREGULAR_PAST - {"bit", "fit"}
# Past participles that differ from the past tense, for the perfect ("have been", "'ve seen").
_PARTICIPLES = _PAST_FORMS | word_set("""
been gone seen done taken given eaten written driven ridden spoken broken chosen woken worn torn thrown grown
known flown drawn fallen forgotten hidden stolen begun sung swum become come run gotten
""")
# -ed words that are not past tenses.
_NOT_PAST_ED = word_set("""
need bed red seed feed speed weed bleed breed proceed succeed exceed indeed deed greed reed creed tweed shed wed
hundred sacred naked wicked kindred embed excited thrilled stoked tired interested pleased delighted scared worried
bored supposed used
""")
# Before a past participle these make it an adjective or a passive of the present ("I'm excited", "is closed").
_BE_PRESENT = word_set("am is are be being get gets getting feel feels seem seems look looks")
# Before an -ed word these make it an adjective ("a detailed plan", "so tired").
_MODIFIERS = word_set("a an the my your our his her their its this that so very too quite super pretty more most")


def _norm(word: str) -> str:
    return word.lower().replace("\u2019", "'")


def _be_present(word: str) -> bool:
    """A present form of be (or a verb like it) that makes the participle after it an adjective or passive."""
    return word in _BE_PRESENT or word.endswith(("'m", "'re")) or (word.endswith("'s") and word[:-2] in _PRONOUNS)


def _cue(words: list[str], index: int) -> Tense | None:
    """The tense word `index` marks by itself or with the word before or after it; None for no cue."""
    word = words[index]
    before = words[index - 1] if index else ""
    after = words[index + 1] if index + 1 < len(words) else ""
    if word in _PAST_AUX or word == "ago" or (word == "used" and after == "to"):
        return "past"
    if word.endswith("'d"):  # "I'd gone" is past, "I'd love to" is a wish
        return "past" if after in _PARTICIPLES or after.endswith("ed") else "future"
    if word in _FUTURE_AUX or word.endswith("'ll") or (word == "going" and after == "to"):
        return "future"
    if word in _HAVE or word.endswith("'ve"):
        participle = words[index + 2] if after in _SUBJECTS and index + 2 < len(words) else after
        return "past" if participle in _PARTICIPLES and participle != "got" else "present"
    if word in _PRESENT_AUX or word.endswith(("'m", "'re")) or (word.endswith("ing") and _be_present(before)):
        return "present"
    if word.endswith("'s") and word[:-2] in _PRONOUNS:  # "it's been" is a perfect, "she's coming" a present
        return "past" if after in _PARTICIPLES and after != "got" else "present"
    if word in _PAST_FORMS or (len(word) > 3 and word.endswith("ed")):
        if word in _NOT_PAST_ED or before in _MODIFIERS:
            return None
        if word == "got" and (before in _HAVE or before.endswith("'ve")):
            return "present"  # "I've got a meeting": possession
        return "present" if _be_present(before) else "past"
    return None


def _clauses(text: str, tokens: list[re.Match[str]]) -> tuple[list[int], list[int]]:
    """(clause number, sentence number) of each token."""
    clause, sentence = [0], [0]
    for i, token in enumerate(tokens[1:], start=1):
        word = _norm(token.group())
        gap = text[tokens[i - 1].end() : token.start()]
        next_word = _norm(tokens[i + 1].group()) if i + 1 < len(tokens) else ""
        cut = _CLAUSE_PUNCT_RE.search(gap) or word in _CLAUSE_WORDS or (word == "so" and next_word in _SUBJECTS)
        clause.append(clause[-1] + (1 if cut else 0))
        sentence.append(sentence[-1] + (1 if _SENTENCE_PUNCT_RE.search(gap) else 0))
    return clause, sentence


def tense_at(text: str, start: int, end: int) -> Tense:
    """The tense of the clause around text[start:end]: its nearest cue, else the nearest one of its sentence."""
    tokens = list(_TOKEN_RE.finditer(text))
    inside = [i for i, t in enumerate(tokens) if t.start() < end and start < t.end()]
    if not inside:
        return "none"
    first, last = inside[0], inside[-1]
    words = [_norm(t.group()) for t in tokens]
    clause_of, sentence_of = _clauses(text, tokens)
    own = clause_of[first]
    # A clause opened by "that" says what was reported or planned: the verb that reports it says nothing of its time
    # ("said on Monday that the launch slips to Thursday").
    opener = clause_of.index(own)
    reported = words[opener] == "that" and opener < first
    best: tuple[float, int, int, Tense] | None = None  # (clause distance, token distance, index, tense)
    for i in range(len(tokens)):
        if first <= i <= last or sentence_of[i] != sentence_of[first] or (reported and clause_of[i] < own):
            continue
        tense = _cue(words, i)
        weak = tense is None and words[i] in _LOOKS_BACK and i < first
        if tense is None and not weak:
            continue
        rank = (
            abs(clause_of[i] - own) + (0.5 if weak else 0),
            first - i if i < first else i - last,
            i,
            tense or "past",
        )
        # Ties go to the cue before the phrase: a clause's verb comes first more often than not.
        if best is None or rank[:2] < best[:2]:
            best = rank
    if best is None:
        return "none"
    cue = best[2]
    planned = words[cue] in _INTENT and words[cue - 1 : cue] != ["had"]  # "had planned to" fell through
    if best[3] == "past" and planned and "to" in words[cue + 1 : first]:
        return "future"  # "we agreed to ship on Friday": the plan's day lies ahead of the message
    return best[3]
