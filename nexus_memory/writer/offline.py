"""The offline extractor: facts, entities, causal pairs, contacts and introductions without an LLM.

It is the writer's fallback and its fast path for backfills: deterministic, pure Python + `re`, no
network. It follows the writer contract of seed 002 as far as rules can: atomic facts as standalone
sentences (first person resolved to the sender's name), entities with roles, conservative causal
links ("false causal links are worse than missing ones"), conversational contact discovery and
real-name introductions. Derived event kinds (decision, action_item, commitment, preference_stated,
correction) come from seed 003 and are found by cue phrases.

Pipeline for one event (see `extract`):

1. skip ephemeral chatter ("ok", "lol", emoji only, greetings only);
2. pull out a shared photo ("[shares a photo: caption]") as its own fact;
3. find contact statements and introductions on the raw text;
4. split into sentences, drop questions (keeping the statement before a tag like ", right?") and
   filler sentences, strip leading interjections, greetings and vocatives ("Wow, ...", "Caroline, ..."),
   and put back a dropped subject ("Went hiking." -> "I went hiking.");
5. split each sentence on a causal cue (cause + effect facts and a `CausalPair`), otherwise on
   "; " and ", and " / ", but " when both sides are clauses (subject-like start and a verb);
6. resolve I/me/my to the sender and you/your to the peer, annotate relative dates with the
   explicit date, read explicit dates into `as_of`, tag entities and the derived kind. A statement
   that names no person after resolution is attributed: "<sender> said ...".

Everything here is heuristic and English-only; the LLM writer is the quality path.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

from nexus_memory.events import Event

# ---------------------------------------------------------------------------------------------
# Result types
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EntityMention:
    """An entity named in a fact: surface form, type and the role it plays for the event."""

    name: str
    type: str  # person, organization, location, email, phone, url, handle, date, concept
    role: str = "mentioned"  # sender, peer, mentioned, contact_of_sender


@dataclass(frozen=True)
class ExtractedFact:
    """One atomic, standalone fact sentence with its provenance and entities."""

    text: str
    source_event_id: str
    as_of: int  # unix ms: the event time, or the explicit date stated in the text
    entities: tuple[EntityMention, ...]
    kind: str = "fact"  # or decision, action_item, commitment, preference_stated, correction


@dataclass(frozen=True)
class CausalPair:
    """A cause -> effect link between two facts of the same extraction (indexes into `facts`)."""

    cause: int
    effect: int
    strength: float  # 0..1, by cue


@dataclass(frozen=True)
class ContactStatement:
    """Contact info said in conversation ("my email is ..."): enriches an entity, never routable."""

    value: str
    type: str  # email | phone | handle
    owner: str  # 'sender', or the name of the person it was said about
    source_event_id: str


@dataclass(frozen=True)
class NameIntroduction:
    """A sender telling their real name ("Hey, I'm Marcus"): promotes a handle entity to a person."""

    name: str
    source_event_id: str


@dataclass
class Extraction:
    """Everything `extract` found in one batch of events."""

    facts: list[ExtractedFact] = field(default_factory=list)
    causal: list[CausalPair] = field(default_factory=list)
    contacts: list[ContactStatement] = field(default_factory=list)
    introductions: list[NameIntroduction] = field(default_factory=list)
    skipped_events: list[str] = field(default_factory=list)  # ids of events that yielded no fact


# ---------------------------------------------------------------------------------------------
# Regex tables
# ---------------------------------------------------------------------------------------------

# An email address.
EMAIL_RE = re.compile(r"(?<![\w.+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
# A phone number: +1 (555) 123-4567, 555.123.4567, 555-1234 (not dates, not plain numbers).
PHONE_RE = re.compile(
    r"(?<![\w-])(?:\+\d{1,3}[\s.-]?)?(?:\(\d{2,4}\)\s?|\d{3}[\s.-])?\d{3}[.-]\d{4}(?![\w-])"
    r"|(?<![\w-])\+\d{7,15}(?![\w-])"
)
# A URL with a scheme or a www. prefix (trailing punctuation is trimmed afterwards).
URL_RE = re.compile(r"\b(?:https?://|www\.)[^\s<>\"']+", re.IGNORECASE)
# An @handle that is not part of an email address.
HANDLE_RE = re.compile(r"(?<![\w.@])@[A-Za-z0-9_][A-Za-z0-9_.]{1,30}(?<!\.)")
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
# Tokens for word-level heuristics (keeps contractions and possessives together).
WORD_RE = re.compile(r"[A-Za-z0-9]+(?:['\u2019][A-Za-z]+)*")
# A capitalised token sequence for names: "Caroline", "New York", "University of Michigan".
CAPSEQ_RE = re.compile(
    r"(?<![\w@.'\u2019-])(?:[A-Z][a-zA-Z0-9&.-]*[a-zA-Z0-9]|[A-Z])"
    r"(?:\s+(?:(?:of the|of|de|van|von|da|du|la|le)\s+)?(?:[A-Z][a-zA-Z0-9&.-]*[a-zA-Z0-9]|[A-Z]))*"
)
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
# A name given in an introduction: "I'm Marcus", "my name is Marcus", "this is Marcus", "call me Marcus".
INTRO_RE = re.compile(
    r"\b(?P<cue>I['\u2019]m|I am|[Mm]y name is|[Mm]y name['\u2019]s|[Tt]his is|[Cc]all me|[Ii]t['\u2019]s)\s+"
    r"(?P<name>[A-Z][a-z]+(?:[-'][A-Z]?[a-z]+)?(?:\s+[A-Z][a-z]+)?)(?![\w'\u2019])"
)
# What may come right before an introduction cue: the start, a clause break, or a greeting.
INTRO_BEFORE_RE = re.compile(r"(?:^|[.!?,;:\-]\s*|\b(?:hey|hi|hello|and)\s+)$", re.IGNORECASE)
# Contact info said about oneself or a named person: "my (new) email is X", "Sam's number is X".
CONTACT_OWNED_RE = re.compile(
    r"\b(?P<owner>[Mm]y|[A-Z][a-z]+['\u2019]s)\s+(?:new\s+|personal\s+|work\s+|other\s+|current\s+|cell\s+|"
    r"mobile\s+|private\s+)?(?P<kind>(?i:e-?mail(?:\s+address)?|phone(?:\s+number)?|number|cell|mobile|"
    r"whatsapp|discord|twitter|x handle|instagram|insta|ig|telegram|signal|snapchat|snap|tiktok|github|"
    r"reddit|skype|steam|slack|handle|username|user name|gamertag|tag)(?:\s+(?:handle|username|id|tag))?)"
    r"\s*(?:is|'s|:|=|-)\s*(?P<value>\+?\(?\d[\d\s().-]{5,}\d|[^\s,;!?]+)",
)
# Contact info offered as a way to reach the sender: "reach me at X", "text me on 555-1234".
CONTACT_REACH_RE = re.compile(
    r"\b(?:reach|contact|text|call|email|e-mail|message|dm|ping|find|add|hit)\s+me\s+(?:up\s+)?"
    r"(?:at|on|via)\s+(?:(?:discord|twitter|instagram|telegram|signal|whatsapp|steam|skype)\s+(?:at|as)\s+)?"
    r"(?P<value>\+?\(?\d[\d\s().-]{5,}\d|[^\s,;!?]+)",
    re.IGNORECASE,
)
# Explicit day-precise dates: "12 March 2024", "March 12th, 2024", "March 12", "2024-03-12".
DATE_DMY_RE = re.compile(
    r"\b(?P<d>\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<m>January|February|March|April|May|June|July|August|"
    r"September|October|November|December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)\.?"
    r"(?:,?\s+(?P<y>\d{4}))?\b"
)
DATE_MDY_RE = re.compile(
    r"\b(?P<m>January|February|March|April|May|June|July|August|September|October|November|December|"
    r"Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)\.?\s+(?P<d>\d{1,2})(?:st|nd|rd|th)?"
    r"(?:,?\s+(?P<y>\d{4}))?(?![\d:])"
)
DATE_ISO_RE = re.compile(r"\b(?P<y>\d{4})-(?P<m>\d{2})-(?P<d>\d{2})\b")
# Month-precise dates, used only as date entities: "March 2024".
DATE_MY_RE = re.compile(
    r"\b(?P<m>January|February|March|April|May|June|July|August|September|October|November|December)"
    r"\s+(?P<y>\d{4})\b"
)
# Relative time phrases that can be pinned to a date from the event time.
RELATIVE_DAY_RE = re.compile(
    r"\b(?:the\s+)?day\s+before\s+yesterday\b|\byesterday\b|\btomorrow\b|"
    r"\btoday\b|\btonight\b|\bthis\s+(?:morning|afternoon|evening)\b"
    r"|\blast\s+night\b",
    re.IGNORECASE,
)
RELATIVE_PERIOD_RE = re.compile(
    r"\b(?P<which>last|next|this|past)\s+(?P<unit>week|weekend|month|year|summer|"
    r"winter|spring|fall|autumn)\b",
    re.IGNORECASE,
)
RELATIVE_WEEKDAY_RE = re.compile(
    r"\b(?P<which>last|next|this|on|past)\s+(?P<day>monday|tuesday|wednesday|"
    r"thursday|friday|saturday|sunday)\b",
    re.IGNORECASE,
)
RELATIVE_AGO_RE = re.compile(
    r"\b(?P<n>a|an|one|two|three|four|five|six|seven|eight|nine|ten|a few|a couple of|a couple|few|"
    r"several|\d{1,2})\s+(?P<unit>day|week|month|year)s?\s+ago\b",
    re.IGNORECASE,
)
# A date annotation this module wrote already (so re-running never doubles it).
ANNOTATION_RE = re.compile(r"\s*\((?:on|in|around|the week|the weekend|a few)[^()]*\)")

# Causal cues inside a sentence: (regex, cause side, strength). "left"/"right" say which side is the cause.
CAUSAL_INFIX: tuple[tuple[re.Pattern[str], str, float], ...] = (
    (re.compile(r",?\s+because\s+(?!of\b)", re.IGNORECASE), "right", 0.85),
    (
        re.compile(
            r",?\s+(?:which|and this|and that|this|that)\s+(?:has\s+|have\s+)?(?:led|leads)\s+to\s+", re.IGNORECASE
        ),
        "left",
        0.75,
    ),
    (re.compile(r"\s+(?:has\s+|have\s+|had\s+)?(?:led|leads)\s+to\s+", re.IGNORECASE), "left", 0.75),
    (re.compile(r"\s+(?:resulted|results)\s+in\s+", re.IGNORECASE), "left", 0.75),
    (re.compile(r",?\s+due\s+to\s+", re.IGNORECASE), "right", 0.8),
    (re.compile(r",?\s+as\s+a\s+result\s+of\s+", re.IGNORECASE), "right", 0.8),
    (re.compile(r"\s+(?:was|were|is|are|been)?\s*caused\s+by\s+", re.IGNORECASE), "right", 0.85),
    (re.compile(r"[,;]?\s+(?:and\s+)?therefore,?\s+", re.IGNORECASE), "left", 0.8),
    (re.compile(r",?\s+so\s+that\s+", re.IGNORECASE), "left", 0.6),
    (re.compile(r"[,;]\s+so\s+(?!that\b|much\b|many\b|far\b|glad\b|happy\b)", re.IGNORECASE), "left", 0.6),
)
# Causal cues at sentence start: "Because X, Y" / "Since X, Y" (cause first, then effect).
CAUSAL_PREFIX: tuple[tuple[re.Pattern[str], float], ...] = (
    (re.compile(r"^because\s+(?P<cause>[^,]+),\s+(?P<effect>.+)$", re.IGNORECASE), 0.85),
    (
        re.compile(
            r"^since\s+(?P<cause>(?!\d|last\b|then\b|yesterday\b|childhood\b|high school\b|college\b|"
            r"the\s+(?:day|time|beginning|start|age)\b)[^,]+),\s+(?P<effect>.+)$",
            re.IGNORECASE,
        ),
        0.6,
    ),
)
# Sentence-initial links to the previous sentence: "As a result, Y" means previous -> Y.
CAUSAL_LINK_PREV = re.compile(
    r"^(?:as\s+a\s+result|therefore|because\s+of\s+(?:this|that)|that's\s+why|"
    r"this\s+is\s+why|thanks\s+to\s+(?:this|that))\s*,?\s+",
    re.IGNORECASE,
)

# Derived kinds by cue, tried in this order (the first that matches wins).
KIND_CUES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "correction",
        re.compile(
            r"^(?:actually|correction|to clarify|i meant|sorry,? i meant|let me correct)\b"
            r"[,:]?|\bnot\s+(?!just\b|only\b|simply\b|merely\b|that\b)[^,.]{1,40},\s*"
            r"(?:it['\u2019]s|it is|it was)\s+|"
            r"\bi\s+(?:was\s+)?(?:wrong|mistaken)\b",
            re.IGNORECASE,
        ),
    ),
    (
        "decision",
        re.compile(
            r"\b(?:we|i)\s+(?:have\s+|'ve\s+|\u2019ve\s+|finally\s+|just\s+)?decided\b|"
            r"\bdecided\s+to\b|\blet['\u2019]?s\s+go\s+with\b|"
            r"\bwe(?:['\u2019]re| are)\s+going\s+with\b|"
            r"\b(?:we|i)\s+(?:chose|agreed|settled on|made the decision)\b|\bdecision\s+is\b",
            re.IGNORECASE,
        ),
    ),
    (
        "commitment",
        re.compile(
            r"\blet['\u2019]?s\s+meet\b|\bi\s+promise\b|\bsee\s+you\s+(?:at|on|there|tomorrow|"
            r"next)\b|\bi['\u2019]ll\s+be\s+there\b|\bwe['\u2019]ll\s+meet\b|\bmeet\s+you\s+(?:at|on)\b|"
            r"\bi\s+(?:swear|guarantee)\b|\bcount\s+on\s+me\b|\bi\s+give\s+you\s+my\s+word\b",
            re.IGNORECASE,
        ),
    ),
    (
        "action_item",
        re.compile(
            r"\bi['\u2019]ll\s+(?!be\s+(?:happy|glad|there)\b)\w+|\bi\s+will\s+\w+|"
            r"\bto-?do\b|\bi\s+(?:need|have|got)\s+to\b|\bi\s+must\b|^(?:please\s+)?remind\s+me\s+to\b|"
            r"\bi['\u2019]m\s+going\s+to\s+\w+|\bi\s+plan\s+to\b|\bi['\u2019]m\s+planning\s+to\b",
            re.IGNORECASE,
        ),
    ),
    (
        "preference_stated",
        re.compile(
            r"\bi\s+(?:really\s+|absolutely\s+|just\s+|totally\s+|also\s+)?"
            r"(?:prefer|love|hate|like|enjoy|adore|dislike|can['\u2019]t stand|"
            r"don['\u2019]t like)\s+(?!it\b|that\b|this\b|you\b|hearing\b|seeing\b|how\b|"
            r"to hear\b|when\b|what\b)|\bmy\s+(?:all-time\s+|absolute\s+)?favou?rite\b|"
            r"\bi['\u2019]m\s+(?:a\s+)?(?:big\s+)?fan\s+of\b",
            re.IGNORECASE,
        ),
    ),
)

# ---------------------------------------------------------------------------------------------
# Word lists
# ---------------------------------------------------------------------------------------------


def _words(text: str) -> frozenset[str]:
    """A word list written as whitespace-separated text (easier to read and edit than a literal)."""
    return frozenset(text.split())


MONTHS = {
    name: i
    for i, name in enumerate(
        [
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        ],
        start=1,
    )
}
MONTH_ABBR = {
    "jan": 1,
    "feb": 2,
    "mar": 3,
    "apr": 4,
    "jun": 6,
    "jul": 7,
    "aug": 8,
    "sep": 9,
    "sept": 9,
    "oct": 10,
    "nov": 11,
    "dec": 12,
}
MONTH_NAMES = [
    "",
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
NUMBER_WORDS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "a couple of": 2,
    "a couple": 2,
}

# Words that end a sentence with a period without ending the sentence.
ABBREVIATIONS = frozenset(
    {
        "mr",
        "mrs",
        "ms",
        "dr",
        "st",
        "jr",
        "sr",
        "prof",
        "vs",
        "etc",
        "e.g",
        "i.e",
        "inc",
        "co",
        "ltd",
        "no",
        "approx",
        "dept",
        "mt",
        "ave",
        "u.s",
        "a.m",
        "p.m",
    }
)

# Function words; used for the chatter test and the "said" prefix decision.
STOPWORDS = _words("""
a about above after again against all also am an and any are aren't as at be because been before being
below between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down
during each few for from further had hadn't has hasn't have haven't having he he'd he'll he's her here
here's hers herself him himself his how how's i i'd i'll i'm i've if in into is isn't it it's its itself
let's me more most mustn't my myself no nor not of off on once only or other ought our ours ourselves
out over own same shan't she she'd she'll she's should shouldn't so some such than that that's the their
theirs them themselves then there there's these they they'd they'll they're they've this those through
to too under until up very was wasn't we we'd we'll we're we've were weren't what what's when when's
where where's which while who who's whom why why's with won't would wouldn't you you'd you'll you're
you've your yours yourself yourselves just really will gonna wanna got get gets getting
""")

# Words that make a sentence chatter when nothing else is in it ("That's really cool, thanks!").
FILLER_WORDS = _words("""
hey hi hiya hello oh ooh wow whoa yeah yea yep yup yes no nope nah ok okay well haha hahaha hah hehe lol
aww aw ah ahh omg hmm um thanks thank cheers congrats congratulations sure totally absolutely definitely
exactly indeed right true agreed man dude wait awesome great cool nice amazing wonderful sweet gosh ugh
yay woo hooray alright bye goodbye goodnight good glad happy fun lovely fantastic incredible super
sounds sound looks look seems seem like love loved much lot lots thing things stuff kind sorry
see hear heard talk soon later care luck welcome pleasure problem worries too same also always
awesome beautiful cute gorgeous stunning brilliant perfect interesting exciting excited cool neat
nice fab fabulous wow hope hoping guess think mean know yeah ya yo pretty quite such tho though
""")

# Capitalised words that are not names when they appear mid-sentence.
NOT_NAMES = _words("""
I I'm I've I'll I'd OK Ok Okay Hey Hi Hello Oh Wow Yes No Yeah Yep Thanks Thank The A An This That These
Those It Its He She We They You Your My Our Their His Her Me Him Us Them Mom Mum Dad Mother Father
Grandma Grandpa Sis Bro Lol Haha Omg Btw Sorry Please Congrats Congratulations Cheers Mr Mrs Ms Dr
Monday Tuesday Wednesday Thursday Friday Saturday Sunday January February March April May June July
August September October November December Christmas Easter Halloween Thanksgiving Today Tomorrow
Yesterday Tonight God Mon Tue Tues Wed Thu Thurs Fri Sat Sun Jan Feb Mar Apr Jun Jul Aug Sep Sept Oct Nov Dec
""")

# Words that cannot follow "I'm" as a name ("I'm Happy", "I'm Sorry", "I'm Going") and nationalities.
INTRO_STOP = _words("""
happy sorry going glad fine good great okay ok not so just back here there really also still sure excited
tired busy new done ready home sad thankful grateful proud lucky curious nervous scared afraid worried
hungry bored free available in on at from with about always never currently now trying thinking working
looking feeling doing getting having making taking living staying planning hoping learning reading
watching writing playing starting pretty very totally definitely actually literally kinda kind sort
american canadian british english french german italian spanish mexican chinese japanese korean indian
irish scottish australian russian brazilian jewish christian muslim catholic buddhist hindu atheist
gay straight trans bi vegan vegetarian single married divorced the a an it that this your my his her our
their all both afraid sure well sick late early first last glad thrilled stoked blessed honored
""")

# Nationality, language and faith words: capitalised, but neither people nor places.
NATIONALITIES = _words("""
American Canadian British English French German Italian Spanish Mexican Chinese Japanese Korean Indian Irish
Scottish Australian Russian Brazilian Jewish Christian Muslim Catholic Buddhist Hindu Dutch Swedish Greek
Portuguese Polish Turkish Arabic Latin African European Asian Latino Latina Hispanic Thai Vietnamese
""")
# Subject-like words that may start a clause (for compound splits).
SUBJECT_WORDS = _words("""
i i'm i've i'll i'd we we're we've we'll we'd you you're you've you'll he he's she she's it it's they
they're they've that that's this there there's here my our your his her their the a an these those
everyone everything someone something nobody nothing people
""")

# Words that open a question ("What ...", "Did you ...", "Can I ..."): such a sentence states nothing.
QUESTION_OPENERS = _words(
    "what how why where when who whom whose which do does did is are was were can could "
    "would will should shall have has had any anything anyone am isn't aren't don't "
    "didn't doesn't won't"
)
# Personal pronouns that are always subjects: the word after one is taken as a verb.
SUBJECT_PRONOUNS = _words("i we you they he she")
# Auxiliary and very common verbs (in any person) that mark a clause.
AUX_VERBS = _words("""
am is are was were be been being has have had do does did will would can could should shall may might
must 'm 's 're 've 'll 'd gonna wanna can't won't don't doesn't didn't isn't aren't wasn't weren't
haven't hasn't hadn't couldn't wouldn't shouldn't got get gets go goes went gone make makes made take
takes took feel feels felt think thinks thought know knows knew love loves want wants need needs like
likes see saw seen say said says try tries tried help helps keep keeps kept give gives gave find found
finds start starts started come comes came
""")

# Irregular past tenses (no -ed to spot them by).
IRREGULAR_PAST = _words("""
bought brought caught taught thought fought sought ran began swam sang rang drank drove rode wrote spoke broke
chose froze woke wore tore bore threw grew knew flew drew blew ate fell held told sold sent spent lent built
left felt kept slept swept meant met led fed fled read heard paid laid said stood understood won lost shot
hid bit lit sat sprang stuck struck hung dug spun became forgot forgave went got did made took saw came gave
found had was were began sank shook stole rose drew beat bent bled dealt dreamt fit lay slid spat split wept
learnt burnt spelt leapt retook
""")
# Base-form verbs that take an -s when the subject becomes a third-person name ("I love" -> "Ann loves").
PRESENT_VERBS = _words("""
love like want need think feel hope know work live plan enjoy prefer hate go take make get have do
try say see believe wish miss remember find keep play teach study run write read paint cook bake sing
dance practice travel visit spend use own agree mean look seem guess appreciate understand care
volunteer help start love adore dislike struggle deal focus promise swear bet recommend suggest
pay matter happen grow change bring show give build move sound turn last win lose fit belong depend
really definitely totally believe admire support collect create draw hike swim ride drive watch listen
""")
# Sentence-initial verbs that mean the speaker dropped the subject ("Went hiking", "Love that idea").
SUBJECT_DROP_VERBS = _words("""
had got went did made tried found started finished took saw met joined bought visited watched read wrote
learned learnt spent adopted painted signed moved picked baked cooked ran won lost taught gave built
love loved hope wish need want appreciate think guess miss plan can't cannot couldn't gotta just recently
""")
# Sentence-initial adjectives of a dropped "I'm" ("Excited to start", "So glad you came").
SUBJECT_DROP_ADJECTIVES = _words(
    "excited thrilled glad happy proud stoked sorry grateful thankful lucky blessed nervous worried curious busy tired"
)
# Words after I/you that must not take an -s: present-and-past forms and colloquial auxiliaries.
NO_AGREEMENT = _words(
    "read put set let hit cut quit hurt cost spread shut kinda sorta gonna wanna gotta "
    "ought used might must may shall should could would can will sooner rather "
    "yesterday today tomorrow"
)
# Adverbs that may sit between the subject and its verb ("I really love").
ADVERBS = _words(
    "really also just still always usually often never definitely totally actually "
    "sometimes truly absolutely even already"
)
# A third-person form for the few irregular verbs after a resolved subject.
THIRD_PERSON = {
    "am": "is",
    "are": "is",
    "were": "was",
    "have": "has",
    "do": "does",
    "don't": "doesn't",
    "haven't": "hasn't",
    "aren't": "isn't",
    "weren't": "wasn't",
    "go": "goes",
    "'m": "is",
}
# Contractions after I/you rewritten for a named subject.
CONTRACTIONS = {"'m": " is", "'re": " is", "'ve": " has", "'ll": " will", "'d": " would", "'s": " is"}

# Entity type cues: organization suffixes and words.
ORG_WORDS = _words("""
Inc Inc. Corp Corp. Corporation LLC Ltd Ltd. Company Co Co. Group Holdings University College School
Institute Foundation Bank Hospital Clinic Church Club Association Society Center Centre Agency Studio
Studios Labs Lab Academy Team Council Committee Department Ministry Museum Library Gallery Records
Press Media Network Systems Technologies Tech Partners Capital Ventures Airlines Store Shop Cafe Restaurant
Bakery Gym Theater Theatre Festival Conference League Union Party
""")
# Location suffixes and words.
LOCATION_WORDS = _words("""
Street St St. Avenue Ave Road Rd Boulevard Blvd Lane Drive Way City Town Village County State Province
Park Lake River Mountain Mountains Mount Mt Beach Island Islands Bay Valley Canyon Falls Forest Desert
Coast Hills Hill Harbor Harbour Square Bridge Airport Station Trail Peninsula Ocean Sea Gulf
""")
# A small gazetteer of places people name in chat.
PLACES = _words("""
Paris London Rome Berlin Madrid Tokyo Kyoto Seoul Beijing Shanghai Sydney Melbourne Toronto Vancouver
Montreal Chicago Boston Seattle Portland Denver Austin Dallas Houston Miami Atlanta Phoenix Vegas
Brooklyn Manhattan Hollywood Nashville Orlando Philadelphia Detroit Minneapolis Amsterdam Barcelona
Lisbon Dublin Prague Vienna Athens Istanbul Dubai Mumbai Delhi Bangkok Bali Singapore Mexico Canada
France Germany Italy Spain Japan China India Brazil Australia England Ireland Scotland Sweden Norway
Greece Portugal Thailand Vietnam Korea Egypt Kenya Peru Chile Argentina Iceland Hawaii Alaska
California Texas Florida Colorado Oregon Washington Arizona Utah Nevada Michigan Ohio Georgia Virginia
Carolina Tennessee Montana Maine Vermont Europe Asia Africa America NYC LA SF UK USA US
New York Los Angeles San Francisco San Diego New Orleans New Jersey Las Vegas
""")
# Prepositions after which a single capitalised word is most likely a place.
LOCATION_PREPOSITIONS = frozenset({"in", "from", "near", "to", "visited", "visiting", "around", "across"})
# Words before a capitalised word that mark it as a person.
PERSON_CUES = _words("""
friend friends sister brother mom dad mother father son daughter wife husband partner boyfriend
girlfriend cousin aunt uncle niece nephew grandma grandpa colleague coworker boss neighbor neighbour
named called met told asked mentor coach teacher buddy pal roommate
""")

# Messages that are ephemeral chatter as a whole (after lower-casing and stripping punctuation).
CHATTER = _words("""
ok okay k kk lol lmao rofl haha hahaha hehe brb gtg ttyl thx ty thanks yes no yep nope yeah sure cool
nice great hmm hm ugh yay wow omg np ya yo hi hey hello bye
""")


# ---------------------------------------------------------------------------------------------
# Public entry point
# ---------------------------------------------------------------------------------------------


def extract(
    events: Sequence[Event],
    *,
    context: Sequence[Event] = (),
    speaker_names: Mapping[str, str] | None = None,
) -> Extraction:
    """Extract facts, causal pairs, contacts and introductions from `events` (new, in time order).

    `context` holds earlier events of the thread: they help resolve who "you" is and which names are
    known, and introductions in them name their senders, but no facts are taken from them.
    `speaker_names` maps sender_id -> best known real name (falls back to sender_name, then sender_id).
    """
    names = _NameBook(speaker_names or {})
    for event in context:
        names.learn_event(event)
        for intro in find_introductions(event.content):
            names.introduce(event.sender_id, intro)
    for event in events:
        names.learn_event(event)

    result = Extraction()
    previous_sender: str | None = context[-1].sender_id if context else None
    for event in events:
        peer = names.peer_of(event, previous_sender)
        _extract_event(event, names, peer, result)
        previous_sender = event.sender_id
    return result


# ---------------------------------------------------------------------------------------------
# Names
# ---------------------------------------------------------------------------------------------


class _NameBook:
    """Who is who in this batch: sender_id -> display name, plus the set of known person names."""

    def __init__(self, given: Mapping[str, str]) -> None:
        self.given = dict(given)
        self.learned: dict[str, str] = {}  # from introductions, override everything
        self.display: dict[str, str] = {}  # from event.sender_name
        self.known: set[str] = set()
        self.first_tokens: set[str] = set()  # first word of each known name ("Ann" of "Ann Lee")
        for name in given.values():
            self.add_known(name)

    def add_known(self, name: str) -> None:
        """Remember a person name (and its first word) as known."""
        if name:
            self.known.add(name)
            self.first_tokens.add(name.split()[0])

    def learn_event(self, event: Event) -> None:
        """Remember the sender's display name so later events can name them as a peer."""
        if event.sender_name and event.sender_id not in self.display:
            self.display[event.sender_id] = event.sender_name
        self.add_known(self.name_of(event.sender_id))

    def introduce(self, sender_id: str, name: str) -> None:
        """The sender said their name; use it from now on."""
        self.learned[sender_id] = name
        self.add_known(name)

    def name_of(self, sender_id: str) -> str:
        """Best known name for a sender id."""
        return self.learned.get(sender_id) or self.given.get(sender_id) or self.display.get(sender_id) or sender_id

    def has(self, sender_id: str) -> bool:
        """True when the id is a sender we have a name for (not just a raw channel id)."""
        return sender_id in self.learned or sender_id in self.given or sender_id in self.display

    def peer_of(self, event: Event, previous_sender: str | None) -> str | None:
        """Who "you" is: the named peer_id, else (in a DM or unknown kind) the previous other speaker."""
        if (
            event.peer_id
            and event.peer_id != event.sender_id
            and (self.has(event.peer_id) or event.peer_kind in (None, "dm"))
        ):
            return self.name_of(event.peer_id)
        if event.peer_kind in (None, "dm") and previous_sender and previous_sender != event.sender_id:
            return self.name_of(previous_sender)
        return None

    def is_known(self, word: str) -> bool:
        """True for a known person name or the first token of one."""
        if word in self.known or word in self.first_tokens:
            return True
        # A nickname that starts a known first name ("Mel" for "Melanie").
        return (
            len(word) >= 3
            and word[:1].isupper()
            and any(first.startswith(word) and first != word for first in self.first_tokens)
        )


# ---------------------------------------------------------------------------------------------
# One event
# ---------------------------------------------------------------------------------------------


@dataclass
class _Statement:
    """A sentence or clause on its way to becoming a fact."""

    text: str  # original wording (interjections stripped), pronouns not yet resolved
    speaker: str  # name the first person resolves to
    is_photo: bool = False


@dataclass
class _Split:
    """Statements from one sentence, causal pairs among them (local indexes), and a link backwards."""

    statements: list[_Statement]
    pairs: list[tuple[int, int, float]] = field(default_factory=list)  # (cause, effect, strength)
    link_prev: float = 0.0  # >0: the previous statement of the event causes the first one here


def _extract_event(event: Event, names: _NameBook, peer: str | None, result: Extraction) -> None:
    """Append what one event says to `result`."""
    content = event.content or ""
    if is_ephemeral(content, names):
        result.skipped_events.append(event.id)
        return
    speaker = names.name_of(event.sender_id)
    intro_names = find_introductions(content)
    for intro in intro_names:
        result.introductions.append(NameIntroduction(intro, event.id))
    contacts = find_contacts(content, event.id)
    result.contacts.extend(contacts)

    text, captions = split_photos(content)
    splits: list[_Split] = []
    for sentence in split_sentences(text):
        rewritten = _rewrite_introduction(sentence, intro_names)
        cleaned = clean_sentence(rewritten, names)
        if cleaned and is_informative(cleaned, names):
            splits.append(_split_statement(supply_subject(cleaned), speaker))
        if rewritten != sentence:
            # The rest of the message speaks with the introduced name.
            speaker = intro_names[-1]
            names.introduce(event.sender_id, speaker)
    for caption in captions:
        splits.append(_Split([_Statement(photo_fact(caption, "I"), speaker, is_photo=True)]))

    produced = 0
    for split in splits:
        base = len(result.facts)
        for statement in split.statements:
            result.facts.append(build_fact(statement, event, names, peer, contacts))
        if split.link_prev and produced:
            result.causal.append(CausalPair(base - 1, base, split.link_prev))
        for cause, effect, strength in split.pairs:
            result.causal.append(CausalPair(base + cause, base + effect, strength))
        produced += len(split.statements)
    if not produced:
        result.skipped_events.append(event.id)


def _rewrite_introduction(sentence: str, intro_names: list[str]) -> str:
    """'Hey, I'm Marcus' -> 'Hey, my name is Marcus', so the fact reads '<handle>'s name is Marcus'."""
    if not intro_names:
        return sentence
    return INTRO_RE.sub(lambda m: f"my name is {m.group('name')}" if _intro_ok(m) else m.group(0), sentence)


def _split_statement(sentence: str, speaker: str) -> _Split:
    """A sentence as statements: a causal pair, else compound clauses; plus a causal link backwards."""
    link_strength = 0.0
    link = CAUSAL_LINK_PREV.match(sentence)
    if link and has_verb(sentence[link.end() :]):
        link_strength = 0.7
        sentence = _capitalise(sentence[link.end() :])
    pair = split_causal(sentence)
    if pair:
        cause, effect, strength, cause_first = pair
        if cause_first:
            return _Split([_Statement(cause, speaker), _Statement(effect, speaker)], [(0, 1, strength)], link_strength)
        return _Split([_Statement(effect, speaker), _Statement(cause, speaker)], [(1, 0, strength)], link_strength)
    return _Split([_Statement(clause, speaker) for clause in split_compound(sentence)], [], link_strength)


# ---------------------------------------------------------------------------------------------
# Steps (public so tests and the LLM writer can reuse them)
# ---------------------------------------------------------------------------------------------


def is_ephemeral(content: str, names: _NameBook | None = None) -> bool:
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


def clean_sentence(sentence: str, names: _NameBook | None = None) -> str:
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
    return _capitalise(text)


def strip_question_tag(sentence: str) -> str:
    """'Hard work pays off, right?' -> 'Hard work pays off.'; a real question is returned unchanged.

    A statement followed by a tag ("right?", "huh?", "how does that sound?") still states something;
    the part before the last comma is kept when it reads as a clause and not as a question.
    """
    head, comma, _tag = sentence.rpartition(",")
    if not comma:
        return sentence
    words = WORD_RE.findall(head.lower())
    if not words or words[0] in QUESTION_OPENERS or not _is_clause(head.strip()):
        return sentence
    return head.strip() + "."


def is_informative(sentence: str, names: _NameBook | None = None) -> bool:
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


def _starts_with_subject(clause: str) -> bool:
    """True when a clause opens like an independent one: a pronoun, determiner or capitalised name."""
    words = WORD_RE.findall(clause.replace("\u2019", "'"))
    if not words:
        return False
    first = words[0]
    return first.lower() in SUBJECT_WORDS or (first[0].isupper() and first not in NOT_NAMES)


def _is_clause(text: str) -> bool:
    """An independent clause: starts with a subject and has a verb, and is more than two words."""
    return len(WORD_RE.findall(text)) >= 3 and _starts_with_subject(text) and has_verb(text)


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
                    if _is_clause(last[: m.start()]) and _is_clause(last[m.end() :])
                ),
                None,
            )
            if not match:
                break
            pieces[-1:] = [last[: match.start()], last[match.end() :]]
        out.extend(pieces)
    return [_finish(_capitalise(p)) for p in out if p]


def split_causal(sentence: str) -> tuple[str, str, float, bool] | None:
    """(cause, effect, strength, cause_first) when a causal cue joins two clauses, else None.

    Conservative on purpose: both sides must be clauses (a verb each), so "because of the rain"
    or "caused by a leak" stay one fact without a pair.
    """
    for pattern, strength in CAUSAL_PREFIX:
        match = pattern.match(sentence)
        if match and has_verb(match.group("cause")) and _is_clause(match.group("effect")):
            return (
                _finish(_capitalise(match.group("cause"))),
                _finish(_capitalise(match.group("effect"))),
                strength,
                True,
            )
    for pattern, cause_side, strength in CAUSAL_INFIX:
        match = pattern.search(sentence)
        if not match:
            continue
        left, right = sentence[: match.start()].strip(), sentence[match.end() :].strip()
        if not (has_verb(left) and has_verb(right)) or len(WORD_RE.findall(right)) < 2:
            continue
        if not _starts_with_subject(right) and cause_side == "right":
            continue
        left, right = _finish(_capitalise(left)), _finish(_capitalise(right))
        if cause_side == "left":
            return left, right, strength, True
        return right, left, strength, False
    return None


def find_introductions(content: str) -> list[str]:
    """Names the sender gives for themselves ('I'm Marcus'); not 'I'm Happy' / 'I'm Going'."""
    return [m.group("name") for m in INTRO_RE.finditer(content) if _intro_ok(m)]


def _intro_ok(match: re.Match[str]) -> bool:
    """Reject introduction look-alikes: adjectives, verbs, nationalities, 'this is Paris', possessives."""
    if not INTRO_BEFORE_RE.search(match.string[max(0, match.start() - 8) : match.start()]):
        return False  # "what I'm Reading" mid-clause is not an introduction
    name = match.group("name")
    first = name.split()[0]
    if first.lower() in INTRO_STOP or first in NOT_NAMES or first in PLACES:
        return False
    cue = match.group("cue").lower().replace("\u2019", "'")
    rest = match.string[match.end() : match.end() + 3]
    if rest.startswith(("'s", "\u2019s")):
        return False
    if cue in ("this is", "it's"):
        # "This is Marcus" only opens a message (phone / voicemail style), and only with a comma/end after.
        return match.start() == 0 or match.string[: match.start()].strip().lower() in ("hi,", "hey,", "hello,")
    return True


def find_contacts(content: str, event_id: str) -> list[ContactStatement]:
    """Contact statements: 'my email is X', 'reach me at X', 'my Discord is X', "Sam's number is X"."""
    found: list[ContactStatement] = []
    for match in CONTACT_OWNED_RE.finditer(content):
        owner_word = match.group("owner")
        owner = "sender" if owner_word.lower() == "my" else re.sub(r"['\u2019]s$", "", owner_word)
        contact = _classify_contact(match.group("value"), match.group("kind").lower())
        if contact:
            found.append(ContactStatement(contact[0], contact[1], owner, event_id))
    for match in CONTACT_REACH_RE.finditer(content):
        contact = _classify_contact(match.group("value"), "")
        if contact:
            found.append(ContactStatement(contact[0], contact[1], "sender", event_id))
    unique: dict[tuple[str, str, str], ContactStatement] = {}
    for item in found:
        unique.setdefault((item.value, item.type, item.owner), item)
    return list(unique.values())


def _classify_contact(raw: str, kind: str) -> tuple[str, str] | None:
    """(value, type) for a stated contact value, or None when it does not look like one."""
    value = raw.strip().rstrip(".,;:!?)'\"")
    if email := EMAIL_RE.search(value):
        return email.group(0), "email"
    phone = PHONE_RE.search(value)
    digits = re.sub(r"\D", "", value)
    if phone or (7 <= len(digits) <= 15 and re.fullmatch(r"[+\d\s().-]+", value)):
        return (phone.group(0) if phone else value), "phone"
    if kind.startswith(("e-mail", "email", "phone", "number", "cell", "mobile")) or " " in value:
        return None
    handle = value.lstrip("@")
    if re.fullmatch(r"[A-Za-z0-9_.#-]{2,40}", handle) and handle.lower() not in STOPWORDS:
        if not kind and not (raw.startswith("@") or re.search(r"\d|_|#", handle)):
            return None  # "reach me at home" is not a handle
        return handle, "handle"
    return None


# ---------------------------------------------------------------------------------------------
# Facts
# ---------------------------------------------------------------------------------------------


def build_fact(
    statement: _Statement, event: Event, names: _NameBook, peer: str | None, contacts: Sequence[ContactStatement] = ()
) -> ExtractedFact:
    """Resolve pronouns and dates in a statement and tag its entities and derived kind.

    Contact values the sender stated about themself get the role 'contact_of_sender'.
    """
    kind = "fact" if statement.is_photo else classify_kind(statement.text)
    resolved, first_person = resolve_pronouns(statement.text, statement.speaker, peer)
    resolved, date_mentions = annotate_relative_dates(resolved, event.as_of)
    as_of, explicit = explicit_date(resolved, event.as_of)
    people = {statement.speaker, *(n for n in names.known if n)}
    if peer:
        people.add(peer)
    mentions_person = first_person or any(_contains_word(resolved, name) for name in people)
    if not mentions_person:
        resolved = f"{statement.speaker} said {_lower_first(resolved, names)}"
    entities = find_entities(resolved, names, speaker=statement.speaker, peer=peer)
    entities = _merge_mentions(entities, [EntityMention(d, "date") for d in [*date_mentions, *explicit]])
    own = {c.value for c in contacts if c.owner == "sender"}
    entities = [
        EntityMention(e.name, e.type, "contact_of_sender") if e.name.lstrip("@") in own else e for e in entities
    ]
    return ExtractedFact(
        text=_finish(resolved), source_event_id=event.id, as_of=as_of, entities=tuple(entities), kind=kind
    )


def classify_kind(sentence: str) -> str:
    """The derived event kind of a sentence by cue phrase, or 'fact'."""
    text = sentence.replace("\u2019", "'")
    for kind, pattern in KIND_CUES:
        if pattern.search(text):
            return kind
    return "fact"


# I/me/my/... and you/your/... with an optional contraction and the following word (for agreement).
PRONOUN_RE = re.compile(
    r"(?<![\w'\u2019-])(?P<pro>I|i(?![.\w])|[Mm]e|[Mm]y|[Mm]ine|[Mm]yself|[Yy]ou|[Yy]our|[Yy]ours|[Yy]ourself)"
    r"(?P<con>['\u2019](?:m|re|ve|ll|d|s))?(?![\w'\u2019-])"
    r"(?P<gap>\s+(?:(?:" + "|".join(sorted(ADVERBS)) + r")\s+)?)?(?P<next>[a-z]+(?:['\u2019]t)?)?"
)
# Generic or formulaic "you" that is not the addressee ("thank you", "you know", "see you").
GENERIC_YOU_BEFORE = re.compile(r"\b(?:thank|see|if|when|miss|bless|love|whenever|unless|mind)\s*$", re.IGNORECASE)
GENERIC_YOU_AFTER = re.compile(
    r"^\s*(?:know\b(?!\s+(?:that|how|what|about|i|my))|guys\b|all\b|both\b|two\b|"
    r"never know\b|too\b|later\b|soon\b)",
    re.IGNORECASE,
)


def resolve_pronouns(text: str, speaker: str, peer: str | None) -> tuple[str, bool]:
    """First person -> the speaker's name, second person -> the peer's name (when known).

    Returns (text, whether a first-person pronoun was resolved). Verb agreement is fixed for the
    common cases ("I am" -> "Ann is", "I love" -> "Ann loves", "you're" -> "Bo is").
    """
    used_first = False
    subject_seen: set[str] = set()

    def replace(match: re.Match[str]) -> str:
        nonlocal used_first
        pro = match.group("pro")
        low = pro.lower()
        con = (match.group("con") or "").replace("\u2019", "'").lower()
        gap = match.group("gap") or ""
        nxt = match.group("next") or ""
        first = low in ("i", "me", "my", "mine", "myself")
        if not first:
            before = match.string[: match.start()]
            after = match.string[match.end("pro") + len(match.group("con") or "") :]
            if peer is None or GENERIC_YOU_BEFORE.search(before) or GENERIC_YOU_AFTER.match(after):
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
        elif low in ("i", "you") and nxt:
            nxt = _agree(nxt.replace("\u2019", "'"), open_class=low == "i")
        return word + gap + nxt

    return PRONOUN_RE.sub(replace, text), used_first


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


def _fmt(day: date) -> str:
    """'7 May 2023'."""
    return f"{day.day} {MONTH_NAMES[day.month]} {day.year}"


def _month(day: date, delta: int) -> date:
    """The first of the month `delta` months from `day`."""
    index = day.year * 12 + day.month - 1 + delta
    return date(index // 12, index % 12 + 1, 1)


def _relative_day(phrase: str, today: date) -> tuple[str, str]:
    """Annotation and date entity for yesterday / today / tomorrow and friends."""
    low = phrase.lower()
    offset = (
        -2 if "before" in low else -1 if ("yesterday" in low or "last night" in low) else 1 if "tomorrow" in low else 0
    )
    day = today + timedelta(days=offset)
    return f"on {_fmt(day)}", _fmt(day)


def _relative_period(which: str, unit: str, today: date) -> tuple[str, str]:
    """Annotation and date entity for last/next/this week, weekend, month, year or season."""
    which = "last" if which == "past" else which
    step = {"last": -1, "next": 1, "this": 0}[which]
    if unit == "week":
        label = {"last": "the week before", "next": "the week after", "this": "the week of"}[which]
        return f"{label} {_fmt(today)}", _fmt(today + timedelta(days=7 * step))
    if unit == "weekend":
        saturday = today + timedelta(days=(5 - today.weekday()) % 7)  # coming (or current) Saturday
        if which == "last":
            saturday -= timedelta(days=7)
            if today.weekday() == 6:  # on a Sunday, "last weekend" is the one before this
                saturday -= timedelta(days=7)
        elif which == "next" and today.weekday() >= 5:
            saturday += timedelta(days=7)
        if today.weekday() == 6 and which == "this":
            saturday = today - timedelta(days=1)
        return f"the weekend of {_fmt(saturday)}", _fmt(saturday)
    if unit == "month":
        first = _month(today, step)
        return f"in {MONTH_NAMES[first.month]} {first.year}", f"{MONTH_NAMES[first.month]} {first.year}"
    if unit == "year":
        return f"in {today.year + step}", str(today.year + step)
    # seasons: say the year it refers to; the season word is already in the text
    return f"in {today.year + step}", str(today.year + step)


def _relative_weekday(which: str, day_name: str, today: date) -> tuple[str, str] | None:
    """Annotation for last/this/next/on <weekday>; 'on Friday' takes the nearest coming one."""
    target = WEEKDAYS.index(day_name.lower())
    if which.lower() in ("last", "past"):
        delta = (today.weekday() - target) % 7 or 7
        day = today - timedelta(days=delta)
    else:
        delta = (target - today.weekday()) % 7
        if which.lower() == "next" and delta == 0:
            delta = 7
        if which.lower() == "on" and delta == 0:
            return None  # "on Friday" said on a Friday: ambiguous, leave it
        day = today + timedelta(days=delta)
    return f"on {_fmt(day)}", _fmt(day)


def _relative_ago(count: str, unit: str, today: date) -> tuple[str, str]:
    """Annotation for 'N days/weeks/months/years ago'."""
    low = count.lower()
    vague = low in ("a few", "few", "several")
    n = 3 if vague else NUMBER_WORDS.get(low) or int(low)
    unit = unit.lower()
    if unit == "day":
        day = today - timedelta(days=n)
        return (f"a few days before {_fmt(today)}" if vague else f"on {_fmt(day)}"), _fmt(day)
    if unit == "week":
        day = today - timedelta(days=7 * n)
        return f"around {_fmt(day)}", _fmt(day)
    if unit == "month":
        first = _month(today, -n)
        return f"around {MONTH_NAMES[first.month]} {first.year}", f"{MONTH_NAMES[first.month]} {first.year}"
    return f"around {today.year - n}", str(today.year - n)


def annotate_relative_dates(text: str, as_of_ms: int) -> tuple[str, list[str]]:
    """Append '(on 7 May 2023)'-style dates after relative time phrases; return the date mentions."""
    if ANNOTATION_RE.search(text):
        return text, []
    today = datetime.fromtimestamp(as_of_ms / 1000, tz=UTC).date()
    spans: list[tuple[int, int, str, str]] = []

    def add(match: re.Match[str], resolved: tuple[str, str] | None) -> None:
        if resolved and not any(s < match.end() and match.start() < e for s, e, _, _ in spans):
            spans.append((match.start(), match.end(), resolved[0], resolved[1]))

    for match in RELATIVE_AGO_RE.finditer(text):
        add(match, _relative_ago(match.group("n"), match.group("unit"), today))
    for match in RELATIVE_WEEKDAY_RE.finditer(text):
        add(match, _relative_weekday(match.group("which"), match.group("day"), today))
    for match in RELATIVE_PERIOD_RE.finditer(text):
        add(match, _relative_period(match.group("which").lower(), match.group("unit").lower(), today))
    for match in RELATIVE_DAY_RE.finditer(text):
        add(match, _relative_day(match.group(0), today))
    if not spans:
        return text, []
    spans.sort()
    pieces, cursor, mentions = [], 0, []
    for _start, end, label, mention in spans:
        pieces.append(text[cursor:end])
        pieces.append(f" ({label})")
        cursor = end
        if mention not in mentions:
            mentions.append(mention)
    pieces.append(text[cursor:])
    return "".join(pieces), mentions


def _month_number(name: str) -> int | None:
    low = name.lower().rstrip(".")
    return MONTHS.get(low) or MONTH_ABBR.get(low)


def explicit_date(text: str, default_ms: int) -> tuple[int, list[str]]:
    """(as_of, date mentions): the first day-precise date stated in the text sets as_of (00:00 UTC).

    Dates this module appended itself (inside "(...)") do not count: they annotate relative phrases.
    A date without a year takes the event's year. Month-precise dates ("March 2024") only become
    date entities.
    """
    bare = ANNOTATION_RE.sub("", text)
    default_year = datetime.fromtimestamp(default_ms / 1000, tz=UTC).year
    found: list[tuple[int, date]] = []
    for pattern in (DATE_DMY_RE, DATE_MDY_RE, DATE_ISO_RE):
        for match in pattern.finditer(bare):
            month_raw = match.group("m")
            month = int(month_raw) if month_raw.isdigit() else _month_number(month_raw)
            if (
                month_raw == "May"
                and pattern is DATE_MDY_RE
                and not match.group("y")
                and re.match(r"\s+\d{1,2}\s+(?:am|pm|o'clock|minutes|hours)\b", bare[match.start() + 3 :])
            ):
                continue  # "May 5 minutes" style false positive
            year = int(match.group("y")) if match.group("y") else default_year
            try:
                found.append((match.start(), date(year, month or 0, int(match.group("d")))))
            except ValueError:
                continue
    mentions = [_fmt(d) for _, d in sorted(found)]
    for match in DATE_MY_RE.finditer(bare):
        label = f"{match.group('m')} {match.group('y')}"
        if not any(m.endswith(label) for m in mentions):
            mentions.append(label)
    if not found:
        return default_ms, _dedupe(mentions)
    first = min(found)[1]
    as_of = int(datetime(first.year, first.month, first.day, tzinfo=UTC).timestamp() * 1000)
    return as_of, _dedupe(mentions)


# ---------------------------------------------------------------------------------------------
# Entities
# ---------------------------------------------------------------------------------------------


def find_entities(
    text: str, names: _NameBook | None = None, *, speaker: str | None = None, peer: str | None = None
) -> list[EntityMention]:
    """Entities in a fact: regex literals (email, phone, url, handle) and capitalised names.

    Names: capitalised token sequences, skipping the first word of the sentence unless it is a known
    name, and skipping NOT_NAMES (pronouns, greetings, months, weekdays). Type by cue: organization
    suffix words, location words / gazetteer / a preceding 'in'/'from', known speakers and person cues
    -> person, other single words -> person, other sequences -> concept.
    """
    mentions: list[EntityMention] = []
    literal_spans: list[tuple[int, int]] = []
    for pattern, kind in ((EMAIL_RE, "email"), (URL_RE, "url"), (PHONE_RE, "phone"), (HANDLE_RE, "handle")):
        for match in pattern.finditer(text):
            if any(s <= match.start() < e for s, e in literal_spans):
                continue
            value = match.group(0).rstrip(".,;:!?)")
            literal_spans.append((match.start(), match.end()))
            mentions.append(EntityMention(value, kind))
    for start, name in _capitalised_sequences(text, names, literal_spans):
        kind = _classify_name(name, text[:start], names)
        role = "sender" if name == speaker else "peer" if name == peer else "mentioned"
        mentions.append(EntityMention(name, kind, role))
    if speaker and _contains_word(text, speaker) and not any(m.name == speaker for m in mentions):
        mentions.insert(0, EntityMention(speaker, "person", "sender"))
    return _merge_mentions(mentions, [])


def _capitalised_sequences(text: str, names: _NameBook | None, skip: list[tuple[int, int]]) -> list[tuple[int, str]]:
    """(start, name) for each capitalised token sequence that may be a name."""
    out: list[tuple[int, str]] = []
    for match in CAPSEQ_RE.finditer(text):
        if any(s <= match.start() < e for s, e in skip):
            continue
        tokens = match.group(0).split()
        start = match.start()
        sentence_start = start == 0 or bool(re.search(r"(?:^|[.!?:\"(]\s*)$", text[:start]))
        # Drop leading tokens that are not names (sentence-initial words, pronouns, months ...).
        while tokens and (
            tokens[0] in NOT_NAMES
            or tokens[0].lower() in STOPWORDS
            or (
                sentence_start
                and len(tokens) == 1
                and not (names and names.is_known(tokens[0]))
                and tokens[0] not in PLACES
            )
        ):
            start = text.find(tokens[1], start + len(tokens[0])) if len(tokens) > 1 else start
            tokens = tokens[1:]
            sentence_start = False
        while tokens and (tokens[-1] in NOT_NAMES or tokens[-1].lower() in {"of", "de", "the", "and", "for"}):
            tokens = tokens[:-1]
        if not tokens or (len(tokens[0]) < 2 and not tokens[0].isupper()):
            continue
        if len(tokens) == 1 and tokens[0].lower() in STOPWORDS | FILLER_WORDS:
            continue
        out.append((start, " ".join(tokens).rstrip(".")))
    return out


def _classify_name(name: str, before: str, names: _NameBook | None) -> str:
    """Entity type of a capitalised name from suffix / keyword cues and the word before it."""
    tokens = name.split()
    if any(t in ORG_WORDS for t in tokens[1:]) or tokens[0] in ("University", "Bank", "College"):
        return "organization"
    if name in PLACES or any(t in LOCATION_WORDS for t in tokens[1:]) or tokens[0] in ("Lake", "Mount", "Mt"):
        return "location"
    if tokens[0] in NATIONALITIES:
        return "concept"
    if names and (name in names.known or names.is_known(tokens[0])):
        return "person"
    previous = WORD_RE.findall(before.lower()[-30:])
    prev = previous[-1] if previous else ""
    if prev in PERSON_CUES and len(tokens) <= 3:
        return "person"
    if len(tokens) == 1 and prev in LOCATION_PREPOSITIONS and not tokens[0].isupper():
        return "location"
    # Anything else (brands, titles, acronyms, unknown single names) stays a concept: a wrong
    # 'person' would invite false merges with real people.
    return "concept"


def _merge_mentions(first: list[EntityMention], extra: list[EntityMention]) -> list[EntityMention]:
    """Mentions without duplicates (same name and type), first occurrence wins, order kept."""
    seen: set[tuple[str, str]] = set()
    out: list[EntityMention] = []
    for mention in [*first, *extra]:
        key = (mention.name.lower(), mention.type)
        if key not in seen:
            seen.add(key)
            out.append(mention)
    return out


def _dedupe(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


# ---------------------------------------------------------------------------------------------
# Small text helpers
# ---------------------------------------------------------------------------------------------


def _contains_word(text: str, word: str) -> bool:
    return bool(word) and re.search(rf"(?<![\w]){re.escape(word)}(?![\w])", text) is not None


def _capitalise(text: str) -> str:
    text = text.strip()
    return text[:1].upper() + text[1:] if text else text


def _lower_first(text: str, names: _NameBook | None = None) -> str:
    """Lower-case the first word unless it looks like a name: 'I', an acronym, a known name or place,
    or a word the same text capitalises again later (sentence-initial capitals are only orthography)."""
    words = WORD_RE.findall(text)
    if not words:
        return text
    first = words[0]
    keep = (
        first == "I"
        or first.startswith("I'")
        or (first.isupper() and len(first) > 1)
        or first in PLACES
        or (names is not None and names.is_known(first))
        or _contains_word(text[len(first) :], first)
    )
    return text if keep else text[:1].lower() + text[1:]


def _finish(text: str) -> str:
    """Trim and end with a full stop (facts read as sentences)."""
    text = text.strip().rstrip(",;:- ")
    if text and text[-1] not in ".!?\"')":
        text += "."
    return text
