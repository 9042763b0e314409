"""He/she/him/her named where the episode says who, kept as said with its speaker where it does not (issue 22).

Each case is a class of sentence: the antecedent in an earlier clause of the same sentence, in an earlier
sentence of the message, in the other speaker's turn before, a person met ("a little girl") or given a name
("Her name's Coco"); and the cases where no one person is meant: two of the right kind, the wrong kind, no one.
"""

from __future__ import annotations

from nexus_memory.bench.facts import junk_kind
from nexus_memory.events.ledger import Event
from nexus_memory.writer.extractor import extract

MAY_8 = 1683554160000  # 2023-05-08 13:56 UTC


def conversation(*turns: str) -> list[str]:
    """The facts of a John-Maria conversation, John first, one turn a minute apart."""
    events = [
        Event(
            id=f"e{i}",
            platform="test",
            sender_id=("John", "Maria")[i % 2],
            content=text,
            as_of=MAY_8 + 60_000 * i,
            peer_id=("Maria", "John")[i % 2],
            peer_kind="dm",
        )
        for i, text in enumerate(turns)
    ]
    return [f.text for f in extract(events).facts]


def fact_with(facts: list[str], word: str) -> str:
    found = [f for f in facts if word in f]
    assert len(found) == 1, (word, facts)
    return found[0]


# --- one person of the right kind: named ------------------------------------------------------------------


def test_an_earlier_clause_of_the_same_sentence_names_the_pronoun_of_a_clause_split_off() -> None:
    facts = conversation("My aunt helped my family when we were struggling, so I'm inspired by her.")
    assert "John is inspired by John's aunt." in facts


def test_an_object_her_before_a_bare_verb_is_no_possessive() -> None:
    facts = conversation("My cousin had a tough time, so I'm helping her find a new place.")
    assert fact_with(facts, "helping") == "John is helping John's cousin find a new place."


def test_a_person_word_and_the_name_after_it_are_one_person() -> None:
    facts = conversation("At the event I talked with someone named David. Hearing his story was so humbling.")
    assert any("David's story" in f for f in facts), facts
    facts = conversation("I met this amazing woman, Jean, who had been through a lot. She showed me what gratitude is.")
    assert any(f.startswith("Jean showed John") for f in facts), facts


def test_the_other_speakers_question_passes_the_person_on() -> None:
    facts = conversation(
        "My cousin just had a tough time, so I'm lending a hand.",
        "That's nice of you. How is she doing now?",
        "She's making progress, but she is still stressed.",
    )
    assert "John's cousin is making progress." in facts
    assert "John's cousin is still stressed." in facts  # the clause split off keeps the person


def test_a_name_given_to_someone_is_whom_a_later_pronoun_means() -> None:
    facts = conversation(
        "I got a puppy two weeks ago! Her name is Coco.", "Coco looks so cute! She seems so happy in that photo."
    )
    assert "Maria said Coco seems so happy in that photo." in facts
    # the sentence that gives the name still says whose words it is
    assert any(f.startswith("John said her name") for f in facts), facts


def test_someone_met_is_the_person_a_later_pronoun_means() -> None:
    facts = conversation("I noticed a little girl sitting all alone. She seemed so sad, so I sat with her.")
    assert "John said the girl seemed so sad." in facts
    assert "John sat with the girl." in facts


def test_what_the_text_says_of_gender_rules_a_person_out() -> None:
    facts = conversation("My dad and my sister visited. She brought a cake.")
    assert "John's sister brought a cake." in facts


def test_a_title_after_a_determiner_is_no_one_and_the_look_back_goes_on() -> None:
    facts = conversation("My brother Dev came over. We watched this Finals game. He was thrilled.")
    assert "Dev was thrilled." in facts


# --- no one person, or no need: kept as said, with its speaker ---------------------------------------------


def test_two_people_of_the_right_kind_are_never_guessed_between() -> None:
    facts = conversation("My dad and my brother came over. He brought a cake.")
    assert fact_with(facts, "cake") == "John said he brought a cake."
    facts = conversation("My friend Tiago and my brother Dev came over. He brought a cake.")
    assert fact_with(facts, "cake") == "John said he brought a cake."


def test_a_person_of_the_other_gender_is_never_the_antecedent() -> None:
    facts = conversation("My sister called. He said the flight was late.")
    assert fact_with(facts, "flight") == "John said he said the flight was late."


def test_a_pronoun_with_no_one_named_before_is_kept_with_its_speaker() -> None:
    facts = conversation("I think she's calling tomorrow.")
    assert any("she" in f and "John" in f for f in facts), facts


def test_a_question_word_is_no_person() -> None:
    facts = conversation("How is she doing?", "She's doing better.")
    assert any(f.startswith("Maria said she") for f in facts), facts


def test_inside_one_clause_the_sentence_already_stands_alone() -> None:
    facts = conversation("My dad sold his car.")
    assert facts == ["John's dad sold his car."]


# --- a name that is also a function word -------------------------------------------------------------------


def test_a_known_person_called_will_keeps_the_capital_before_a_verb() -> None:
    event = Event(
        id="e1", platform="t", sender_id="Ann", content="Will is coming tomorrow. Will you come?", as_of=MAY_8
    )
    other = Event(
        id="e0", platform="t", sender_id="w1", sender_name="Will Turner", content="Hi Ann.", as_of=MAY_8 - 60_000
    )
    facts = [f.text for f in extract([event], context=[other]).facts]
    assert any("Will is coming tomorrow" in f for f in facts), facts
    facts = [f.text for f in extract([event]).facts]  # no one called Will: a modal, lowered after "X said"
    assert not any("Will is coming" in f for f in facts), facts


# --- `bench facts`' own checker: a pronoun is junk only with no one in the fact to point to --------------------


def test_the_junk_checker_reads_a_person_word_in_the_fact_as_the_pronouns_antecedent() -> None:
    assert junk_kind("John shared a photo of a woman with her hands on her hips.", "John") is None
    assert junk_kind("John said the girl seemed so sad, so he sat with her.", "John") is None
    assert junk_kind("John said she's calling tomorrow.", "John") == "pronoun"
    assert junk_kind("John said his voice and songs were amazing.", "John") == "pronoun"
