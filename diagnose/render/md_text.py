r"""Markdown quoting for the post-mortem: what came from the inputs stays text on every renderer.

>>> code("a `b` | c", cell=True)
'``a `b` \\| c``'
>>> prose("pin <built_torch> with `pip install x<2`")
'pin &lt;built_torch&gt; with `pip install x<2`'
"""

from __future__ import annotations

import re

from diagnose import lazy_re
from diagnose.model import Evidence

MAX_QUOTE = 1000  # characters of one quoted line
MAX_CELL = 200  # characters of a log line in a table cell
CODE_SPAN = lazy_re.compile(r"(`+)(.+?)\1")


def code(text: str, cell: bool = False) -> str:
    """An inline code span that holds any text (backticks included); `cell` escapes pipes for a table."""
    text = " ".join(text.split())
    ticks = "`" * (max((len(t) for t in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text else ""
    span = f"{ticks}{pad}{text}{pad}{ticks}"
    return span.replace("|", "\\|") if cell else span


def fence(lines: list[str], lang: str = "") -> list[str]:
    body = "\n".join(lines)
    longest = max((len(t) for t in re.findall(r"`{3,}", body)), default=2)
    ticks = "`" * (longest + 1)
    return [ticks + lang, *body.split("\n"), ticks]


def prose(text: str) -> str:
    """KB text as Markdown: its code spans kept, `<`, `>` and `&` outside them escaped (GitHub would
    take `<built_torch>` for an HTML tag and drop it)."""
    out, pos = [], 0
    for m in CODE_SPAN.finditer(text):
        out.append(_html_escape(text[pos : m.start()]))
        out.append(m[0])
        pos = m.end()
    out.append(_html_escape(text[pos:]))
    return "".join(out)


def cell(text: str) -> str:
    return prose(" ".join(text.split())).replace("|", "\\|")


def _html_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _where(e: Evidence) -> str:
    return f"{e.source}:{e.line}" if e.line else e.source


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + f"… ({len(text) - limit + 1} characters cut)"
