"""Literal contact values found by pattern: email addresses, phone numbers, URLs and @handles."""

from __future__ import annotations

import re

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
