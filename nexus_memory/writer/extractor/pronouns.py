"""First and second person resolved to names, with verb agreement ("I love" -> "Ann loves")."""

from __future__ import annotations

import bisect
import functools
import re

from nexus_memory.core.words import word_set
from nexus_memory.writer.extractor.sentences import REQUEST_OPENERS
from nexus_memory.writer.extractor.text import finite_verb
from nexus_memory.writer.extractor.words import (
    ADVERBS,
    CONTRACTIONS,
    FIRST_PERSON,
    IMPERATIVE_VERBS,
    IRREGULAR_PAST,
    NO_AGREEMENT,
    PRESENT_VERBS,
    STOPWORDS,
    SUBJECT_DROP_VERBS,
    THIRD_PERSON,
    WORD_RE,
)

# I/me/my/... and you/your/... with an optional contraction and the following word (for agreement).
PRONOUN_RE = re.compile(
    r"(?<![\w'\u2019-])(?P<pro>I|i(?![.\w])|[Mm]e|[Mm]y|[Mm]ine|[Mm]yself|[Yy]ou|[Yy]our|[Yy]ours|[Yy]ourself)"
    r"(?P<con>['\u2019](?:m|re|ve|ll|d|s))?(?![\w'\u2019-])"
    r"(?P<gap>\s+(?:(?:" + "|".join(sorted(ADVERBS)) + r")\s+)?)?"
    r"(?P<next>(?!(?:me|my|mine|you|your|yours)\b)[a-z]+(?:['\u2019]t)?)?"
)
# Generic or formulaic "you" that is not the addressee ("thank you", "you know", "see you").
CUE_WINDOW = 40  # characters around a pronoun that hold the longest cue of the patterns below
GENERIC_YOU_BEFORE = re.compile(r"\b(?:thank|see|miss|bless|love|mind)\s*$", re.IGNORECASE)
# A condition put to anyone ("It's hard to run a business when you don't have faith in yourself"): its "you" is
# generic unless the statement speaks to the listener outside it ("Jon looks so happy when you dance").
CONDITION_YOU_RE = re.compile(r"\b(?:if|when|whenever|unless)\s+you\b", re.IGNORECASE)
# A statement that is about anyone from its start: it opens with a condition ("When you work hard, you get
# results") or says what no one can know ("You never know the difference a kind word makes").
GENERIC_STATEMENT_RE = re.compile(
    r"^\W*(?:(?:and|but|so|because|plus)\s+)?(?:if|when|whenever|unless)\s+you\b|\byou\s+never\s+know\b",
    re.IGNORECASE,
)
# What anyone has to do, said as advice ("You have to keep pushing for your goals"): kept as said, like an
# imperative. "You must be so excited" is a guess at the listener, and is resolved.
_OBLIGATION_OPENERS = (("you", "have", "to"), ("you've", "got", "to"), ("you", "gotta"), ("you", "got", "to"))
GENERIC_YOU_AFTER = re.compile(
    r"^\s*(?:know\b(?!\s+(?:that|how|what|about|i|my))|guys\b|all\b|both\b|two\b|"
    r"never know\b|too\b|later\b|soon\b)",
    re.IGNORECASE,
)

# Bare verbs that open an imperative clause ("Do your research", "Take your time", "Believe in yourself"). Left
# out: a verb that opens a clause whose "I" was dropped ("Love your hair", "Bet you had fun"), and words that open
# clauses as something else ("Last week you said", "Like you said", "Sounds good").
_IMPERATIVE_VERBS = (
    (
        IMPERATIVE_VERBS
        | PRESENT_VERBS
        | word_set("forget trust stay relax consider imagine hold reach treat talk apply pursue chase embrace cherish")
    )
    - SUBJECT_DROP_VERBS
    - ADVERBS
    - word_set("last like mean seem sound matter happen depend belong bet swear agree know guess understand feel see")
)
# Words before an imperative's verb: a request's openers ("please", "just") and a negation or a frequency
# ("Don't forget your keys", "Never give up on your dreams").
_IMPERATIVE_OPENERS = REQUEST_OPENERS | word_set("plz kindly don't dont never always now then")
# Where a clause starts: a sentence's end, a line break, a comma, a semicolon, a colon or a dash ("--", " - ").
_CLAUSE_BREAK_RE = re.compile(r"[.!?;:,\n\u2013\u2014]|--|\s-\s")


def _imperative_clause(text: str, at: int) -> bool:
    """The clause around text[at] is advice to the listener: after its openers it starts with a bare verb, not
    followed by "you" ("Do you like it", "Let you know tomorrow": a question, or a dropped "I") nor by a finite
    verb ("Dance is my passion": a noun); it is not a question ("Do your kids like it?") and has no first person
    ("Let me know what you think" is a request about the speaker, resolved whole)."""
    breaks = [m.end() for m in _CLAUSE_BREAK_RE.finditer(text, 0, at)]
    start = breaks[-1] if breaks else 0
    end_break = _CLAUSE_BREAK_RE.search(text, at)
    sentence_end = re.search(r"[.!?\n]", text[at:])
    if sentence_end and sentence_end.group(0) == "?":
        return False
    words = [
        w.lower().replace("\u2019", "'")
        for w in WORD_RE.findall(text[start : end_break.start() if end_break else len(text)])
    ]
    while words and words[0] in _IMPERATIVE_OPENERS:
        words = words[1:]
    opener = next((o for o in _OBLIGATION_OPENERS if tuple(words[: len(o)]) == o), ())
    if opener and len(words) > len(opener) and words[len(opener)] in _IMPERATIVE_VERBS:
        return not FIRST_PERSON & set(words)
    return (
        len(words) > 1
        and not FIRST_PERSON & set(words)
        and words[0] in _IMPERATIVE_VERBS
        and words[1] not in ("you", "u", "ya", "i", "we")
        and not finite_verb(words[1])
    )


_FIRST = ("i", "me", "my", "mine", "myself")


def _generic_you(match: re.Match[str]) -> bool:
    """A second-person match that is formulaic, not the addressee ("thank you", "you know"); a possessive after
    those words is the addressee's ("Love your painting", "if your kids like it")."""
    # A window either side, not the whole text: each pronoun of a long text would read all of it again.
    before = match.string[max(0, match.start() - CUE_WINDOW) : match.start()]
    end = match.end("pro") + len(match.group("con") or "")
    after = match.string[end : end + CUE_WINDOW]
    formulaic = match.group("pro").lower() == "you" and GENERIC_YOU_BEFORE.search(before)
    return bool(formulaic or GENERIC_YOU_AFTER.match(after))


def _advice(text: str, peer: str | None, conditions: set[int]) -> set[int]:
    """Where the second-person words of imperative clauses start, kept as said; none when any other I/you word
    of the text is resolved, so that a text never names the listener in one clause and says "your" in the next
    ("You've come a long way - keep inspiring people with your courage" is resolved whole). `conditions`: the
    second-person words of generic conditions (`_conditions`), kept already."""
    kept: set[int] = set()
    for match in PRONOUN_RE.finditer(text):
        if match.group("pro").lower() in _FIRST:
            return set()
        if peer is None or _generic_you(match) or match.start() in conditions:
            continue
        if not _imperative_clause(text, match.start()):
            return set()
        kept.add(match.start())
    return kept


def _conditions(text: str) -> set[int]:
    """Where the second-person words of conditions spoken to no one in particular start.

    A statement that opens with a condition or says "you never know" is about anyone: every "you" in it stays.
    Otherwise a condition's own clause ("when you don't have faith in yourself") stays, unless a second-person
    word outside every condition (not a formula: "thank you") shows the statement speaks to the listener, who is
    then the "you" of the condition too ("I can share the recipe with you if you'd like")."""
    seconds = [m for m in PRONOUN_RE.finditer(text) if m.group("pro").lower() not in _FIRST]
    if not seconds:
        return set()
    if GENERIC_STATEMENT_RE.search(text):
        return {m.start() for m in seconds}
    starts: list[int] = []  # the conditions' spans, in order: a pronoun is looked up, not tried against each
    ends: list[int] = []
    for cue in CONDITION_YOU_RE.finditer(text):
        end = _CLAUSE_BREAK_RE.search(text, cue.end())
        starts.append(cue.start())
        ends.append(max(end.start() if end else len(text), ends[-1] if ends else 0))
    inside = {
        m.start() for m in seconds if (i := bisect.bisect_right(starts, m.start()) - 1) >= 0 and m.start() < ends[i]
    }
    addressed = any(m.start() not in inside and not _generic_you(m) for m in seconds)
    return set() if addressed else inside


# An auxiliary before I/you: a question's inverted order, whose verb stays bare ("did you think" -> "did Bo think").
_AUX_BEFORE = re.compile(
    r"\b(?:do|does|did|can|could|will|would|should|shall|may|might|must|have|has|had|are|is|am|was|were|"
    r"don't|doesn't|didn't|can't|won't|haven't|hasn't|aren't|isn't|weren't|wasn't)\s+$",
    re.IGNORECASE,
)
# ... and that auxiliary's form before one person's name ("have you been" -> "has Bo been").
_SINGULAR_AUX = {
    "have": "has",
    "do": "does",
    "are": "is",
    "am": "is",
    "were": "was",
    "haven't": "hasn't",
    "don't": "doesn't",
    "aren't": "isn't",
    "weren't": "wasn't",
}


def resolve_pronouns(text: str, speaker: str, peer: str | None) -> tuple[str, bool]:
    """First person -> the speaker's name, second person -> the peer's name (when known).

    Returns (text, whether a first-person pronoun was resolved). Verb agreement is fixed for the
    common cases ("I am" -> "Ann is", "I love" -> "Ann loves", "you're" -> "Bo is"). An imperative clause is
    advice or a request from the speaker to the listener and keeps its words as said ("Do your research", not
    "Do Bo's research"): the fact built from it names its speaker.
    """
    used_first = False
    subject_seen: set[str] = set()
    conditions = _conditions(text)
    advice = _advice(text, peer, conditions) | conditions

    def replace(match: re.Match[str]) -> str:
        nonlocal used_first
        pro = match.group("pro")
        low = pro.lower()
        con = (match.group("con") or "").replace("\u2019", "'").lower()
        gap = match.group("gap") or ""
        nxt = match.group("next") or ""
        first = low in _FIRST
        if not first and (peer is None or _generic_you(match) or match.start() in advice):
            return match.group(0)
        name = speaker if first else peer
        assert name is not None
        used_first = used_first or first
        if low in ("my", "your", "mine", "yours"):
            word = f"{name}'s"
        elif low in ("myself", "yourself"):
            word = "themself" if name in subject_seen else name
        else:
            word = name
        if low in ("i", "you"):
            subject_seen.add(name)
        if con:
            if low in ("i", "you"):
                word += CONTRACTIONS.get(con, con)
            else:
                word += con
        elif (
            low in ("i", "you")
            and nxt
            and not _AUX_BEFORE.search(match.string[max(0, match.start() - CUE_WINDOW) : match.start()])
        ):
            # A "you" after "if"/"when" is a subject, so any verb agrees ("when you post" -> "when Nate posts").
            before = match.string[max(0, match.start() - CUE_WINDOW) : match.start()]
            subject = low == "i" or re.search(r"\b(?:if|when|whenever|unless)\s+$", before, re.IGNORECASE) is not None
            nxt = _agree(nxt.replace("\u2019", "'"), open_class=subject)
        return word + gap + nxt

    resolved = PRONOUN_RE.sub(replace, text)
    if resolved != text:
        named = "|".join(re.escape(n) for n in {speaker, peer} if n)
        # Only in a question's inverted order, after its wh-word ("How long have you been") or opening it ("Do
        # you have any pets" -> "Does Bo have any pets"): "to have you" stays.
        resolved = _inverted_aux_re(named).sub(
            lambda m: m.group(1) + _same_case(_SINGULAR_AUX[m.group(2).lower()], m.group(2)) + m.group(3),
            resolved,
        )
    return resolved, used_first


@functools.lru_cache(maxsize=4096)  # one pattern per speaker and peer: re's own cache (512) is too small for a backfill
def _inverted_aux_re(named: str) -> re.Pattern[str]:
    """An auxiliary before one of the names `named` (a regex alternation) in a question's inverted order."""
    return re.compile(
        r"(\b(?:what|how|where|when|why|who|which)\b(?:\s+[\w'\u2019]+){0,2}\s+|^)("
        + "|".join(_SINGULAR_AUX)
        + r")(\s+(?:"
        + named
        + r")(?!\w))(?!['\u2019]s\b)",  # (?!\w), not \b: a name may end in a period ("Ben S.")
        re.IGNORECASE,
    )


def _same_case(word: str, like: str) -> str:
    """`word` capitalised as `like` is ("Do" -> "Does")."""
    return word[:1].upper() + word[1:] if like[:1].isupper() else word


def _agree(verb: str, *, open_class: bool) -> str:
    """Third-person singular form of the present-tense verb that followed I/you.

    After "I" (always a subject) any word is taken as its verb (`open_class`) unless it is a function
    word, an adverb, a modal, a past or -ing form, or a form that is present and past at once ("read").
    After "you" (often an object: "makes you happy") only the listed common verbs change.
    """
    if verb in THIRD_PERSON:
        return THIRD_PERSON[verb]
    if not open_class and verb not in PRESENT_VERBS:
        return verb
    if (
        verb in STOPWORDS
        or verb in ADVERBS
        or verb in IRREGULAR_PAST
        or verb in NO_AGREEMENT
        or (verb.endswith(("ed", "ly", "n't", "ing")) and verb not in PRESENT_VERBS)
        or (verb.endswith("s") and verb not in PRESENT_VERBS)
        or len(verb) < 2
    ):
        return verb
    if verb.endswith(("s", "sh", "ch", "x", "o")):
        return verb + "es"
    if verb.endswith("y") and verb[-2:-1] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"
