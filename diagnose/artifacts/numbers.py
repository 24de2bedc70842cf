"""Numbers read from text that anyone may have written: total, bounded.

`str.isdigit()` is true for '²' and '①', which `int()` refuses, and `int()` refuses more than
4,300 digits; a parser reads every number through `to_int` instead.

>>> to_int("42"), to_int(" 7 "), to_int("²"), to_int("①"), to_int("9" * 5000), to_int(None), to_int("-3")
(42, 7, None, None, None, None, None)
"""

from __future__ import annotations

MAX_DIGITS = 18  # an index, a size in MiB, a count: never longer; longer is not a number we read


def to_int(text: str | None) -> int | None:
    """The non-negative integer `text` spells in ASCII digits, or None."""
    if text is None:
        return None
    text = text.strip()
    if not text or len(text) > MAX_DIGITS or not (text.isascii() and text.isdigit()):
        return None
    return int(text)
