"""Mask secrets and identities before a diagnosis leaves the machine.

Tokens (Hugging Face, OpenAI-style, Slack, GitHub, AWS, JWT, bearer headers, `password=...`),
IP addresses, host names, e-mail addresses and user names (home paths, `user@host`) become
numbered masks; one Redactor gives the same value the same mask (`<ip-1>`, `<host-2>`,
`<user-1>`, `<token-1>`). What a reader needs stays: versions (2.9.1.post1, `==12.4.5.8`), PCI
bus ids (0000:3b:00.0), Python module and file names, loopback addresses, and the public hosts
that fixes and references point at (github.com, pytorch.org, huggingface.co, ...).

>>> r = Redactor()
>>> r.redact("alice@gpu-07:~$ HF_TOKEN=hf_aBcDeFgHiJkLmNoPqRsTuVwXyZ01234567 python /home/alice/serve.py")
'<user-1>@<host-1>:~$ HF_TOKEN=<token-1> python /home/<user-1>/serve.py'
>>> r.redact("connect to 10.0.0.5:29500 failed; torch==2.9.1.post1 nvidia-cublas-cu12==12.4.5.8")
'connect to <ip-1>:29500 failed; torch==2.9.1.post1 nvidia-cublas-cu12==12.4.5.8'
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from typing import Any, TypeVar

from diagnose import lazy_re, record
from diagnose.redact_patterns import GENERIC_NAMES, PATTERNS, SECRET_KEY, Pattern, is_public

T = TypeVar("T")
URL_HOST = lazy_re.compile(r"https?://([A-Za-z0-9.-]+)")
PROPAGATE_MIN = 4  # a learned user or host name this long is masked wherever it stands alone


class Redactor:
    """Masks in one output: call `redact` on every string (or `redact_diagnosis` once)."""

    def __init__(self, public_hosts: frozenset[str] = frozenset(), extra: list[Pattern] | None = None) -> None:
        self.public_hosts = public_hosts  # beyond the built-in list: the hosts of the KB's references
        self.patterns = [*(extra or []), *PATTERNS]  # a team's own (redact_team.py) first
        self.masks: dict[tuple[str, str], str] = {}
        self.counts: dict[str, int] = {}
        self.known: dict[str, str] = {}  # user and host names seen in structured places -> mask
        self._known_re: tuple[int, re.Pattern[str] | None] = (0, None)
        self._seen: dict[str, str] = {}  # text -> text with the patterns applied (masks are stable)

    def mask(self, kind: str, value: str) -> str:
        key = (kind, value.lower() if kind in ("host", "email") else value)
        if key not in self.masks:
            self.counts[kind] = self.counts.get(kind, 0) + 1
            self.masks[key] = f"<{kind}-{self.counts[kind]}>"
        mask = self.masks[key]
        if kind in ("user", "host") and len(value) >= PROPAGATE_MIN and value.lower() not in GENERIC_NAMES:
            self.known.setdefault(value, mask)
        return mask

    def redact(self, text: str) -> str:
        masked = self._seen.get(text)
        if masked is None:
            masked = text
            lower = text.lower()
            for pattern in self.patterns:
                if pattern.hint and not any(h in lower for h in pattern.hint):
                    continue
                masked = pattern.regex.sub(lambda m, p=pattern: self._replace(m, p.keep), masked)  # type: ignore[misc]
            self._seen[text] = masked
        return self._propagate(masked)

    def _replace(self, m: re.Match[str], keep: Callable[[re.Match[str], str], bool] | None) -> str:
        out, pos, base = [], m.start(), m.string
        for kind, value in m.groupdict().items():
            if value is None or (keep is not None and keep(m, kind)):
                continue
            if kind == "host" and self.public_hosts and is_public(value, self.public_hosts):
                continue
            start, end = m.span(kind)
            out.append(base[pos:start])
            out.append(self.mask(kind.rstrip("_0123456789"), value))
            pos = end
        out.append(base[pos : m.end()])
        return "".join(out)

    def _propagate(self, text: str) -> str:
        if not self.known:
            return text
        if self._known_re[0] != len(self.known):
            names = sorted(self.known, key=len, reverse=True)
            alternation = "|".join(re.escape(n) for n in names)
            self._known_re = (len(self.known), re.compile(rf"(?<![\w.<-])(?:{alternation})(?![\w>-])"))
        pattern = self._known_re[1]
        assert pattern is not None
        return pattern.sub(lambda m: self.known[m[0]], text)

    def redact_diagnosis(self, diagnosis: T) -> T:
        """A copy with every string masked; two passes so that a name learned late is masked early too."""
        _walk(diagnosis, self)
        return _walk(diagnosis, self)  # type: ignore[no-any-return]


def redact_diagnosis(diagnosis: T) -> T:
    """The diagnosis with every string masked, consistently within it. The hosts of the findings'
    references and `verified_by` are the KB's own words, public by construction: they stay."""
    from diagnose.redact_team import configured  # redact-domains / -patterns: config files, environment

    hosts = frozenset(_reference_hosts(getattr(diagnosis, "findings", [])))
    return Redactor(public_hosts=hosts, extra=configured()).redact_diagnosis(diagnosis)


def _reference_hosts(findings: list[Any]) -> set[str]:
    hosts: set[str] = set()
    for finding in findings:
        for text in [*finding.references, *finding.verified_by]:
            hosts.update(h.lower() for h in URL_HOST.findall(text))
        hosts |= _reference_hosts(finding.symptoms)
    return hosts


def _walk(value: Any, r: Redactor) -> Any:
    if isinstance(value, str):
        return r.redact(value)
    if isinstance(value, list):
        return [_walk(v, r) for v in value]
    if isinstance(value, tuple):
        return tuple(_walk(v, r) for v in value)
    if isinstance(value, dict):
        return {k: _secret_value(k, v, r) if SECRET_KEY.search(str(k)) else _walk(v, r) for k, v in value.items()}
    if record.is_record(value) and not isinstance(value, type):  # the diagnosis's own types (diagnose.model)
        changes = {f.name: _walk(getattr(value, f.name), r) for f in record.fields(value)}
        if changes.get("template") and isinstance(changes.get("text"), str):
            changes["template"] = _template(changes["text"])
        return record.replace(value, **changes)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {f.name: _walk(getattr(value, f.name), r) for f in dataclasses.fields(value) if f.init}
        return dataclasses.replace(value, **changes)
    return value


def _template(text: str) -> str | None:
    """An unmatched line's template is derived from its text (digits masked, letters kept), so a
    token would show through it: derive it again from the redacted text."""
    try:
        from diagnose.engine.fingerprint import template
    except ImportError:
        return None
    return template(text)


def _secret_value(key: object, value: Any, r: Redactor) -> Any:
    """An environment variable named like a secret (HF_TOKEN, OPENAI_API_KEY): its whole value."""
    if not isinstance(value, str) or not value.strip() or value.startswith("<") or value in ("None", "null"):
        return _walk(value, r)
    masked = r.redact(value)
    return masked if masked != value else r.mask("secret", value)

