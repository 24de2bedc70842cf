"""A stable name for an error line no rule knows, so the same unknown failure is recognised again.

The template masks what changes between runs of the same failure: numbers, hex addresses,
paths, IP addresses, ranks, tensor shapes, quoted identifiers of processes and hosts.

>>> template("[rank3]: RuntimeError: CUDA error at /opt/x/kernel.cu:88 (0x7f3a2c): shape [4, 2048]")
'[rank<n>]: RuntimeError: CUDA error at <path>:<n> (<hex>): shape <shape>'
>>> fingerprint("worker 12 failed at 10.0.0.7:29500") == fingerprint("worker 3 failed at 10.0.0.9:29501")
True
"""

from __future__ import annotations

import regex

from diagnose import lazy_re

# compiled on first use: a run whose every error line a finding explains never needs them
MASKS = [
    (lazy_re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", regex.I, module=regex), "<uuid>"),
    (lazy_re.compile(r"\b0x[0-9a-f]+\b", regex.I, module=regex), "<hex>"),
    (lazy_re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}\b", module=regex), "<ip>"),
    (lazy_re.compile(r"(?:[A-Za-z]:)?(?:[\\/][\w.@+~-]+){2,}[\\/]?", module=regex), "<path>"),
    (lazy_re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?", module=regex), "<time>"),
    (lazy_re.compile(r"\d+(?:\.\d+)?", module=regex), "<n>"),
    (lazy_re.compile(r"[\[(]<n>(?:,\s*<n>)+[\])]", module=regex), "<shape>"),
]


def template(text: str) -> str:
    out = text.strip()
    for pattern, mask in MASKS:
        out = pattern.sub(mask, out)
    return out


def digest(template_text: str) -> str:
    import hashlib  # here: OpenSSL's load is start-up time a run without an unexplained line never needs

    return hashlib.sha1(template_text.encode()).hexdigest()[:12]


def fingerprint(text: str) -> str:
    return digest(template(text))


def regex_of(template_text: str) -> str:
    """A signal regex that matches every line with this template."""
    out = regex.escape(template_text, special_only=True)
    for mask, pattern in (
        ("<uuid>", r"[0-9a-fA-F-]{36}"),
        ("<hex>", r"0x[0-9a-fA-F]+"),
        ("<ip>", r"\d{1,3}(?:\.\d{1,3}){3}"),
        ("<path>", r"\S+"),
        ("<time>", r"\S+(?: \S+)?"),
        ("<shape>", r"[\[(][\d, ]+[\])]"),
        ("<n>", r"\d+(?:\.\d+)?"),
    ):
        out = out.replace(regex.escape(mask, special_only=True), pattern)
    return out
