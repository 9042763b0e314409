"""Nothing lost: a sentence in another language is kept as said, with its speaker, and recall finds it."""

from __future__ import annotations

import json

import pytest

from nexus_memory.core.stores import Stores
from nexus_memory.episodes.grouping import build_episodes
from nexus_memory.events.ledger import RawRecord, ingest
from nexus_memory.recall import recall
from nexus_memory.writer.extractor import extract, split_sentences
from nexus_memory.writer.extractor.languages import not_english
from nexus_memory.writer.offline_writer import OfflineWriter
from nexus_memory.writer.run import process_partition
from tests.test_offline_extractor import event, texts

HEBREW = "אני עוברת לתל אביב בחודש הבא בגלל העבודה החדשה שלי"
SPANISH = "Me mudo a Madrid el mes que viene por mi nuevo trabajo en el banco."
CHINESE = "我下个月要搬到上海，因为我在银行找到了新工作。"
GERMAN = "Ich ziehe nächsten Monat nach Berlin, weil ich eine neue Stelle bei der Bank habe."
JAPANESE = "来月、新しい仕事のために東京に引っ越します。"
ARABIC = "سأنتقل إلى دبي الشهر المقبل بسبب عملي الجديد في البنك."
RUSSIAN = "В следующем месяце я переезжаю в Москву из-за новой работы в банке."
HINDI = "मैं अगले महीने नई नौकरी के लिए दिल्ली जा रहा हूँ।"
ENGLISH = "I am moving to Boston next month for my new job at the bank."


VIETNAMESE = "Tôi sẽ chuyển đến Hà Nội vào tháng tới."
FRENCH = "Je suis très content de mon nouveau travail."


@pytest.mark.parametrize(
    "said", [HEBREW, SPANISH, CHINESE, GERMAN, JAPANESE, ARABIC, RUSSIAN, HINDI, VIETNAMESE, FRENCH, "我搬家了"]
)
def test_a_sentence_in_another_language_is_kept_verbatim_with_its_speaker(said: str) -> None:
    (fact,) = extract([event(said)]).facts
    assert fact.text == f'Caroline said: "{said}"'  # no "Me" -> "Caroline", no "Ich" -> "ich"
    assert fact.about is None  # "el mes que viene" / "next month" in another language: no English date reading
    assert [(m.name, m.role) for m in fact.entities] == [("Caroline", "sender")]  # not "Monat", "Stelle"


def test_english_is_read_by_the_english_rules_as_before() -> None:
    (fact,) = extract([event(ENGLISH)]).facts
    assert fact.text == "Caroline is moving to Boston next month (in June 2023) for Caroline's new job at the bank."
    assert fact.about is not None


@pytest.mark.parametrize(
    ("said", "fact"),
    [
        ("We ate at Café Müller in Zürich", "Caroline said we ate at Café Müller in Zürich."),
        ("Gracias for the help, Maria", "Caroline said gracias for the help, Maria."),
        ("I love 北京 so much, the food was great.", None),
        ("Loved Las Vegas, crazy weekend.", None),
        ("I'll bring the cake from Fournée", None),
        ("Dinner at El Tapatío and La Cocina del Mar", None),
    ],
)
def test_english_with_a_foreign_word_or_name_stays_english(said: str, fact: str | None) -> None:
    assert not not_english(said)
    facts = texts(extract([event(said)]))
    assert not any('said: "' in text for text in facts)
    if fact:
        assert facts == [fact]


def test_a_mixed_message_keeps_each_sentence_by_its_own_rule() -> None:
    facts = texts(extract([event(f"I got the job at the bank! {SPANISH}")]))
    assert facts == ["Caroline got the job at the bank.", f'Caroline said: "{SPANISH}"']


def test_sentences_end_at_the_marks_of_their_script() -> None:
    # Chinese and Japanese need no space after 。！？; Hindi ends a sentence with a danda, Arabic asks with ؟.
    assert split_sentences("我搬到上海了。我在银行工作！你呢？") == ["我搬到上海了。", "我在银行工作！", "你呢？"]
    assert split_sentences("「東京に行きます。」明日です。") == ["「東京に行きます。」", "明日です。"]
    assert split_sentences(f"{HINDI} मुझे बैंक में नौकरी मिली।") == [HINDI, "मुझे बैंक में नौकरी मिली।"]
    assert split_sentences("هل أنت في دبي؟ أنا في البنك.") == ["هل أنت في دبي؟", "أنا في البنك."]
    facts = texts(extract([event("我搬到上海了。我在银行工作！")]))
    assert facts == ['Caroline said: "我搬到上海了。"', 'Caroline said: "我在银行工作！"']


@pytest.mark.parametrize("said", ["🎉🎉🙌", "שלום!", "你好！", "Привет!", "こんにちは", "…!?", "Hola amigo!"])
def test_emoji_bare_greetings_and_punctuation_give_no_fact(said: str) -> None:
    extraction = extract([event(said)])
    assert extraction.facts == [] and extraction.skipped_events == ["e1"]


def test_invisible_characters_are_dropped_from_the_fact_text() -> None:
    hidden = "\u200f" + HEBREW.replace(" ", " \u200b", 2) + "\x00"
    assert texts(extract([event(hidden)])) == [f'Caroline said: "{HEBREW}"']
    assert texts(extract([event("I moved to Bos\u200bton last y\u202eear\x00.")])) == [
        "Caroline moved to Boston last year (in 2022)."
    ]


def test_recall_finds_each_kept_sentence_by_words_of_its_own_language(stores: Stores) -> None:
    records = []
    for n, said in enumerate([HEBREW, SPANISH, CHINESE, GERMAN, RUSSIAN, ENGLISH + "\u200b"]):
        record = {
            "id": f"m{n}",
            "platform": "sms",
            "sender_id": "+15550100",
            "sender_name": "Noa",
            "thread_id": "t1",
            "content": said,
            "as_of": f"2025-03-03T16:0{n}:00Z",
        }
        records.append(RawRecord("test", n + 1, record, json.dumps(record)))
    ingest(stores, records)
    build_episodes(stores, "2025-03-03", "sms")
    process_partition(stores, "2025-03-03", "sms", OfflineWriter())
    assert stores.conn.execute("SELECT count(*) FROM facts").fetchone()[0] == 6
    ledger = {r[0] for r in stores.conn.execute("SELECT content FROM events")}
    assert ENGLISH + "\u200b" in ledger  # the ledger keeps what was delivered
    # Keyword search: words of a spaced script are tokens; a CJK run between punctuation is one FTS5 token,
    # so Chinese is found by that whole run, not by a word inside it (docs/writer.md).
    for query, said in [
        ("תל אביב", HEBREW),
        ("Madrid trabajo", SPANISH),
        ("Stelle Berlin", GERMAN),
        ("Москву", RUSSIAN),
        ("我下个月要搬到上海", CHINESE),
    ]:
        found = [r.text for r in recall(stores, query, touch=False).results]
        assert found[:1] == [f'Noa said: "{said}"'], query


# Languages in Latin letters the first word lists missed: read as English, they were garbled ("Vamos a la playa con
# mis amigos" lost its speaker's words to pronoun rewriting) or dropped as chatter ("Ci vediamo domani sera").
MORE_LATIN = [
    "Vamos a la playa con mis amigos",  # Spanish
    "Ci vediamo domani sera",  # Italian
    "Jutro jadę do Krakowa z rodziną",  # Polish
    "Saya akan pindah ke Jakarta bulan depan",  # Indonesian
    "Annem ve babam bu aksam geliyor",  # Turkish typed without its letters
    "Jag ska flytta till Stockholm nästa månad",  # Swedish
    "Můj bratr pracuje v bance",  # Czech
    "Volgende week begin ik aan een nieuwe baan",  # Dutch
]


@pytest.mark.parametrize("said", MORE_LATIN)
def test_more_latin_languages_are_kept_verbatim_with_their_speaker(said: str) -> None:
    assert not_english(said)
    (fact,) = extract([event(said)]).facts
    assert fact.text == f'Caroline said: "{said}"'
    assert fact.about is None


@pytest.mark.parametrize(
    "said",
    [
        "Farm trip: hay rides, dove nests, ska band",  # English words the lists leave out, with no function word
        "Tests green per spec, con list done",
        "Mia and Dia went to the CI meeting at Ada's place",  # names and abbreviations
        "Yo, the game was great",
    ],
)
def test_english_words_that_are_foreign_words_elsewhere_stay_english(said: str) -> None:
    assert not not_english(said)
