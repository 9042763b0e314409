"""From a message to clean statements: chatter, photos, sentence splitting, interjections, clauses."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from nexus_memory.writer.extractor.literals import EMAIL_RE, URL_RE
from nexus_memory.writer.extractor.text import capitalise, finish
from nexus_memory.writer.extractor.words import (
    ABBREVIATIONS,
    AUX_VERBS,
    CHATTER,
    FILLER_WORDS,
    IRREGULAR_PAST,
    NOT_NAMES,
    PRESENT_VERBS,
    QUESTION_OPENERS,
    STOPWORDS,
    SUBJECT_DROP_ADJECTIVES,
    SUBJECT_DROP_VERBS,
    SUBJECT_PRONOUNS,
    SUBJECT_WORDS,
    WORD_RE,
)

if TYPE_CHECKING:
    from nexus_memory.writer.extractor.names import NameBook

# A shared photo as importers write it: "[shares a photo: a photo of a dog ...]".
PHOTO_RE = re.compile(r"\[\s*shares?\s+(?:an?\s+)?(?:photo|image|picture)\s*:\s*(?P<caption>[^\]]+)\]", re.IGNORECASE)
# The "a photo of" / "a photography of" head of an image caption.
CAPTION_HEAD_RE = re.compile(
    r"^(?:an?\s+)?(?:photo|photograph|photography|picture|image|close up)"
    r"\s+of\s+",
    re.IGNORECASE,
)
# Emoji and pictographs (noise for BM25 and embeddings; a message of only these is chatter).
EMOJI_RE = re.compile("[\U0001f000-\U0001faff\u2600-\u27bf\u2b00-\u2bff\ufe0f\u200d\u20e3]+")
# Candidate sentence boundaries: after . ! ? or an ellipsis, or at a line break.
SENTENCE_BREAK_RE = re.compile(r"(?<=[.!?\u2026])[\"')\]]*\s+|\s*\n+\s*")
# Leading interjections that carry no content ("Wow, ", "Oh yeah! ", "Haha ").
INTERJECTION_RE = re.compile(
    r"^(?:(?:hey|hi|hiya|hello|oh|ooh|oops|wow|whoa|yeah|yea|yep|yup|yes|no|nope|nah|ok|okay|well|"
    r"haha+|hah|hehe|lol|aww+|aw|ah|ahh|omg|hmm+|um+|so|thanks|thank you|cheers|congrats|"
    r"congratulations|sure|totally|absolutely|definitely|exactly|indeed|right|true|agreed|man|"
    r"dude|wait|awesome|great|cool|nice|amazing|wonderful|sweet|gosh|geez|ugh|yay|woo+|hooray|"
    r"alright|all right|of course|for sure|no way|good|oh my|my god)"
    r"(?:\s*[,!.\u2026:;-]+\s*|\s+(?=(?:i|i'm|i've|i'll|i'd|we|you|it|it's|my|our|that|this|they|he|she|"
    r"there|the)\b)))+",
    re.IGNORECASE,
)
# Discourse openers that carry no content: "I gotta say, ...", "Honestly, ...", "To be honest, ...".
DISCOURSE_RE = re.compile(
    r"^(?:i\s+(?:gotta|have\s+to|must|got\s+to|have\s+got\s+to)\s+say|honestly|to\s+be\s+honest|"
    r"tbh|i\s+mean|you\s+know|btw|by\s+the\s+way|anyway|anyways|plus|also|and|but)\b"
    r"\s*,?\s*",
    re.IGNORECASE,
)
# Gratitude with a reason: "Thanks for the tip" -> "I am grateful to you for the tip" (resolvable).
THANKS_FOR_RE = re.compile(
    r"^(?:thanks|thank\s+you)(?:\s+so\s+much|\s+a\s+lot|\s+again)?(?:,\s*[A-Z][a-z]+,?)?"
    r"\s+for\s+",
    re.IGNORECASE,
)
# Sentence-initial words of a sentence whose subject (the speaker) was dropped: "Went hiking today".
# Short reactions to what the other person said: "That sounds rough.", "That must've been fun."
REACTION_RE = re.compile(r"^(?:that|that's|this|this is|sounds|it sounds|what an?|how|must|such an?)\b", re.IGNORECASE)
REACTION_MAX_WORDS = 5  # a reaction opener with at most this many words is chatter
# A greeting with an optional name and nothing else: "Hey Mel!", "Hi there,", "Good morning, Sam."
GREETING_RE = re.compile(
    r"^(?:hey|hi|hiya|hello|yo|dear|morning|good (?:morning|afternoon|evening)|"
    r"greetings)(?:\s+(?:there|guys|all|everyone|[A-Z][a-z]+))?(?:\s*[,!.\u2026:-]+\s*|\s*$)",
    re.IGNORECASE,
)
# Whole sentences that are pleasantries, whatever their words.
PLEASANTRY_RE = re.compile(
    r"^(?:have an? (?:great|good|nice|wonderful|fun|lovely) (?:day|night|weekend|time|one|trip)|"
    r"talk (?:to you )?(?:soon|later)|see you(?: soon| later| around| then)?|good (?:luck|night|morning)|"
    r"take care|bye|catch you later|you too|same here|me too|no prob(?:lem)?|no worries|my pleasure|"
    r"you're welcome|long time no see|nice to (?:meet|see|hear from) you|good to (?:see|hear from) you|"
    r"(?:it's |it is |it was )?(?:so |really )?(?:great|good|nice|lovely|fun) (?:to|talking|chatting) "
    r"(?:chat|talk|see|hear|catch up|reconnect)?(?: with you| from you)?(?: again)?|"
    r"go for it|long time no (?:see|talk|chat|speak)|keep (?:on )?going|take a look(?: at (?:this|that|these))?|"
    r"check (?:this|it|these) out|nice (?:pic|photo|picture|shot)|"
    r"how are you|how have you been|what's up|let me know|keep (?:it )?up|keep me posted|"
    r"can't wait to (?:see|hear)(?: (?:it|them|more|about it))?|i'm (?:so )?(?:glad|happy) (?:for you|to hear)"
    r"(?: that)?|that's (?:so |really )?(?:great|awesome|cool|amazing|good|nice|wonderful))"
    r"(?:\s*,?\s*[A-Z][a-z]+)?\s*[.!\u2026]*$",
    re.IGNORECASE,
)


def is_ephemeral(content: str, names: NameBook | None = None) -> bool:
    """True for chatter with nothing to remember: 'ok', 'lol', 'thanks!', emoji only, greetings."""
    if PHOTO_RE.search(content) or EMAIL_RE.search(content) or URL_RE.search(content):
        return False
    stripped = EMOJI_RE.sub(" ", content).strip()
    words = [w.lower() for w in WORD_RE.findall(stripped)]
    if not words:
        return True
    if " ".join(words) in CHATTER or all(w in CHATTER for w in words):
        return True
    content_words = [
        w
        for w in words
        if w not in STOPWORDS and w not in FILLER_WORDS and not (names and names.is_known(w.capitalize()))
    ]
    return not content_words and len(words) <= 6


def split_photos(content: str) -> tuple[str, list[str]]:
    """The text without '[shares a photo: ...]' markers, and the captions they held."""
    captions = [m.group("caption").strip() for m in PHOTO_RE.finditer(content)]
    return PHOTO_RE.sub(" ", content).strip(), captions


def photo_fact(caption: str, who: str) -> str:
    """'a photo of a dog' -> '<who> shared a photo of a dog.'"""
    caption = CAPTION_HEAD_RE.sub("", caption.strip().rstrip("."))
    return f"{who} shared a photo of {caption}."


def split_sentences(text: str) -> list[str]:
    """Sentences of a message: split after . ! ? and at line breaks, but not after 'Dr.' or 'e.g.'."""
    pieces = [p.strip() for p in SENTENCE_BREAK_RE.split(text) if p and p.strip()]
    sentences: list[str] = []
    for piece in pieces:
        if sentences:
            last_word = sentences[-1].rsplit(None, 1)[-1].rstrip(".").lower()
            if (sentences[-1].endswith(".") and last_word in ABBREVIATIONS) or piece[0].islower():
                sentences[-1] = f"{sentences[-1]} {piece}"
                continue
        sentences.append(piece)
    return sentences


def clean_sentence(sentence: str, names: NameBook | None = None) -> str:
    """Drop emoji, leading interjections and vocatives ('Wow, Caroline, ...'); '' for a question."""
    text = EMOJI_RE.sub("", sentence).strip()
    text = re.sub(r"\s+", " ", text)
    if text.endswith("?"):
        text = strip_question_tag(text)
    if text.endswith("?") or not text:
        return ""
    for _ in range(3):  # "Oh wow, Caroline, I ..." needs a few rounds
        before = text
        text = INTERJECTION_RE.sub("", text).strip()
        text = GREETING_RE.sub("", text, count=1).strip()
        text = DISCOURSE_RE.sub("", text, count=1).strip()
        vocative = re.match(r"^(?:([A-Za-z]+)\s+)?([A-Z][a-z]+)\s*[,!]+\s*", text)
        if (
            vocative
            and names
            and names.is_known(vocative.group(2))
            and (vocative.group(1) is None or vocative.group(1).lower() in FILLER_WORDS)
        ):
            text = text[vocative.end() :]  # "Caroline, ..." / "Yeah Jon, ..."
        if text == before:
            break
    text = re.sub(
        r",\s*[A-Z][a-z]+\s*([.!\u2026]*)$",
        lambda m: m.group(1) if names and names.is_known(m.group(0).strip(",.!\u2026 ")) else m.group(0),
        text,
    )
    text = THANKS_FOR_RE.sub("I am grateful to you for ", text, count=1)
    text = re.sub(r"!+", ".", text).strip(" ,;:-")
    text = re.sub(r"\.{2,}|\u2026", ".", text)
    if not text or text.endswith("?"):
        return ""
    return capitalise(text)


def strip_question_tag(sentence: str) -> str:
    """'Hard work pays off, right?' -> 'Hard work pays off.'; a real question is returned unchanged.

    A statement followed by a tag ("right?", "huh?", "how does that sound?") still states something;
    the part before the last comma is kept when it reads as a clause and not as a question.
    """
    head, comma, _tag = sentence.rpartition(",")
    if not comma:
        return sentence
    words = WORD_RE.findall(head.lower())
    if not words or words[0] in QUESTION_OPENERS or not is_clause(head.strip()):
        return sentence
    return head.strip() + "."


def is_informative(sentence: str, names: NameBook | None = None) -> bool:
    """False for filler sentences ('That's so cool.', 'Long time no see.') and pleasantries."""
    if PLEASANTRY_RE.match(sentence):
        return False
    words = [w.lower() for w in WORD_RE.findall(sentence)]
    if len(words) < 2:
        return False  # "Mel." / "Congrats." say nothing on their own
    if (
        len(words) <= REACTION_MAX_WORDS
        and REACTION_RE.match(sentence)
        and not re.search(r"\d|(?<!^)\b[A-Z]", sentence)
    ):
        return False  # "That sounds rough." (but not "That picture is from MinaLima.")
    content = [
        w
        for w in words
        if w not in STOPWORDS
        and w not in FILLER_WORDS
        and len(w) > 1
        and not (names and names.is_known(w.capitalize()))
    ]
    return bool(content)


def supply_subject(sentence: str) -> str:
    """Put back a dropped first-person subject.

    'Went hiking.' -> 'I went hiking.'; 'So glad you came.' -> "I'm so glad you came."
    """
    words = WORD_RE.findall(sentence.replace("\u2019", "'"))
    if not words:
        return sentence
    first = words[0].lower()
    second = words[1].lower() if len(words) > 1 else ""
    if first in SUBJECT_DROP_VERBS and not (first == "just" and second in STOPWORDS):
        return f"I {sentence[:1].lower()}{sentence[1:]}"
    if first in SUBJECT_DROP_ADJECTIVES or (first in ("so", "really", "very") and second in SUBJECT_DROP_ADJECTIVES):
        return f"I'm {sentence[:1].lower()}{sentence[1:]}"
    if first.endswith("ing") and len(first) > 5 and not has_verb(sentence[len(first) :]):
        # "Planning a trip there." has no other verb, so "planning" is not a gerund subject.
        return f"I'm {sentence[:1].lower()}{sentence[1:]}"
    return sentence


def has_verb(clause: str) -> bool:
    """Cheap clause test: an auxiliary/common verb, a contraction, an -ed or irregular past word, or any
    word right after a subject pronoun ("we ride")."""
    words = WORD_RE.findall(clause.lower().replace("\u2019", "'"))
    for position, word in enumerate(words):
        if word in AUX_VERBS or word in IRREGULAR_PAST or word.endswith(("'m", "'re", "'ve", "'ll", "'d", "n't")):
            return True
        if position > 0 and words[position - 1] in SUBJECT_PRONOUNS and word not in STOPWORDS:
            return True
        if len(word) > 4 and word.endswith("ed"):
            return True
        if word.endswith("s") and word[:-1] in PRESENT_VERBS:
            return True
    return False


def starts_with_subject(clause: str) -> bool:
    """True when a clause opens like an independent one: a pronoun, determiner or capitalised name."""
    words = WORD_RE.findall(clause.replace("\u2019", "'"))
    if not words:
        return False
    first = words[0]
    return first.lower() in SUBJECT_WORDS or (first[0].isupper() and first not in NOT_NAMES)


def is_clause(text: str) -> bool:
    """An independent clause: starts with a subject and has a verb, and is more than two words."""
    return len(WORD_RE.findall(text)) >= 3 and starts_with_subject(text) and has_verb(text)


def split_compound(sentence: str) -> list[str]:
    """Split on '; ' always, and on ', and ' / ', but ' only when both sides are clauses."""
    parts = [p.strip() for p in sentence.split("; ") if p.strip()]
    out: list[str] = []
    for part in parts:
        pieces = [part]
        while True:
            last = pieces[-1]
            match = next(
                (
                    m
                    for m in re.finditer(r",\s+(?:and|but)\s+", last)
                    if is_clause(last[: m.start()]) and is_clause(last[m.end() :])
                ),
                None,
            )
            if not match:
                break
            pieces[-1:] = [last[: match.start()], last[match.end() :]]
        out.extend(pieces)
    return [finish(capitalise(p)) for p in out if p]
