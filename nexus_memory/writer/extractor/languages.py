"""Sentences the English rules cannot read: told apart from the text itself, and kept as said.

The extractor's rules (subjects, verbs, pronouns, relative dates, case) are English. Read on another
language they lose the sentence ("אני עוברת לתל אביב ..." has no word `WORD_RE` sees, so it is skipped as
chatter) or garble it ("Me mudo a Madrid" -> "Noa mudo a Madrid"). A sentence that is not English is kept
verbatim with its speaker instead (`quoted`): nothing the writer is told is lost, and recall finds it by
its own words. The test reads only the sentence: mostly words of another script, or Latin words of
which few are English function words (`STOPWORDS`) and several are another language's.
"""

from __future__ import annotations

import re
import unicodedata

from nexus_memory.core.words import word_set
from nexus_memory.writer.extractor.words import STOPWORDS

# A run of letters of any script with its apostrophes ("don't", "Zürich"): `WORD_RE` sees ASCII only.
LETTERS_RE = re.compile(r"[^\W\d_]+(?:['\u2019][^\W\d_]+)*")
# Scripts written without spaces between words: each character counts as a word (`_units`).
_UNSPACED = ("CJK", "HIRAGANA", "KATAKANA", "HALFWIDTH KATAKANA")
# Function words and the commonest everyday words (today, tomorrow, my sister, I am going) of the languages written
# in Latin letters (Spanish, French, German, Italian, Portuguese, Dutch, Polish, Czech, Indonesian, Turkish typed
# without its letters, Swedish), none of them an English word, a common abbreviation or a Slavic one-letter word
# ("me", "die", "son", "pour", "um", "et", "EU", "per", "ma", "till", "den", "met", "ale", "jam", "dan", "com",
# "hay", "dove", "ska", "w", "z" are left out): a sentence of another language says so by them, where English with
# few function words ("Family moments make life awesome") has none.
FOREIGN_FUNCTION_WORDS = word_set("""
el la los las una unos unas y del que en por para es está están estoy soy tu tus su yo pero porque como muy más
también se
le les une qui dans avec sont je il nous vous ils mes mais très aussi aux cette suis j'ai c'est
der das und oder ich du sie wir ihr mein meine nicht ist sind habe für von zu auf bei nach weil aber auch sehr
eine einen einem ein
che sono è mio perché anche molto nel
uma não meu minha você são estou muito
een ik jij hij zij wij niet voor maar ook zijn heb
mis ayer mañana voy vamos tengo tiene ella ellos nosotros nuestro esta este eso cuando casa
della alla nella sul oggi ieri domani vediamo vado siamo abbiamo questo questa gli lui sempre quando tuo suo
ele ela nós ao amanhã ontem vou nosso isso aqui também mês
avons chez soir demain hier elle leur ont était été frère habite depuis deux
jutro dziś wczoraj jestem jesteśmy moja mój który która się że jak nie bardzo mieszka jadę przyszłym tygodniu
jsem jsme jsou není můj moje zítra včera dnes taky také protože velmi sestra bratr který
saya aku kamu mereka kita kami akan ke bulan depan ini itu tidak sudah dengan untuk sangat juga tapi
karena hari besok pergi pindah makan malam rumah adik sekolah
ve bu bir ile icin sen siz onlar annem babam yarin aksam hafta yeni cok degil yok simdi bugun
nästa månad igår bror jobbar på och heter som är inte för vår skulle
kommer också mycket idag imorgon
naar mijn vriendin hebben gisteren bij gegeten broer werkt aan nieuwe volgende morgen
""")
LATIN_MIN_WORDS = 4  # fewer Latin words than this say too little to tell a language ("Gracias amigo!")
ENGLISH_SHARE_MIN = 0.5  # a Latin sentence with fewer English function words than this share may not be English
FOREIGN_MIN = 2  # ... and is not, when it has at least this many function words of another language
ACCENTED_SHARE_MIN = 0.5  # ... or when at least this share of its words have a letter outside ASCII ("Tôi sẽ chuyển")
# Controls and invisible format characters (zero-width space, BOM, bidi marks and overrides) hide in pasted
# text; the zero-width (non-)joiners are kept: Persian and Indic words and emoji sequences use them.
_KEPT_FORMAT = frozenset("\u200c\u200d")


def visible_text(text: str) -> str:
    """`text` without NUL, other controls (line breaks and tabs kept) and invisible format characters."""
    return "".join(c for c in text if c in "\n\t\r" or c in _KEPT_FORMAT or unicodedata.category(c) not in ("Cc", "Cf"))


def _latin(char: str) -> bool:
    return char.isascii() or unicodedata.name(char, "").startswith("LATIN")


def _units(sentence: str) -> tuple[list[str], int]:
    """The sentence's Latin words, and how many words of other scripts it has (a run of letters, or one
    character of a script without spaces: "我下个月" is four)."""
    latin: list[str] = []
    other = 0
    for run in LETTERS_RE.findall(sentence):
        if all(_latin(c) for c in run):
            latin.append(run)
            continue
        unspaced = sum(1 for c in run if unicodedata.name(c, "").startswith(_UNSPACED))
        other += unspaced + (1 if len(run) > unspaced else 0)
        latin += LETTERS_RE.findall("".join(c if _latin(c) else " " for c in run))
    return latin, other


def not_english(sentence: str) -> bool:
    """True when `sentence` is in another language: mostly words of another script, or at least
    `LATIN_MIN_WORDS` Latin words of which under `ENGLISH_SHARE_MIN` are English function words and at least
    `FOREIGN_MIN` (and more than the English ones) are function words of another language, or at least
    `ACCENTED_SHARE_MIN` of them have a letter outside ASCII (Vietnamese, Turkish, Polish ...). English with a
    foreign name or word ("We ate at Café Müller in Zürich", "Gracias for the help, Maria") stays English."""
    latin, other = _units(sentence)
    if other > len(latin):
        return True
    if other or len(latin) < LATIN_MIN_WORDS:
        return False
    words = [word.lower().replace("\u2019", "'") for word in latin]
    english = sum(1 for word in words if word in STOPWORDS)
    # A capitalised one inside the sentence is part of a name ("La Cocina del Mar", "Las Vegas"), not a function word.
    foreign = sum(
        1 for n, word in enumerate(words) if word in FOREIGN_FUNCTION_WORDS and (n == 0 or latin[n].islower())
    )
    accented = sum(1 for word in latin if not word.isascii())
    return english < ENGLISH_SHARE_MIN * len(words) and (
        foreign >= max(FOREIGN_MIN, english + 1) or accented >= ACCENTED_SHARE_MIN * len(words)
    )


# Greetings of the scripts without spaces, which a count of words cannot find: "你好！", "こんにちは".
UNSPACED_GREETINGS = word_set("""
你好 您好 大家好 早上好 早安 晚上好 晚安 嗨 哈囉 こんにちは こんばんは おはよう おはようございます もしもし
""")


def worth_keeping(sentence: str) -> bool:
    """Whether a sentence in another language holds something to keep: a letter or a digit, and more than one
    word ("Привет!" and "שלום" are one), where a run of a script without spaces ("我搬家了") may be a whole
    sentence unless it is a greeting ("你好")."""
    runs = LETTERS_RE.findall(sentence)
    if not any(c.isalnum() for c in sentence):
        return False
    if len(runs) != 1 or any(c.isdigit() for c in sentence):
        return True
    word = runs[0]
    unspaced = all(unicodedata.name(c, "").startswith(_UNSPACED) for c in word)
    return unspaced and word not in UNSPACED_GREETINGS


def quoted(sentence: str, speaker: str) -> str:
    """A sentence in another language as the fact keeps it: verbatim, with who said it."""
    return f'{speaker} said: "{sentence.strip()}"'
