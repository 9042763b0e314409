"""What a reader would not keep though it reads like a statement: wishes, offers, exhortations, reactions.

Each class is one rule on a cleaned sentence (interjections gone, first and second person not yet resolved),
so "you" still says that it is spoken to the other person. The sentence stays in the ledger and the episode;
only no fact is made of it (`sentences.is_informative`). A real fact that looks like one is kept: "I wish I
had a bigger apartment" says what the speaker wants, "It's great that I finally got the job" gives their news.
"""

from __future__ import annotations

import re

from nexus_memory.core.words import word_set
from nexus_memory.writer.extractor.words import (
    FILLER_WORDS,
    FIRST_PERSON,
    PRAISE_WORDS,
    SECOND_PERSON,
    STOPWORDS,
    WHEN_WORDS,
    WORD_RE,
)

SEASONS = frozenset({"spring", "summer", "autumn", "fall", "winter"})  # "plan something for this summer" is a plan
# Good wishes to the one spoken to: "Good luck with the game!", "All the best for John's charity work",
# "Wishing you many happy years together", "Hope you have a great time". A wish for the speaker's own sake
# ("I wish I had a bigger apartment", "I hope to visit Japan") names no "you", and stays.
WISH_RE = re.compile(
    r"^(?:(?:good|best of|lots of|the best of) luck(?:\s+(?:with|on|in|at|for|to|today|tomorrow|tonight)\b|\W*$)|"
    r"(?:all the best|best wishes)\b|"
    r"(?:(?:i|we)(?:'m| am| are)?\s+)?(?:(?:just|really|truly|sincerely)\s+)?wish(?:ing|es)?\s+"
    r"(?:you|u|y'all|your \w+|[A-Z][a-z]+)\s+(?:(?:and|&)\s+\w+\s+)?(?:(?:all\s+)?the best|(?:good |the best of )?luck|"
    r"many|a (?:happy|great|good|speedy|safe|wonderful)|happy|success|well|fun|safe)\b|"
    r"(?:(?:i|we)\s+)?(?:(?:really|truly|just|do)\s+)?hope\s+(?:that\s+)?(?:you|u|y'all|your)\b)",
    re.IGNORECASE,
)
# Offers to keep in touch or to help later, asks to be told, and missing the other: "I'll reach out if I need
# anything", "Let me know what you think", "Feel free to reach out any time", "I'm here if you need to talk",
# "Missed you!". A promise with no "if I need" ("I'll keep you posted") is the speaker's commitment, and stays.
OFFER_RE = re.compile(
    r"^(?:(?:so|just|please|and)\s+)?(?:"
    r"(?:feel free|don't hesitate) to\b|"
    r"(?:let|lemme) (?:me|us) know\b|keep (?:me|us) (?:posted|updated|in the loop)\b|"
    r"(?:i|we)(?:'ll| will| would|'d)\s+(?:(?:definitely|totally|surely|sure|be sure to|be happy to|love to)\s+)?"
    r"(?:let you know|reach out|get back to you|give you a (?:call|shout|ring))\s+if\b[^.]*\bneed|"
    r"(?:reach out|call me|text me|hit me up|ping me|message me)\s+(?:if|when|whenever|any ?time)\b|"
    r"(?:i'm|i am|we're|we are)\s+(?:always\s+)?(?:here|around|available)\s+(?:for you|if you)\b|"
    r"if you (?:ever )?need (?:anything|any help|help|someone|a hand|me|to talk)\b|"
    r"(?:i\s+)?(?:(?:really|so|have)\s+)?miss(?:ed)?\s+(?:you|u|ya|our (?:chats|talks))\b)",
    re.IGNORECASE,
)
# A call to everyone with no plan in it: "Let's keep supporting each other". A plan names a day, a time or a
# place's name ("Let's meet at 3pm tomorrow"), or is a decision ("Let's go with the blue design"):
# `remark_class` keeps those. "We can make a difference" says what the speaker believes, and stays.
EXHORTATION_RE = re.compile(r"^(?:let's|let us)\s+(?!go with\b|meet\b)", re.IGNORECASE)
# Words that only judge ("amazing", "close", "tough"): a sentence of an "it"/"that" subject and these says
# nothing a later question could ask about.
EVALUATIVE_WORDS = PRAISE_WORDS | word_set(
    """
    close tough hard rough sad scary awful terrible crazy wild intense special fascinating heartwarming touching
    humbling fulfilling rewarding refreshing encouraging reassuring admirable comfy cozy relaxing peaceful
    surreal unreal insane epic fab fabulous breathtaking gorgeous adorable delicious yummy tasty fun hilarious
    funny uplifting powerful meaningful important worth worthwhile easy difficult stressful exhausting tiring
    challenging thrilling exhilarating unforgettable memorable magical moving emotional glad happy super cute
    beautiful interesting exciting excited neat sweet
    """
)
# Intensifiers and copulas that may stand between the subject and its judgement: "It was really so close".
_LINK_WORDS = word_set(
    """so really very super pretty truly just such quite totally absolutely definitely always a an is was be been
    are were it's that's they're must must've have seems seemed sounds sounded looks looked felt feels"""
)
# What a vague subject may do to the speaker and still name nothing: "It really inspired me", "They keep me going".
_AFFECT_WORDS = word_set(
    """inspired inspires inspire motivated motivates motivate helped helps help reminded reminds made makes make
    feel felt touched moved boosted encouraged keep keeps kept going means meant mean lot gave gives"""
)
_OBJECT_PRONOUNS = frozenset({"me", "myself"})
# A subject that names nothing: "It was really close", "Those places must've been amazing".
_VAGUE_SUBJECT_RE = re.compile(
    r"^(?:(?:it|that|this|those|these|they|there)(?:'s|'re| is| was| are| were)?|it's|that's|they're)\b",
    re.IGNORECASE,
)
VAGUE_MAX_WORDS = 8  # a judgement this short of a vague subject is a reaction, not a fact
# A judgement framed around what the other did: "It's inspiring to see your dedication", "It's great that
# you're helping out" (`_reaction` asks for the "you").
FRAMED_JUDGEMENT_RE = re.compile(
    r"^(?:it's|it is|it was|that's|that is|that was|how)\s+(?:(?:so|really|very|super|pretty|truly|just|such|quite|"
    r"always|absolutely|totally)\s+)*(?:an?\s+)?(?P<judgement>[a-z]+)\s+"
    r"(?:that|how|what|when|to (?:see|hear|know|witness|watch|think|read|learn))\b",
    re.IGNORECASE,
)
# A guess at how the other's experience went or a remark on what they said: "Must have been quite an
# atmosphere", "Those places must've been amazing", "It sounds like you're doing impressive work".
GUESS_RE = re.compile(
    r"^(?:(?:i\s+(?:know|bet|imagine|guess|think)|i'm sure)\s+)?"
    r"(?:(?:you|it|that|those|these|they|this)\s+(?:\w+\s+)?)?must(?:'ve| have)\s+been\b|"
    r"^(?:it\s+)?(?:sounds|seems|looks)\s+like\s+(?:you|your|it|that|they|those|this)\b",
    re.IGNORECASE,
)
# The same guess or remark on anything the other said or showed, when the speaker says nothing of their own:
# "That sounds like the perfect job for you", "Sounds like a blast from the past", "Winning must have been so
# thrilling", "It looks like something from a storybook". With "I"/"my" it may carry news ("It looks like I'll
# be moving"), and a name, date or number after the first word (`remark_class`) makes it news too. "It seems
# like nature has a way of calming us down" states a view of the speaker's, and stays.
OPEN_GUESS_RE = re.compile(
    r"^(?:(?:it|that|this)(?:\s+all)?\s+)?(?:sounds|looks)\s+like\b|^(?:\w+\s+){0,4}must(?:'ve| have)\s+been\b|"
    r"^(?:\w+\s+){0,2}must\s+be\s+(?:(?:so|such|really|very|pretty|quite|super)\s+)*(?:an?\s+)?(?P<judgement>\w+)",
    re.IGNORECASE,
)


def remark_class(sentence: str) -> str | None:
    """'wish', 'offer', 'exhortation', 'reaction' when a cleaned sentence is that kind of remark, else
    None. A remark that names a date, a number or a name (after its first word) tells something, and is None."""
    text = sentence.replace("\u2019", "'").strip()
    words = {w.lower() for w in WORD_RE.findall(text)}
    if (WHEN_WORDS | SEASONS) & words or re.search(r"\d|(?<!^)\b[A-Z][a-z]", text):
        return None  # "Good luck with the Redwood Health audit this week", "Let me know by March 21": news
    if WISH_RE.match(text):
        return "wish"
    if OFFER_RE.match(text):
        return "offer"
    if EXHORTATION_RE.match(text):
        return "exhortation"
    if _reaction(text):
        return "reaction"
    return None


def _reaction(text: str) -> bool:
    """A judgement of what was said or shown that names nothing of the speaker's own: a vague subject and
    only judging words, a framed judgement, or a guess at the other's experience. A number, a name after
    the first word or a date word (`remark_class`), or the speaker's own "I"/"my", makes it news, and it stays."""
    words = [w.lower() for w in WORD_RE.findall(text)]
    if not words:
        return False
    if GUESS_RE.match(text):
        return True  # "I know you must have been buzzing": the "I" only frames the guess
    if (FIRST_PERSON - _OBJECT_PRONOUNS) & set(words):
        return False  # "It was my first marathon"; but "It really inspired me" is still only a reaction
    guess = OPEN_GUESS_RE.match(text)
    if guess and (guess.group("judgement") is None or guess.group("judgement").lower() in EVALUATIVE_WORDS):
        return True  # "Must be so cool to practice there"; "It must be closed" guesses at a fact
    framed = FRAMED_JUDGEMENT_RE.match(text)
    if framed and framed.group("judgement").lower() in EVALUATIVE_WORDS and SECOND_PERSON & set(words):
        return True  # of the other's news; "It's amazing how basketball brings people together" is a view
    if not _VAGUE_SUBJECT_RE.match(text) or len(words) > VAGUE_MAX_WORDS:
        return False
    said = STOPWORDS | FILLER_WORDS | EVALUATIVE_WORDS | _LINK_WORDS | _AFFECT_WORDS | _OBJECT_PRONOUNS
    return all(w in said for w in words)
