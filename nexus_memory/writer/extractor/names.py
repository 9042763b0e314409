"""Who is who in a batch of events: sender ids to the names facts use, and the set of known names."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping

from nexus_memory.events.ledger import Event
from nexus_memory.identity.handles import names_another_handle

_WORD_RE = re.compile(r"[A-Za-z][A-Za-z'\u2019-]*")
# What comes before the first word of a sentence: the start, an end of sentence, a line break, a colon.
_SENTENCE_START_RE = re.compile(r"(?:^|[.!?:\n]\W*)\s*$")


# Articles and demonstratives, after which a lower-case word is a noun ("the bill", "a rose"): no sign that the
# same word opening a sentence is not a name. After a possessive it is a thing someone has ("my fingers").
_NOUN_BEFORE = frozenset({"a", "an", "the", "this", "that", "these", "those", "some", "any", "every", "each", "no"})


@functools.lru_cache(maxsize=8192)  # a thread's context is read again for each of its episodes
def _words(content: str) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """The words a text writes in lower case, those it capitalises inside a sentence, and those it writes in
    lower case other than right after a determiner."""
    lower: set[str] = set()
    inner: set[str] = set()
    bare: set[str] = set()
    after_word = 0
    previous = ""
    for match in _WORD_RE.finditer(content):
        word = match.group(0)
        if word.islower():
            lower.add(word)
            if previous.lower() not in _NOUN_BEFORE:
                bare.add(word)
        # Only the text since the last word can end a sentence (a word holds no stop and ends a run of
        # \W), so that is all that is searched: searching the whole text before each word was quadratic.
        elif word[:1].isupper() and not _SENTENCE_START_RE.search(content, after_word, match.start()):
            inner.add(word)
        after_word = match.end()
        previous = word
    return frozenset(lower), frozenset(inner), frozenset(bare)


class NameBook:
    """Who is who in this batch: sender_id -> display name, plus the set of known person names."""

    def __init__(self, given: Mapping[str, str], addressees: Mapping[str, str] | None = None) -> None:
        self.given = dict(given)
        self.addressees = dict(addressees or {})  # peer_id -> name, for peers that send nothing here
        self.display: dict[str, str] = {}  # from event.sender_name
        self.known: set[str] = set()
        self.first_tokens: set[str] = set()  # first word of each known name ("Ann" of "Ann Lee")
        self.nicknames: set[str] = set()  # what starts a first word, 3+ letters, not all of it ("Mel" of "Melanie")
        self.lower_words: set[str] = set()  # words the batch writes in lower case somewhere ("launch")
        self.inner_capitals: set[str] = set()  # words the batch capitalises inside a sentence ("Kestrel")
        # Lower-case words not right after a determiner ("launch slipped", not "the bill"): a common word used
        # as one, so the same word opening a sentence is no name ("Launch slipped" vs "Bill paid the bill").
        self.bare_lower_words: set[str] = set()
        for name in given.values():
            self.add_known(name)

    def add_known(self, name: str) -> None:
        """Remember a person name (and its first word) as known."""
        if name:
            self.known.add(name)
            first = name.split()[0]
            if first not in self.first_tokens:
                self.first_tokens.add(first)
                self.nicknames.update(first[:end] for end in range(3, len(first)))

    def learn_event(self, event: Event) -> None:
        """Remember the sender's display name so later events can name them as a peer.

        A display name shaped like another handle ('anna@example.com' shown by someone else's
        address) is an impersonation attempt, never a name.
        """
        name = event.sender_name
        if name and event.sender_id not in self.display and not names_another_handle(name, event.sender_id):
            self.display[event.sender_id] = name
        self.add_known(self.name_of(event.sender_id))
        lower, inner, bare = _words(event.content or "")
        self.lower_words |= lower
        self.inner_capitals |= inner
        self.bare_lower_words |= bare

    def full_name(self, word: str) -> str:
        """The one known name a first name stands for ("Sam" -> "Sam Rivera"), else the word itself."""
        full = [name for name in self.known if name.split()[0] == word and name != word]
        return full[0] if len(full) == 1 and word not in self.known else word

    def name_of(self, sender_id: str) -> str:
        """Best known name for a sender (or addressee) id."""
        return self.given.get(sender_id) or self.display.get(sender_id) or self.addressees.get(sender_id) or sender_id

    def has(self, sender_id: str) -> bool:
        """True when the id is a sender we have a name for (not just a raw channel id)."""
        return sender_id in self.given or sender_id in self.display

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
        return len(word) >= 3 and word[:1].isupper() and word in self.nicknames
