"""From a message to clean statements: chatter, photos, sentence splitting, interjections, clauses."""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING

from nexus_memory.core.words import word_set
from nexus_memory.writer.extractor.kinds import classify_kind
from nexus_memory.writer.extractor.languages import not_english, worth_keeping
from nexus_memory.writer.extractor.literals import EMAIL_RE, URL_RE
from nexus_memory.writer.extractor.remarks import remark_class
from nexus_memory.writer.extractor.text import capitalise, finish, finite_verb
from nexus_memory.writer.extractor.words import (
    ABBREVIATIONS,
    ADVERBS,
    ANY_WORDS,
    AUX_VERBS,
    CHATTER,
    DETERMINERS,
    FILLER_WORDS,
    FIRST_PERSON,
    IMPERATIVE_VERBS,
    INVERTED_AUXILIARIES,
    IRREGULAR_PAST,
    NOT_NAMES,
    PICTURE_WORDS,
    PRAISE_WORDS,
    PRESENT_VERBS,
    QUESTION_LEADS,
    QUESTION_OPENERS,
    QUESTION_SUBJECTS,
    QUESTION_TAGS,
    SECOND_PERSON,
    SMALL_TALK_WORDS,
    STOPWORDS,
    SUBJECT_DROP_ADJECTIVES,
    SUBJECT_DROP_VERBS,
    SUBJECT_PRONOUNS,
    SUBJECT_WORDS,
    WH_WORDS,
    WHEN_WORDS,
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
# Candidate sentence boundaries: after . ! ? or an ellipsis (or the Devanagari danda and the Arabic full stop and
# question mark), or at a line break; after the full-width 。！？ of Chinese and Japanese, which need no space after
# them (a closing bracket after the mark stays with its sentence).
SENTENCE_BREAK_RE = re.compile(
    r"(?<=[.!?\u2026\u0964\u0965\u061f\u06d4])[\"')\]]*\s+|\s*\n+\s*|(?<=[\u3002\uff01\uff1f])(?![\u300d\u300f\uff09])\s*|"
    r"(?<=[\u3002\uff01\uff1f][\u300d\u300f\uff09])\s*"
)
# Leading interjections that carry no content ("Wow, ", "Oh yeah! ", "Haha ").
INTERJECTION_RE = re.compile(
    r"^(?:(?:hey|hi|hiya|hello|oh|ooh|oops|wow|whoa|woah|yeah|yea|yep|yup|yes|no|nope|nah|ok|okay|well|"
    r"haha+|hah|hehe|lol|aww+|aw|ah|ahh|omg|hmm+|um+|so|thanks|thank you|cheers|congrats|"
    r"congratulations|sure|totally|absolutely|definitely|exactly|indeed|right|true|agreed|man|"
    r"dude|wait|awesome|great|cool|nice|amazing|wonderful|sweet|gosh|geez|ugh|yay|woo+|hooray|"
    r"alright|all right|of course|for sure|no way|no worries|no problem|np|got it|done|"
    r"sounds (?:good|great|perfect)|good|oh my|my god)"
    r"(?:\s*[,!.\u2026:;-]+\s*|\s+(?=(?:i|i'm|i've|i'll|i'd|we|you|it|it's|my|our|that|this|they|he|she|"
    r"there|the|done|ok|okay|yes|yeah|so|well|oh|wow)\b)))+",
    re.IGNORECASE,
)
# Discourse openers that carry no content: "I gotta say, ...", "Honestly, ...", "To be honest, ...".
DISCOURSE_RE = re.compile(
    r"^(?:i\s+(?:gotta|have\s+to|must|got\s+to|have\s+got\s+to)\s+say|honestly|to\s+be\s+honest|"
    r"tbh|i\s+mean|you\s+know|btw|fyi|heads\s+up|by\s+the\s+way|anyway|anyways|plus|also|and|but)\b"
    r"\s*,?\s*",
    re.IGNORECASE,
)
# "Look at this ...", "Check out my ...": the speaker shows something of theirs; what is shown is the fact.
SHOW_RE = re.compile(
    r"^(?:(?:take\s+a\s+)?look\s+at|check(?:\s+out)?|see)\s+(?P<what>(?:this|these|my|our)\s+.+)$", re.IGNORECASE
)
# A remark on what the other person showed or said: no answer to a question ("That pic is cool").
REMARK_RE = re.compile(r"^(?:that|that's|this|this is|these|what an?|how|such an?|sounds|looks?)\b", re.IGNORECASE)
# Thanks, or praise of the moment, opening a sentence that goes on with something said: "Thanks for asking,
# they're good", "Way to go, hard work's paying off". Only cut where a clause follows (`_strip_openers`).
COURTESY_LEAD_RE = re.compile(
    r"^(?:(?:thanks|thank you|thx)(?: so much| a lot| again)?(?: for [^,.!?;\u2013\u2014-]*)?|way to go)"
    r"\s*[,!.:;\u2013\u2014-]+\s*",
    re.IGNORECASE,
)
# A reminder that frames what the speaker holds true: "Just remember that sometimes stumbling blocks can be
# opened doors", "Take comfort in knowing you've got a solid community". What follows is kept as said, when it
# is a clause (`_reminded`); "Don't forget to take breaks" is advice, and "Remember that epic block" names a thing.
REMINDER_RE = re.compile(
    r"^(?:(?:just|and|but|so|always)\s+)?(?:remember|keep in mind|bear in mind|don't forget|never forget|"
    r"take comfort in knowing)\s+(?P<that>that\s+)?",
    re.IGNORECASE,
)
# Thanks, appreciation and apologies to the one spoken to: courtesy, not facts ("Thanks for the help",
# "I appreciate your support", "Sorry again for the delay", "So grateful").
GRATITUDE_RE = re.compile(
    r"^(?:(?:thanks|thank you|thx|ty|many thanks)(?: so much| a lot| again)?(?:,?\s*[A-Z][a-z]+)?(?:\s+for\b.*)?|"
    r"much appreciated|(?:i )?(?:really |truly )?appreciate (?:it|that|this|you|your)\b.*|"
    r"(?:i'm |i am |we're |we are )?(?:so |very |really )?sorry (?:again )?(?:for|about) (?:the|my|our) "
    r"(?:delay|late reply|wait|confusion|trouble|mix-up)|"
    r"(?:i'm |i am )?(?:so |really |very |truly )?(?:grateful|thankful)(?: for (?:you|your \w+|that|it|this))?)\W*$",
    re.IGNORECASE,
)
# Errands of the moment: where someone is or when they arrive ("here", "omw, 10 min", "parking now",
# "running 10 late, bridge traffic", "brb dinner"); what follows a comma goes with them.
MOMENT_RE = re.compile(
    r"^(?:(?:i'm|i am|we're|we are|just|almost|still)\s+)*(?:here|there|back|outside|downstairs|ready|in|omw|otw|"
    r"on (?:my|our|the) way|brb\b.*|be right (?:back|there)|running(?: \d+(?: min\w*)?)? late|leaving|"
    r"heading (?:out|over|there|home|back)|parking|walking in|got (?:in|here)|"
    r"at (?:the )?[\w' ]{2,30}|by the [\w ]{2,20}|\d+ (?:min|mins|minutes|sec|secs)(?: out| away)?)"
    r"(?:\s+(?:now|early|soon|already|too))?\s*(?:,.*)?[.!]*$",
    re.IGNORECASE,
)
# An inverted auxiliary after its pronoun: a request or a question ("can you find me ...", "could we do ...").
INVERTED_REQUEST_RE = re.compile(r"\b(?:can|could|would|will|do|did|should)\s+(?:you|u|we|i)\b", re.IGNORECASE)
# A check the speaker tells the other to make: advice to keep ("Make sure you watch other people's videos first").
ADVICE_RE = re.compile(r"\b(?:make|be)\s+(?:sure|certain)\b", re.IGNORECASE)
# Words a request may open with that change nothing: "please send ...", "just fill it out".
REQUEST_OPENERS = frozenset({"please", "pls", "just", "definitely", "also", "so", "and"})
FRAGMENT_MAX_WORDS = 3  # a verbless reply this short means something only next to what it answers
WH_PHRASE_MAX_WORDS = 3  # 'What kind of music do you like': the wh-word's phrase before its auxiliary
# Sentence-initial words of a sentence whose subject (the speaker) was dropped: "Went hiking today".
# Short reactions to what the other person said: "That sounds rough.", "That must've been fun."
REACTION_RE = re.compile(
    r"^(?:that|that's|this|this is|sounds|it sounds|looks|look|what an?|how|must|such an?|they're|they are|"
    r"they look|they were)\b",
    re.IGNORECASE,
)
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
    r"(?: that)?|that's (?:so |really )?(?:great|awesome|cool|amazing|good|nice|wonderful)|"
    r"the more the merrier|fingers crossed|we'll see|way to \w+.*|good for you.*|you rock|you're the best|"
    r"(?:i )?love you(?: too| all| guys)?|miss you(?: too)?|\w+ says hi|sorry to hear(?: that)?|"
    r"(?:it|that|this|your \w+) means? (?:so much|a lot)(?: to me)?|i'm (?:always )?here (?:for|to support) you|"
    r"sounds? (?:good|great|perfect|fun|awesome|like a plan)|works for (?:me|us)|that works|will do|on it|deal|done|"
    r"noted|count me in|i'm in|we're in|agreed|fair enough|makes sense|good (?:point|idea|call|question)|"
    r"anytime|all good|\w+ it is|you got this|we got this|good (?:job|work)|well done|nice (?:job|work)|"
    r"have (?:a )?(?:great|good|nice|wonderful|fun|safe|lovely) \w+|have fun|enjoy|be (?:careful|safe)\b.*|"
    r"that'd be (?:great|awesome|perfect|amazing|nice)|that would be (?:great|awesome|perfect|amazing|nice))"
    r"(?:\s*,?\s*(?:thanks\s+|thank you\s+)?[A-Z][a-z]+)?\s*[.!\u2026]*$",
    re.IGNORECASE,
)


def is_ephemeral(content: str, names: NameBook | None = None) -> bool:
    """True for chatter with nothing to remember: 'ok', 'lol', 'thanks!', emoji only, greetings."""
    if PHOTO_RE.search(content) or EMAIL_RE.search(content) or URL_RE.search(content):
        return False
    stripped = EMOJI_RE.sub(" ", content).strip()
    if any(not_english(s) and worth_keeping(s) for s in split_sentences(stripped)):
        return False  # a sentence in another language is kept as said (`languages`), whatever English sees in it
    words = [w.lower() for w in WORD_RE.findall(stripped)]
    if not words:
        return True
    if any(EXCITED_RE.match(s.replace("\u2019", "'")) for s in split_sentences(stripped)):
        return False
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
    """Sentences of a message: split after . ! ? and at line breaks, but not after 'Dr.' or 'e.g.'; a line that
    goes on in lower case after a line break without a full stop goes on the same sentence."""
    return list(_sentences(text))


# A message is split again each time an episode of its thread reads it as context, and by several readers.
@functools.lru_cache(maxsize=1024)
def _sentences(text: str) -> tuple[str, ...]:
    pieces = [p.strip() for p in SENTENCE_BREAK_RE.split(text) if p and p.strip()]
    sentences: list[str] = []
    for piece in pieces:
        if sentences:
            # Only the end of the sentence so far is read: one joined from many pieces would be read again each time.
            tail = sentences[-1][-SENTENCE_TAIL:]
            last_word = tail.rsplit(None, 1)[-1].rstrip(".").lower()
            ended = re.search(r"[.!?\u2026][\"')\]]*$", tail)
            if (
                (sentences[-1].endswith(".") and last_word in ABBREVIATIONS)
                or (piece[0].islower() and not ended)
                or _initials_before_name(tail, piece)
            ):
                sentences[-1] = f"{sentences[-1]} {piece}"
                continue
        sentences.append(piece)
    return tuple(sentences)


SENTENCE_TAIL = 40  # characters at a sentence's end that hold its last word and initials ("George R. R.")
# Initials that end a piece: "J.K.", "George R. R." (two or more), or one after a name ("John F.").
_INITIALS_END_RE = re.compile(r"(?:^|\s)(?:[A-Z]\.\s?){2,}$|(?:^|\s)[A-Z][a-z]+\s+[A-Z]\.$")


def _initials_before_name(before: str, after: str) -> bool:
    """'J.K.' + 'Rowling is ...': initials and the surname they go with, not two sentences. The piece after
    must open with a capitalised word that no sentence would start with on its own (not 'It', 'The' ...)."""
    first = WORD_RE.findall(after[:40])
    return bool(
        _INITIALS_END_RE.search(before)
        and first
        and first[0][:1].isupper()
        and first[0].lower() not in SUBJECT_WORDS | STOPWORDS
    )


def clean_sentence(sentence: str, names: NameBook | None = None) -> tuple[str, str | None]:
    """The sentence without emoji, leading interjections and vocatives ('Wow, Caroline, ...'), and the name
    the vocative called (who "you" is in it); '' for a question."""
    text = EMOJI_RE.sub("", sentence).strip()
    text = re.sub(r"\s+", " ", text)
    if text.endswith("?"):
        text = statement_in_question(text)
    if not text:
        return "", None
    text, called = _strip_openers(text, names)
    if asks(text):
        return "", None
    text = re.sub(
        r",\s*[A-Z][a-z]+\s*([.!\u2026]*)$",
        lambda m: m.group(1) if names and names.is_known(m.group(0).strip(",.!\u2026 ")) else m.group(0),
        text,
    )
    text = re.sub(r"!+", ".", text).strip(" ,;:-")
    text = re.sub(r"\.{2,}|\u2026", ".", text)
    if not text or text.endswith("?"):
        return "", None
    return capitalise(_shown(text)), called


def _shown(text: str) -> str:
    """'Look at this homemade coconut ice cream.' -> 'I showed this homemade coconut ice cream.', when what is
    shown is a thing, not a picture ('check out this pic of ...' stays a request of the moment)."""
    show = SHOW_RE.match(text)
    if not show:
        return text
    words = [w.lower() for w in WORD_RE.findall(show.group("what"))]
    if len(words) < 2 or words[1] in PICTURE_WORDS:
        return text  # "this pic of ...": the shared photo's caption says what it shows
    content = [w for w in words if w not in STOPWORDS and w not in PICTURE_WORDS]
    return f"I showed {show.group('what')}" if content else text


def _strip_openers(text: str, names: NameBook | None) -> tuple[str, str | None]:
    """The text without leading interjections, greetings, discourse openers and vocatives, and the name the
    vocative called."""
    called: str | None = None
    for _ in range(3):  # "Oh wow, Caroline, I ..." needs a few rounds
        before = text
        text = INTERJECTION_RE.sub("", text).strip()
        text = GREETING_RE.sub("", text, count=1).strip()
        text = DISCOURSE_RE.sub("", text, count=1).strip()
        lead = COURTESY_LEAD_RE.match(text)
        if lead and is_clause(capitalise(text[lead.end() :])):
            text = capitalise(text[lead.end() :])
        text = _reminded(text)
        vocative = re.match(r"^(?:([A-Za-z]+)\s+)?([A-Z][a-z]+)\s*[,!]+\s*", text)
        # A known name, or any name after a word like "thanks" ("Thanks Dana, I'll ...").
        filler = vocative is not None and vocative.group(1) is not None and vocative.group(1).lower() in FILLER_WORDS
        if (
            vocative
            and ((names and names.is_known(vocative.group(2))) or filler)
            and (vocative.group(1) is None or filler)
        ):
            text = text[vocative.end() :]  # "Caroline, ..." / "Yeah Jon, ..."
            called = vocative.group(2)
        if text == before:
            break
    return text, called


def last_question(text: str, names: NameBook | None = None) -> str:
    """The message's last question without emoji and openers, or '': the one question a reply answers."""
    for sentence in reversed(split_sentences(text)):
        if sentence.rstrip("\"')").endswith("?"):
            return _strip_openers(re.sub(r"\s+", " ", EMOJI_RE.sub("", sentence)).strip(), names)[0]
    return ""


def question_to(text: str, names: NameBook | None = None) -> str:
    """The message's last question, without its openers, when it asks what, who, how ... ("What are your pets'
    names?") or asks for any one thing ("Do you have any favorite fantasy movies?", which "Definitely Star
    Wars!" answers); '' when that question is another yes/no one, a request, or there is none."""
    question = last_question(text, names)
    words = [w.lower() for w in WORD_RE.findall(question.replace("\u2019", "'"))]
    asks_any = bool(words) and words[0] in INVERTED_AUXILIARIES and bool(ANY_WORDS & set(words))
    if words and (words[0].split("'")[0] in WH_WORDS or asks_any) and not statement_in_question(question):
        return capitalise(question)
    return ""


# How a reply to a yes/no question opens, and the answer it gives: "Yep, I made it with coconut milk".
POLAR_ANSWER_RE = re.compile(
    r"^(?:(?P<yes>yes|yeah|yea|yep|yup|definitely|absolutely|of course|for sure|sure|totally|indeed)|"
    r"(?P<no>no|nope|nah|not really|not yet))(?![\w'])\s*[,!.\u2026:;\u2013\u2014-]*\s*",
    re.IGNORECASE,
)


_END_MARKS = ".!\u2026 "
# Words that leave what a yes/no question asks about open: the reply names it.
INDEFINITES = frozenset({"anything", "anyone", "anybody", "anywhere", "something", "someone", "somebody", "somewhere"})
# A question that ends on a thing it only points at: "Did you make that?", "Have you tried it yet?".
POINTED_RE = re.compile(r"\b(?:it|that|this|them|those|these)(?:\s+(?:yet|before|already|again|too|out))?\W*$", re.I)


def polar_question(text: str, names: NameBook | None = None) -> str:
    """The message's last question, without its openers, when it asks yes or no about something ("Is that your
    third one?", "Did you join in?"): an inverted auxiliary before its subject, asking nothing for the asker
    ("Can I get the recipe?", "Could you tell me more?") and not for any one thing (`question_to` reads those);
    '' otherwise."""
    question = last_question(text, names)
    tokens = WORD_RE.findall(question.replace("\u2019", "'"))
    words = {w.lower() for w in tokens}
    polar = len(tokens) > 2 and tokens[0].lower() in INVERTED_AUXILIARIES and _subject(tokens[1])
    # "Are you doing ok?" asks after someone: words beyond small talk and filler say what is asked.
    asked = words - SMALL_TALK_WORDS - STOPWORDS - FILLER_WORDS - INVERTED_AUXILIARIES
    # A yes names nothing where the question asks which ("a martial arts place or a yoga studio?"), asks for
    # something the reply goes on to name ("up to anything?"), or is about a thing it only points at ("Did
    # you make that?": what "that" is was shown or said before).
    open_ended = words & (FIRST_PERSON | ANY_WORDS | INDEFINITES) or " or " in question or POINTED_RE.search(question)
    if polar and asked and not open_ended and not statement_in_question(question):
        return capitalise(question)
    return ""


def polar_answer(sentence: str, names: NameBook | None = None) -> str:
    """'Yes' or 'No' and the verbless words that go with it, when a reply's sentence opens with a yes or a no
    ("Yeah, plenty of times." -> 'Yes, plenty of times'; "Yes, I did." -> 'Yes'); '' when it opens with
    neither. A clause after the yes says something on its own and is read as its own statement."""
    text = EMOJI_RE.sub("", sentence).strip()
    match = POLAR_ANSWER_RE.match(text)
    if not match:
        return ""
    answer = "Yes" if match.group("yes") else "No"
    said = text[match.end() :].strip()
    rest = clean_sentence(said, names)[0] if said else ""
    if rest and not has_verb(rest) and not is_informative(rest, names) and is_answer(rest, names):
        return f"{answer}, {said.rstrip(_END_MARKS)}"
    return answer


def is_courtesy(sentence: str, names: NameBook | None = None) -> bool:
    """Thanks, pleasantries and acknowledgements ('Thanks!', 'Sounds good'), or a name alone (what is left of
    'Thanks, Gina!'): what a reply may open with before it answers."""
    words = WORD_RE.findall(sentence)
    only_names = bool(words) and names is not None and all(names.is_known(w) for w in words)
    return bool(only_names or PLEASANTRY_RE.match(sentence) or GRATITUDE_RE.match(sentence))


def is_answer(sentence: str, names: NameBook | None = None, asked: str = "") -> bool:
    """A cleaned sentence that says nothing on its own but may answer a question ('Luna and Oliver', 'Super
    good', 'It was amazing'): not courtesy or a name alone, not where someone is now, not a request, praise or a
    remark on what was shown ('That pic is cool'), and one content word of three letters or more. The answer to a
    yes/no question for any one thing (`asked`: "Any favorite movies?") names one: 'Definitely Star Wars', not
    'It sounds fun'."""
    if is_courtesy(sentence, names) or is_moment(sentence) or is_request(sentence) or REMARK_RE.match(sentence):
        return False
    if remark_class(sentence) in ("wish", "offer", "exhortation"):
        return False  # "Good luck!" answers nothing; a reaction ("It was amazing") may answer "How was it?"
    words = [w.lower() for w in WORD_RE.findall(sentence)]
    if words and WORD_RE.findall(asked.lower())[:1] and WORD_RE.findall(asked.lower())[0] in INVERTED_AUXILIARIES:
        said_nothing = STOPWORDS | CHATTER | FILLER_WORDS | PRAISE_WORDS | {"one", "ones"}  # "Nice one!"
        return words[0] not in SUBJECT_WORDS and any(len(w) > 2 and w not in said_nothing for w in words)
    return not is_compliment(words) and any(len(w) > 2 and w not in STOPWORDS and w not in CHATTER for w in words)


def is_small_talk(question: str, names: NameBook | None = None) -> bool:
    """'How are you?', "How's it going?", 'How has Joanna been?', 'How about you?': asking after someone, not
    for something a reply could state."""
    words = [w.lower() for w in WORD_RE.findall(question.replace("\u2019", "'"))]
    rest = [w for w in words if w not in SMALL_TALK_WORDS and not (names and names.is_known(w.capitalize()))]
    return bool(words) and words[0] in ("how", "how's", "what's") and not rest


def statement_in_question(sentence: str) -> str:
    """What a sentence ending in '?' states, or '' when it only asks (or asks for something).

    A question with the word order of a statement states what its speaker believes ("Jess said you're
    looking for a belay partner?"); a statement before a tag ("Hard work pays off, right?", "I'm vegetarian,
    anything good nearby?") states the part before the tag. A real question ("What would you partition
    on?") or a request ("For Lisbon, can you find me a hotel ...?") states nothing.
    """
    body = sentence.rstrip("?!. ")
    head, comma, tag = body.rpartition(",")
    if comma and _states(head) and not _states(tag.strip()):
        return head.strip() + "."
    # A statement, a dash, then the question: "You mentioned exploring endorsements - have you made any progress?"
    said, dash, asked = body.rpartition(" - ")
    if dash and asks(asked) and _states(said):
        return said.strip() + "."
    untagged, _space, last = body.rpartition(" ")
    if last.lower() in QUESTION_TAGS and _states(untagged):
        return untagged.strip(" ,") + "."
    if _states(body):
        return body + "."
    return ""


def _states(text: str) -> bool:
    """A clause in the order of a statement once its openers are gone ("Oh, and BTW, I started ..."): subject
    and verb, no question opener, no inverted request."""
    text = DISCOURSE_RE.sub("", INTERJECTION_RE.sub("", text.strip()), count=1)
    words = WORD_RE.findall(text.lower().replace("\u2019", "'"))
    if not words or words[0] in QUESTION_OPENERS or asks(text) or INVERTED_REQUEST_RE.search(text):
        return False
    short = len(words) == 2 and words[0] in SUBJECT_WORDS and has_verb(text)  # "I'm vegetarian"
    return short or is_clause(text.strip()) or (len(words) > 2 and _subject_and_verb(words))


def _subject_and_verb(words: list[str]) -> bool:
    """What `is_clause`'s cheap verb test misses, read from the first two words: a contracted "is" ("It's
    awesome how ...", "That's a japanese game"), or a noun then a plain verb ("Sunflowers mean warmth",
    "Traveling is amazing")."""
    first, second = words[0], words[1]
    if first.endswith("'s") and first in SUBJECT_WORDS:
        return True
    return first not in STOPWORDS and second in PRESENT_VERBS | {"is", "are", "was", "were"}


def asks(sentence: str) -> bool:
    """A question by its form, with or without its question mark: 'how was climbing Sam', 'did you buy it yet',
    'anyone in?', 'So has Nate been up to anything', 'What book is John reading'. A wh-word that opens a clause
    with its subject ('What I liked most was the view', 'How I got here is a long story') is a statement."""
    tokens = WORD_RE.findall(sentence.replace("\u2019", "'"))
    led = 0
    while led < len(tokens) - 1 and tokens[led].lower() in QUESTION_LEADS:
        led += 1  # "So has Nate been ...", "And do you ...", "Ok are they ..."
    tokens = tokens[led:]
    if not tokens:
        return False
    first, second = tokens[0].lower(), tokens[1] if len(tokens) > 1 else ""
    if first in ("anyone", "anybody") or (first == "got" and second.lower() in ("any", "a")):
        return True
    if _bare_question(first, [t.lower() for t in tokens]):
        return True
    if first.split("'")[0] in WH_WORDS:
        return "'" in first or second.lower() in INVERTED_AUXILIARIES or _wh_phrase_inverted(tokens[1:])
    # "So do I." agrees; "So has Nate been ..." asks: after a lead, the inversion must go on past its subject.
    return first in INVERTED_AUXILIARIES and _subject(second) and (led == 0 or len(tokens) > 2)


# Openers of a question that dropped its auxiliary ("[Have you] ever been to Paris", "[Do you] wanna hang out").
_DROPPED_AUX_OPENERS = frozenset({"ever", "wanna"})


def _bare_question(first: str, words: list[str]) -> bool:
    """A question that lost its auxiliary and its question mark: "Any plans for the weekend", "Anything new
    with you" (no verb after "any"), "You got any tips", "Ever been to Paris", "Wanna hang out". "Any time is
    fine", "Ever since I moved ..." and "You got this" are statements."""
    second = words[1] if len(words) > 1 else ""
    if first in ("any", "anything"):
        return len(words) > 1 and not any(w in AUX_VERBS or "'" in w for w in words[1:])
    if first in ("you", "u") and second in ("got", "ever", "wanna"):
        return second != "got" or (len(words) > 2 and words[2] in ("any", "anything"))
    return first in _DROPPED_AUX_OPENERS and second not in ("since", "after", "so") and len(words) > 1


def _subject(word: str) -> bool:
    """A word an inverted auxiliary may ask about: a pronoun ('did you') or a name ('did Jess book it')."""
    return word.lower() in QUESTION_SUBJECTS or (word[:1].isupper() and word not in NOT_NAMES)


def _wh_phrase_inverted(tokens: list[str]) -> bool:
    """After a wh-word, a short phrase of its own ('book', 'many kids', 'kind of music') then an auxiliary before
    its subject: 'What book is John reading', 'How long have you lived there'. A subject straight after the
    wh-word ('What Maria is doing is amazing', 'When John was younger, ...') makes it a statement."""
    for i, word in enumerate(tokens[: WH_PHRASE_MAX_WORDS + 1]):
        low = word.lower()
        if low in INVERTED_AUXILIARIES:
            after = tokens[i + 1] if i + 1 < len(tokens) else ""
            return i > 0 and (_subject(after) or after.lower() in DETERMINERS)
        if _subject(word) or low in DETERMINERS:
            return False
    return False


# The speaker's own excitement, said on its own ("I'm excited!", "I was really excited about them too"): what a
# reply answers "how did you feel?" with, though "excited" is filler elsewhere ("So exciting!").
EXCITED_RE = re.compile(
    r"^i(?:'m| am| was| feel| felt|'ve been| have been)\s+(?:(?:so|really|very|super|pretty|quite|truly|totally)\s+)*"
    r"(?:excited|thrilled|stoked|pumped)(?:\s+(?:about|for|with)\s+(?!you\b)[^,]+?)?(?:\s+(?:too|as well))?[.!]*$",
    re.IGNORECASE,
)


def is_informative(sentence: str, names: NameBook | None = None) -> bool:
    """False for what is not a fact: filler ('That's so cool.'), pleasantries, thanks, where someone is right
    now ('omw, 10 min'), a verbless reply ('Kestrel again'), a request of the moment ('send me details'), and
    bare praise of the one spoken to ('You're the best'); the speaker's excitement is one ("I'm excited!")."""
    if PLEASANTRY_RE.match(sentence) or GRATITUDE_RE.match(sentence) or is_moment(sentence):
        return False
    if remark_class(supply_subject(sentence)):
        return False  # a wish, an offer, a platitude, a reaction (`remarks`), read with its dropped "I" put back
    if EXCITED_RE.match(sentence.replace("\u2019", "'")):
        return True
    words = [w.lower() for w in WORD_RE.findall(sentence)]
    if len(words) < 2:
        return False  # "Mel." / "Congrats." say nothing on their own
    if len(words) <= FRAGMENT_MAX_WORDS and ":" not in sentence and not has_verb(sentence):
        return False
    plain = not re.search(r"\d|(?<!^)\b[A-Z][a-z]", sentence)  # no number, no name after the first word
    if len(words) <= REACTION_MAX_WORDS and REACTION_RE.match(sentence) and plain:
        return False  # "That sounds rough." (but not "That picture is from MinaLima.")
    if is_request(sentence) or (plain and is_compliment(words)):
        return False
    content = [
        w
        for w in words
        if w not in STOPWORDS
        and w not in FILLER_WORDS
        and len(w) > 1
        and not (names and names.is_known(w.capitalize()))
    ]
    return bool(content)


def is_moment(sentence: str) -> bool:
    """Where someone is or when they arrive ('omw, 10 min', "I'm at Pantoll, it's freezing"), but not a place
    that opens a sentence to set the scene of its clause ('At the event, I had a conversation with David')."""
    if not MOMENT_RE.match(sentence):
        return False
    _head, comma, tail = sentence.partition(",")
    scene = re.match(r"(?:at|by)\s", sentence, re.IGNORECASE)
    return not (scene and comma and is_clause(tail.strip()))


def is_request(sentence: str) -> bool:
    """A request of the moment: it opens with a verb ('send me details', 'please tell us', 'book it') and
    carries no plan: no date, time, number or name, no decision, commitment or action item. A proposal
    ("let's keep supporting each other") is the speaker's own intention, and stays; so is advice, a check the
    other is told to make for their own sake ("Be sure to build relationships with your customers"), where
    nothing is asked for the speaker ("make sure you send me the file" is a request)."""
    words = WORD_RE.findall(sentence)
    if is_advice(sentence):
        return False
    while words and words[0].lower() in REQUEST_OPENERS:
        words = words[1:]
    if not _opens_with_verb(sentence) or (len(words) > 1 and finite_verb(words[1].lower())):
        return False  # "Backfill finished overnight" has its verb after a subject
    return not any(_anchor(w) for w in words[1:]) and classify_kind(sentence) == "fact"


def is_advice(sentence: str) -> bool:
    """An imperative that tells the other to make sure of something for their own sake ("Just keep their area
    clean ... and make sure they get enough light"): nothing in it asks for the speaker ("make sure you send
    me the file", "please make sure to book it")."""
    words = {w.lower() for w in WORD_RE.findall(sentence)}
    asks_for_speaker = words & (FIRST_PERSON | {"us", "our", "please", "pls"})
    return _opens_with_verb(sentence) and bool(ADVICE_RE.search(sentence)) and not asks_for_speaker


def _opens_with_verb(sentence: str) -> bool:
    """An imperative: the first word (after 'please', 'just' ...) is a verb of a request ('send', 'book')."""
    words = [w.lower() for w in WORD_RE.findall(sentence)]
    while words and words[0] in REQUEST_OPENERS:
        words = words[1:]
    return bool(words) and words[0] in IMPERATIVE_VERBS


def _anchor(word: str) -> bool:
    """A word that ties a request to a plan: a date or time word, a number, a name."""
    name = word[:1].isupper() and word[1:].islower() and word not in NOT_NAMES
    return word.lower() in WHEN_WORDS or any(c.isdigit() for c in word) or name


def is_compliment(words: list[str]) -> bool:
    """Praise of the one spoken to and nothing else: 'You're the best', 'You rock', 'You're doing amazing'.
    A remark with anything more in it ('Your commitment to helping others is inspiring') is an opinion the
    speaker holds, and stays. `words` are the sentence's words in lower case."""
    if FIRST_PERSON & set(words) or not (SECOND_PERSON & set(words) and PRAISE_WORDS & set(words)):
        return False
    rest = [w for w in words if w not in SECOND_PERSON | PRAISE_WORDS | STOPWORDS | FILLER_WORDS]
    return not rest


_INTENSIFIERS = frozenset({"so", "really", "very", "super"})
# What follows a dropped "It's been" rather than "I've been": a stretch of time ("Been ages", "Been a while").
_SPAN_OPENERS = frozenset({"a", "an", "ages", "forever", "quite", "such"})


def supply_subject(sentence: str) -> str:
    """Put back a dropped first-person subject.

    'Went hiking.' -> 'I went hiking.'; 'So glad you came.' -> "I'm so glad you came."
    """
    words = WORD_RE.findall(sentence.replace("\u2019", "'"))
    if not words or is_advice(sentence):  # "Just keep their area clean and make sure ..." tells, not did
        return sentence
    first = words[0].lower()
    second = words[1].lower() if len(words) > 1 else ""
    if first == "been" and second.endswith("ing"):  # "Been reading that book" -> "I've been reading ..."
        return f"I've {sentence[:1].lower()}{sentence[1:]}"
    # The speaker as an object ("Really made me proud", "Been hectic for me") says the dropped subject is "it".
    me = bool({w.lower() for w in words} & {"me", "myself"})
    if first == "been":  # "Been a busy week since we talked": a stretch of time; "Been busy lately": the speaker
        subject = "It's" if me or second in _SPAN_OPENERS else "I've"
        return f"{subject} {sentence[:1].lower()}{sentence[1:]}"
    if first == "never" and (second == "been" or second in SUBJECT_DROP_VERBS or second in IRREGULAR_PAST):
        # "Never been on a sports team" -> "I have never been ..."; "Never had a chance" -> "I never had ..."
        return f"{'I have' if second == 'been' else 'I'} {sentence[:1].lower()}{sentence[1:]}"
    gerund_after = second.endswith("ing") and len(second) > 5 and not has_verb(sentence.split(maxsplit=2)[-1])
    if first in _INTENSIFIERS and not me and (second in SUBJECT_DROP_VERBS or gerund_after):
        # "Really appreciate the support", "Really looking forward to it"; not "Really having a space is key"
        return f"{'I am' if gerund_after else 'I'} {sentence[:1].lower()}{sentence[1:]}"
    if _noun_subject(words):  # "Love and acceptance should be everyone's right": "love" is its subject
        return sentence
    just_did = first == "just" and second in SUBJECT_DROP_VERBS  # "Just got new shoes"
    if first in SUBJECT_DROP_VERBS and (just_did or not (first == "just" and second in STOPWORDS)):
        return f"I {sentence[:1].lower()}{sentence[1:]}"
    if first in SUBJECT_DROP_ADJECTIVES or (first in _INTENSIFIERS and second in SUBJECT_DROP_ADJECTIVES):
        return f"I'm {sentence[:1].lower()}{sentence[1:]}"
    gerund = first.endswith("ing") and len(first) > 5 and first not in FILLER_WORDS | PRAISE_WORDS
    if gerund and not has_verb(sentence[len(first) :]):
        # "Planning a trip there." has no other verb, so "planning" is not a gerund subject.
        return f"I'm {sentence[:1].lower()}{sentence[1:]}"
    if first.endswith("ed") and len(first) > 4 and first not in STOPWORDS and _takes_object(words[1:2], sentence):
        return f"I {sentence[:1].lower()}{sentence[1:]}"  # "Booked Thursday 6pm", "Decided: renew ..."
    return sentence


# The verbs that follow a noun subject straight away or after an adverb ("Love is all you need", "Love and
# acceptance really can be found everywhere"), never a dropped "I" ("Love you!", "Hope to see it").
_SUBJECT_VERBS = word_set("is was are were can could should would will must may might has does makes means")
NOUN_SUBJECT_MAX_WORDS = 3  # "Love and acceptance", "Hope and kindness really": a short phrase before its verb


def _noun_subject(words: list[str]) -> bool:
    """A dropped-subject verb that is a noun subject instead: its verb follows straight away ("Love is ..."),
    or it is joined to another noun ("Love and acceptance should ..."; not "Went and bought ...", where a verb
    follows "and") and a verb follows within a few words."""
    lowered = [w.lower() for w in words]
    if len(lowered) > 1 and lowered[1] in _SUBJECT_VERBS:
        return True
    if len(lowered) < 4 or lowered[1] not in ("and", "or") or lowered[2] in STOPWORDS:
        return False
    if lowered[2] in SUBJECT_DROP_VERBS and lowered[3] not in _SUBJECT_VERBS:
        return False  # "Went and bought a bike", but "Wish and hope are different things"
    window = lowered[3 : 3 + NOUN_SUBJECT_MAX_WORDS]
    return any(w in _SUBJECT_VERBS for w in window) and not any(w in SUBJECT_PRONOUNS for w in window)


def _takes_object(after: list[str], sentence: str) -> bool:
    """The word after a sentence-initial past verb shows it is a verb with an object, not an adjective:
    a determiner, a pronoun, a number, a name, 'up'/'out', or a colon ('Pushed the draft', 'Booked Thursday')."""
    if not after:
        return False
    word = after[0]
    objects = {"the", "a", "an", "my", "your", "his", "her", "our", "their", "this", "that", "it", "up", "out"}
    return word.lower() in objects or word[:1].isdigit() or word[:1].isupper() or bool(re.match(r"^\w+:", sentence))


def has_verb(clause: str) -> bool:
    """Cheap clause test: an auxiliary/common verb, a contraction, an -ed or irregular past word, or any
    word right after a subject pronoun ("we ride")."""
    words = WORD_RE.findall(clause.lower().replace("\u2019", "'"))
    for position, word in enumerate(words):
        if word in AUX_VERBS or word in IRREGULAR_PAST or word.endswith(("'m", "'re", "'ve", "'ll", "'d", "n't")):
            return True
        if position > 0 and words[position - 1] in SUBJECT_PRONOUNS and word not in STOPWORDS:
            return True
        if position > 0 and words[position - 1].endswith("'s") and word.endswith("ing"):
            return True  # "Dev's coming"
        if position > 0 and words[position - 1] == "name's":
            return True  # "Her name's Coco": a name is said, not owned, so this "'s" is "is"
        if len(word) > 4 and word.endswith("ed"):
            return True
        if word.endswith("s") and word[:-1] in PRESENT_VERBS:
            return True
    return False


def _reminded(text: str) -> str:
    """What a reminder frames, when it is a clause ("Remember that staying positive is very important" ->
    "Staying positive is very important"); else the text. After "that" a gerund may be the subject and an
    adverb may come first ("that sometimes stumbling blocks can be ...")."""
    frame = REMINDER_RE.match(text.replace("\u2019", "'"))
    if not frame:
        return text
    rest = text[frame.end() :]
    words = WORD_RE.findall(rest)
    probe = rest
    while words and words[0].lower() in ADVERBS:
        probe = probe[probe.index(words[0]) + len(words[0]) :].lstrip(" ,")
        words = words[1:]
    gerund_subject = bool(
        frame.group("that") and words and words[0].lower().endswith("ing") and has_verb(probe[len(words[0]) :])
    )
    return capitalise(rest) if is_clause(probe) or gerund_subject else text


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
