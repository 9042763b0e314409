"""Delivered handles (the sender_id a platform delivered a message from): their kind, their lossless key,
and whether some other text is shaped like one.

A delivered handle is the only identity evidence a platform vouches for, so two different delivered
strings must never become one by normalisation. `delivery_key` therefore changes only what cannot
change the destination: the letter case of an ASCII email domain and the punctuation of an ASCII phone
number. Everything else stays exactly as delivered (no Unicode case folding, no NFKC, no stripping of
invisible characters), so 'priya\\u212a#2211' (KELVIN SIGN) and 'priyak#2211' stay two handles.
"""

from __future__ import annotations

import functools
import re
import string
import unicodedata

# Shapes, for the entity type of a handle (Unicode letters and digits allowed, as platforms deliver them).
EMAIL_RE = re.compile(r"^[\w.+-]+@[\w-]+(\.[\w-]+)+$")
PHONE_RE = re.compile(r"^\+?[\d\s().-]{7,}$")
# A phone number written only with ASCII digits and separators: the one form whose punctuation can go.
ASCII_PHONE_RE = re.compile(r"\+?[0-9 ().-]{7,}", re.ASCII)
# Other handle shapes a display name may imitate: '@name', 'name#1234' (Discord's old tags).
TAGGED_HANDLE_RE = re.compile(r"^@\S+$|^\S+#\d{2,}$")
# An email address anywhere in a text (a display name written as a whole From line).
EMAIL_IN_TEXT_RE = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
# Bidi embeddings, overrides and isolates (they reorder the letters after them when shown), and invisible
# characters that no name needs (zero-width space, word joiner, BOM, soft hyphen). Not the zero-width
# (non-)joiners: Persian names and emoji sequences use them.
HIDING_RE = re.compile("[\u202a-\u202e\u2066-\u2069\u200b\u2060-\u2064\ufeff\u00ad\u180e]")
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


def handle_type(platform: str, handle: str) -> str:
    """Entity type for a raw sender handle: 'email', 'phone', or '<platform>_handle'."""
    if EMAIL_RE.match(handle.strip()):
        return "email"
    if PHONE_RE.match(handle.strip()):
        return "phone"
    return f"{platform}_handle"


def delivery_key(kind: str, handle: str) -> str:
    """The key under which two deliveries of one platform come from the same sender; lossless per kind.

    - email: the local part exactly as delivered (it may be case-sensitive), '@', the domain with its
      ASCII letters lower-cased (DNS names are case-insensitive in ASCII);
    - phone: '+' (when given) and the digits, for a number written only in ASCII digits, spaces and
      '().-'; any other phone-like string is kept exactly;
    - any other handle: exactly as delivered.
    """
    if kind == "email" and "@" in handle:
        local, _, domain = handle.rpartition("@")
        return f"{local}@{domain.translate(_ASCII_LOWER)}"
    if kind == "phone" and ASCII_PHONE_RE.fullmatch(handle):
        digits = re.sub(r"[^0-9]", "", handle)
        return "+" + digits if handle.startswith("+") else digits
    return handle


def looks_like_handle(text: str) -> bool:
    """True for text shaped like a handle: an email address, a phone number, '@name' or 'name#1234'."""
    text = text.strip()
    return bool(EMAIL_RE.match(text) or PHONE_RE.match(text) or TAGGED_HANDLE_RE.match(text))


@functools.lru_cache(maxsize=65536)  # asked for every message's sender, the same few pairs again and again
def names_another_handle(display_name: str, handle: str) -> bool:
    """True when a display name is shaped like a handle other than the sender's own one.

    Such a name ('anna.new@northwind.example' shown by mallory@evil.example, a phone number as a
    WhatsApp name) is an impersonation attempt or at best noise: it never names the sender, and it
    never becomes a lookup alias. The sender's own handle as its display name is harmless.
    """
    display_name, handle = display_name.strip(), handle.strip()
    if display_name == handle:
        return False
    if looks_like_handle(display_name):
        return True
    # 'Priya Kapoor <priya.k@example.com>' from mallory@evil.example: a From line naming another address.
    return any(address.lower() != handle.lower() for address in EMAIL_IN_TEXT_RE.findall(display_name))


@functools.lru_cache(maxsize=65536)
def shows_other_letters(display_name: str) -> bool:
    """True when a display name would show other letters than it holds, whoever it imitates: bidi
    controls reorder it ('\u202eroopaK ayirP' shows as 'Priya Kapoor'), invisible characters hide in it,
    or a word mixes Latin letters with look-alikes from elsewhere ('K\u0430poor', a Cyrillic a; 'Ｐriya').
    Such a name never names its sender: the handle does. Names wholly in one script are left alone."""
    if HIDING_RE.search(display_name):
        return True
    for word in display_name.split():
        letters = [c for c in word if c.isalpha()]
        latin = any(unicodedata.name(c, "").startswith("LATIN ") for c in letters)
        if latin and any(_imitates_latin(c) for c in letters):
            return True
    return False


def _imitates_latin(char: str) -> bool:
    """A letter that is not Latin but is drawn as one (Cyrillic а, Greek ο, full-width Ｐ, KELVIN SIGN)."""
    return not unicodedata.name(char, "").startswith("LATIN ") and look_alike_key(char).isascii()


# Latin letters' look-alikes in Cyrillic and Greek (the ones fonts draw the same), for `look_alike_key`.
_LOOK_ALIKES = str.maketrans(
    "авекмнорстухіјѕһԁԛԝАВЕКМНОРСТУХІЈЅαορικνυΑΒΕΖΗΙΚΜΝΟΡΤΥΧ",
    "aBeKMHopcTyxijshdqwABEKMHOPCTYXIJSaopikvuABEZHIKMNOPTYX",
)


def look_alike_key(text: str) -> str:
    """`text` as a reader sees it: compatibility forms (full-width, KELVIN SIGN) made plain, invisible
    characters (zero-width, bidi marks, soft hyphen) dropped, Cyrillic and Greek look-alikes made Latin.

    Only ever used to refuse a name that looks like one already taken (identity.store.display_name):
    never to make two handles or two names one, which stays the lossless `delivery_key`'s job.
    """
    plain = unicodedata.normalize("NFKC", text)
    return "".join(c for c in plain if unicodedata.category(c) != "Cf").translate(_LOOK_ALIKES)
