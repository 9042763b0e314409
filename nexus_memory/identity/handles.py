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

# Shapes, for the entity type of a handle (Unicode letters and digits allowed, as platforms deliver them).
EMAIL_RE = re.compile(r"^[\w.+-]+@[\w-]+(\.[\w-]+)+$")
PHONE_RE = re.compile(r"^\+?[\d\s().-]{7,}$")
# A phone number written only with ASCII digits and separators: the one form whose punctuation can go.
ASCII_PHONE_RE = re.compile(r"\+?[0-9 ().-]{7,}", re.ASCII)
# Other handle shapes a display name may imitate: '@name', 'name#1234' (Discord's old tags).
TAGGED_HANDLE_RE = re.compile(r"^@\S+$|^\S+#\d{2,}$")
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
    display_name = display_name.strip()
    if display_name == handle.strip():
        return False
    return looks_like_handle(display_name)
