"""A team's own redaction: its internal domains and patterns, on top of the built-in ones.

`DIAGNOSE_REDACT_DOMAINS` is a comma-separated list of domains (`corp.acme.io,acme.internal`): any host
in them becomes `<host-N>`, even one the built-in rules would leave. `DIAGNOSE_REDACT_PATTERNS` names a
file of regular expressions, one a line (`#` starts a comment); what each matches becomes
`<team-N>` (or, with a named group, what the group matches, masked as that group's name). A config
file's `redact-domains`, `redact-patterns` and `redact-patterns-file` say the same (diagnose/settings.py).

>>> from diagnose.redact import Redactor
>>> r = Redactor(extra=team_patterns(["acme.internal"], [r"TICKET-\\d+"]))
>>> r.redact("pulled from registry.acme.internal for TICKET-4412")
'pulled from <host-1> for <team-1>'
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from diagnose.errors import DiagnoseError
from diagnose.redact_patterns import LABEL, Pattern

DOMAINS_ENV = "DIAGNOSE_REDACT_DOMAINS"
PATTERNS_ENV = "DIAGNOSE_REDACT_PATTERNS"


def team_patterns(domains: Iterable[str], regexes: Iterable[str], what: str = PATTERNS_ENV) -> list[Pattern]:
    out = []
    names = [d.strip().strip(".").lower() for d in domains if d.strip().strip(".")]
    if names:
        alternation = "|".join(re.escape(d) for d in sorted(names, key=len, reverse=True))
        out.append(Pattern(re.compile(rf"(?i)(?<![\w.-])(?P<host>(?:{LABEL}\.)*(?:{alternation}))(?![\w-]|\.[\w-])")))
    for text in regexes:
        try:
            compiled = re.compile(text)
        except re.error as exc:
            raise DiagnoseError(f"{what}: bad pattern {text!r}: {exc}") from None
        if not compiled.groupindex:
            compiled = re.compile(f"(?P<team>{text})")
        out.append(Pattern(compiled))
    return out


def from_env(environ: Mapping[str, str] = os.environ) -> list[Pattern]:
    """The team's patterns as the environment names them (none when it names none)."""
    domains = [d for d in (environ.get(DOMAINS_ENV) or "").split(",") if d.strip()]
    regexes: list[str] = []
    path = (environ.get(PATTERNS_ENV) or "").strip()
    if path:
        regexes = _pattern_file(path, PATTERNS_ENV)
    return team_patterns(domains, regexes)


def configured() -> list[Pattern]:
    """The team's patterns as the settings give them: config files, then the environment (settings.py)."""
    from diagnose.settings import current

    settings = current()
    out = team_patterns(settings.get("redact-domains"), settings.get("redact-patterns"),
                        settings.source("redact-patterns"))
    path = settings.get("redact-patterns-file")
    if path:
        what = settings.source("redact-patterns-file")
        out += team_patterns((), _pattern_file(path, what), what)
    return out


def _pattern_file(path: str, what: str) -> list[str]:
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise DiagnoseError(f"{what}: cannot read {path}: {exc.strerror or exc}") from None
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]
