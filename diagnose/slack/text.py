"""Slack's message text back to what the person pasted, before it is diagnosed.

Slack sends `&`, `<`, `>` as `&amp;`, `&lt;`, `&gt;`, and wraps what it linked in angle brackets:
`<https://x.io|x.io>`, `<mailto:a@b.c|a@b.c>`, `<@U123>`, `<#C1|general>`, `<!here>`. Links become
their label, mentions are dropped, and the entities are undone last (so `&amp;lt;` stays `&lt;`).

>>> unescape("ImportError: Using `low_cpu_mem_usage=True` requires `accelerate&gt;=0.26.0`")
'ImportError: Using `low_cpu_mem_usage=True` requires `accelerate>=0.26.0`'
>>> unescape("<@U0BOT> see <https://pypi.org/x|pypi.org/x> &amp;lt;b&amp;gt; <mailto:a@b.io|a@b.io>")
'see pypi.org/x &lt;b&gt; a@b.io'
"""

from __future__ import annotations

import re
from typing import Any

from diagnose import lazy_re

ANGLE = lazy_re.compile(r"<([^<>\s|]*)(?:\|([^<>]*))?>")
ENTITIES = (("&lt;", "<"), ("&gt;", ">"), ("&amp;", "&"))


def unescape(text: str) -> str:
    def token(m: re.Match[str]) -> str:
        target, label = m[1], m[2]
        if target.startswith(("@", "!", "#")):
            return "" if target.startswith(("@", "!")) else f"#{label or target[1:]}"
        if label is not None:
            return label
        return target.removeprefix("mailto:")

    out = ANGLE.sub(token, text)
    for entity, char in ENTITIES:
        out = out.replace(entity, char)
    return out.strip()


def message_text(message: dict[str, Any]) -> str:
    """The text a person typed or pasted (files are read apart), unescaped."""
    return unescape(message.get("text") or "")
