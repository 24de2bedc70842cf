"""The block prefilter where Hyperscan is absent (macOS, Windows, an aarch64 wheel missing): RE2.

One RE2 set says which patterns occur anywhere in a block (a DFA pass, tens of MB/s); only those
patterns are then searched, each with its own RE2 program, for where they occur. RE2 takes no
lookarounds, backreferences or possessive quantifiers, so each pattern is first widened (those
parts dropped or loosened): like Hyperscan's prefilter mode, it may report a line the exact
regex then rejects, never miss one. Patterns RE2 still refuses go to `regex` (prefilter.py).
Without the google-re2 package (or with DIAGNOSE_NO_RE2 set), `build` returns None and every pattern
goes to `regex`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from diagnose.artifacts.prefilter import LEADING_FLAGS

LOOKAROUND = ("(?=", "(?!", "(?<=", "(?<!")


def widen(pattern: str) -> str:
    """`pattern` as RE2 takes it (multi-line, run with never_nl: no match crosses a line end, as
    none does when each line is matched alone), matching at least what it matched.

    >>> widen(r"(?i)(?<!ValueError: )unknown model[ _](?P<t>\\w++)(?!x)$")
    '(?mi)unknown model[ _](?P<t>\\\\w+)$'
    """
    flags = "m"
    m = LEADING_FLAGS.match(pattern)
    if m:
        pattern, flags = pattern[m.end():], "m" + "".join(f for f in m[1] if f in "is")
    out, i, depth_skip = [], 0, 0
    in_class = False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            nxt = pattern[i : i + 2]
            if not depth_skip:
                out.append(nxt)
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        elif c == "(" and not depth_skip and pattern.startswith(LOOKAROUND, i):
            depth_skip = 1
            i += 3 if pattern[i + 2] in "=!" else 4
            continue
        elif depth_skip and c == "(":
            depth_skip += 1
        elif depth_skip and c == ")":
            depth_skip -= 1
            i += 1
            continue
        elif c in "+*?}" and pattern[i + 1 : i + 2] == "+" and not depth_skip:  # possessive: greedy
            out.append(c)
            i += 2
            continue
        elif pattern.startswith("(?P=", i) and not depth_skip:  # a backreference: any text
            close = pattern.find(")", i)
            out.append(".*?")
            i = close + 1 if close > 0 else len(pattern)
            continue
        if not depth_skip:
            out.append(c)
        i += 1
    body = "".join(out)
    return f"(?{flags}){body}"


def build(patterns: list[str]) -> tuple[Any, list[int]] | None:
    """(the RE2 set and each usable pattern's own RE2 program, the ids RE2 refuses), or None."""
    if os.environ.get("DIAGNOSE_NO_RE2"):
        return None
    try:
        import re2
    except ImportError:
        return None
    options = re2.Options()
    options.max_mem = 256 << 20
    options.log_errors = False
    options.never_nl = True
    rset = re2.Set.SearchSet(options)
    programs: list[tuple[int, Any]] = []
    refused: list[int] = []
    for pid, pattern in enumerate(patterns):
        try:
            wide = widen(pattern).encode("utf-8")
            program = re2.compile(wide, options)
            rset.Add(wide)
        except Exception:  # noqa: BLE001 - RE2 refuses it: `regex` checks it instead
            refused.append(pid)
            continue
        programs.append((pid, program))
    rset.Compile()
    return (rset, programs), refused


def hits(built: Any, block: bytes) -> Iterator[tuple[int, int]]:
    """(match end offset in `block`, pattern id) for every place a pattern may match."""
    rset, programs = built
    for index in rset.Match(block) or ():
        pid, program = programs[index]
        for m in program.finditer(block):
            yield m.end(), pid
