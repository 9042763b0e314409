"""The rule-based extractor: facts, entities, causal pairs, contacts and introductions without an LLM.

It is the offline writer's engine (`nexus_memory/writer/offline_writer.py`), the writer's fallback and
its fast path for backfills: deterministic, pure Python + `re`, no network. It follows the writer
contract (docs/writer.md) as far as rules can: atomic facts as standalone sentences (first person
resolved to the sender's name), entities with roles, conservative causal links ("false causal links
are worse than missing ones"), conversational contact discovery and real-name introductions. Derived
event kinds (decision, action_item, commitment, preference_stated, correction) are found by cue phrases.

Pipeline for one event (`facts.extract`), and the module that does each step:

1. read the message by its structure: header lines, a quoted reply, a signature, a disclaimer and a
   forwarded message are not the sender's words; hard-wrapped lines are joined (`structure`);
2. skip ephemeral chatter ("ok", "lol", emoji only, greetings only): `sentences`;
3. pull out a shared photo ("[shares a photo: caption]") as its own fact: `sentences`;
4. find contact statements and introductions in the sender's text, and contacts in the signature, whose
   other lines become one fact about the sender: `contacts`, `introductions`;
5. split into sentences and clauses at "; ", drop questions (keeping what a statement-ordered question or
   the statement before a tag or a dashed question states) and what is no fact (filler, pleasantries, thanks,
   errands of the moment, verbless replies, requests of the moment but not advice to make sure of something,
   bare praise, and wishes, offers, exhortations and reactions: `remarks`), strip leading interjections,
   greetings, thanks before a clause and vocatives (the one a vocative calls is "you"), and put back a dropped
   subject ("Went hiking." -> "I went hiking."): `sentences`; a verbless first reply to the other speaker's
   question (a wh-question, or one for any one thing: "Any favorite movies?") is kept with the question
   ('Asked "What are Mel's pets' names?", Mel answered: Luna and Oliver.'), and so is a yes or a no to a yes/no
   question ('Asked "Is that Mel's third one?", Mel answered: Yes.');
6. name he/she/him/her when exactly one person of the episode is meant (`antecedents`), then split each
   sentence on a causal cue (cause + effect facts and a `CausalPair`): `causal`; otherwise on ", and " /
   ", but " when both sides are clauses (subject-like start and a verb): `sentences`;
7. resolve I/me/my to the sender and you/your to the peer (`pronouns`, with names from `names`),
   annotate relative dates with the explicit date and read the time the fact is about (`dates`: a fact's `as_of`
   is when its message was sent, its `about` the first to last day its text names, relative or explicit), tag
   entities (`entities`, `literals`) and the derived kind (`kinds`). A statement that names no person
   after resolution is attributed: "<sender> said ...".

A sentence in another language (`languages`) skips steps 5-7: it is kept verbatim with its speaker
('Noa said: "..."'). The word lists live in `words`, the result types in `results`. Everything here is heuristic
and English-only; the LLM writer is the quality path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nexus_memory.core.lazy import lazy_attributes

if TYPE_CHECKING:
    from nexus_memory.writer.extractor.contacts import find_contacts
    from nexus_memory.writer.extractor.dates import DatedText, annotate_relative_dates, explicit_dates, read_dates
    from nexus_memory.writer.extractor.entities import find_entities
    from nexus_memory.writer.extractor.facts import extract, questions_put
    from nexus_memory.writer.extractor.introductions import find_introductions
    from nexus_memory.writer.extractor.kinds import classify_kind
    from nexus_memory.writer.extractor.results import (
        CausalPair,
        ContactStatement,
        EntityMention,
        ExtractedFact,
        Extraction,
        NameIntroduction,
    )
    from nexus_memory.writer.extractor.sentences import split_compound, split_sentences

__all__ = [
    "CausalPair",
    "ContactStatement",
    "DatedText",
    "EntityMention",
    "ExtractedFact",
    "Extraction",
    "NameIntroduction",
    "annotate_relative_dates",
    "classify_kind",
    "explicit_dates",
    "extract",
    "find_contacts",
    "find_entities",
    "find_introductions",
    "questions_put",
    "read_dates",
    "split_compound",
    "split_sentences",
]

# Loaded on first use: observations and recall read one date helper (extractor.dates), and a cold `context`
# should not import every extractor module for it.
_HOMES = {
    "CausalPair": "nexus_memory.writer.extractor.results",
    "ContactStatement": "nexus_memory.writer.extractor.results",
    "DatedText": "nexus_memory.writer.extractor.dates",
    "EntityMention": "nexus_memory.writer.extractor.results",
    "ExtractedFact": "nexus_memory.writer.extractor.results",
    "Extraction": "nexus_memory.writer.extractor.results",
    "NameIntroduction": "nexus_memory.writer.extractor.results",
    "annotate_relative_dates": "nexus_memory.writer.extractor.dates",
    "classify_kind": "nexus_memory.writer.extractor.kinds",
    "explicit_dates": "nexus_memory.writer.extractor.dates",
    "extract": "nexus_memory.writer.extractor.facts",
    "find_contacts": "nexus_memory.writer.extractor.contacts",
    "find_entities": "nexus_memory.writer.extractor.entities",
    "find_introductions": "nexus_memory.writer.extractor.introductions",
    "questions_put": "nexus_memory.writer.extractor.facts",
    "read_dates": "nexus_memory.writer.extractor.dates",
    "split_compound": "nexus_memory.writer.extractor.sentences",
    "split_sentences": "nexus_memory.writer.extractor.sentences",
}

__getattr__ = lazy_attributes(__name__, _HOMES)
