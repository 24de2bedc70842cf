"""The keys of a diagnose config file, their environment variables, and how each is checked.

A value of the wrong kind, an unknown key (with the nearest known one), a rules directory that is not
there or a regular expression that does not compile is one line naming the file and the key.

>>> from pathlib import Path
>>> check_file({"format": "json", "redact-domains": "acme.internal"}, Path("/srv/diagnose.toml"), "diagnose.toml")
{'format': 'json', 'redact-domains': ['acme.internal']}
>>> check_file({"formt": "json"}, Path("/srv/diagnose.toml"), "diagnose.toml")
Traceback (most recent call last):
...
diagnose.errors.DiagnoseError: diagnose.toml: unknown key 'formt' (did you mean 'format'?)
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from diagnose.errors import DiagnoseError

FORMATS = ("text", "json", "markdown", "slack", "html", "svg")  # as the command line's --format


@dataclass(frozen=True)
class Key:
    """One setting: its kind, its environment variable, its help text and default."""

    kind: str  # "dirs" | "strings" | "regexes" | "file" | "python" | "format"
    env: str
    help: str
    default: Any = None


KEYS: dict[str, Key] = {
    "extra-rules": Key("dirs", "DIAGNOSE_EXTRA_RULES", "a team's own rules directories, added to the built-in KB "
                       "(like --rules; the variable separates them with ':')", ()),
    "redact-domains": Key("strings", "DIAGNOSE_REDACT_DOMAINS", "domains whose hosts --redact masks "
                          "(the variable separates them with ',')", ()),
    "redact-patterns": Key("regexes", "DIAGNOSE_REDACT_REGEXES", "regular expressions --redact masks "
                           "(a named group masks only that group; the variable takes one)", ()),
    "redact-patterns-file": Key("file", "DIAGNOSE_REDACT_PATTERNS", "a file of such regular expressions, one a line"),
    "python": Key("python", "DIAGNOSE_PYTHON", "the default --python of preflight, verify and collect"),
    "format": Key("format", "DIAGNOSE_FORMAT", "the default --format (text, json, markdown, slack, html, svg)", "text"),
}


def _strings(value: Any, what: str) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise DiagnoseError(f"{what}: expected a string or a list of strings, got {type(value).__name__}")


def check(key: str, value: Any, base: Path | None, what: str) -> Any:
    """`value` as the settings hold it; paths relative to `base` (a file's folder; None: the cwd)."""
    kind = KEYS[key].kind
    where = f"{what}: {key}"

    def path(text: str) -> Path:
        p = Path(os.path.expanduser(text))
        return p if p.is_absolute() or base is None else base / p

    if kind in ("file", "python", "format") and not isinstance(value, str):
        raise DiagnoseError(f"{where}: expected a string, got {type(value).__name__}")
    if kind == "format":
        if value not in FORMATS:
            raise DiagnoseError(f"{where}: {value!r} is not one of {', '.join(FORMATS)}")
        return value
    if kind == "python":  # a path (with a slash) is relative to the file; a bare name is looked up on PATH
        return str(path(value)) if "/" in value or os.sep in value else value
    if kind == "file":
        found = path(value)
        if not found.is_file():
            raise DiagnoseError(f"{where}: {found}: no such file")
        return str(found)
    items = _strings(value, where)
    if kind == "dirs":
        dirs = [path(v) for v in items]
        for d in dirs:
            if not d.is_dir():
                raise DiagnoseError(f"{where}: {d}: not a directory")
        return [str(d) for d in dirs]
    if kind == "regexes":
        for text in items:
            try:
                re.compile(text)
            except re.error as exc:
                raise DiagnoseError(f"{where}: bad regular expression {text!r}: {exc}") from None
        return items
    return [s.strip() for s in items if s.strip()]


def check_file(table: Mapping[str, Any], path: Path, what: str) -> dict[str, Any]:
    out = {}
    for key, value in table.items():
        if key not in KEYS:
            import difflib

            near = difflib.get_close_matches(key, list(KEYS), n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else f" (known: {', '.join(KEYS)})"
            raise DiagnoseError(f"{what}: unknown key {key!r}{hint}")
        out[key] = check(key, value, path.parent, what)
    return out


def from_environment(environ: Mapping[str, str]) -> dict[str, Any]:
    out = {}
    for key, spec in KEYS.items():
        raw = environ.get(spec.env, "").strip()
        if not raw:
            continue
        value: Any = raw
        if spec.kind == "dirs":
            value = [p for p in raw.split(os.pathsep) if p]
        elif spec.kind == "strings":
            value = raw.split(",")
        out[key] = check(key, value, None, spec.env)
    return out
