"""Patterns compiled on first use, not at import.

A module-level ``NAME = lazy_re.compile(r"...")`` costs nothing until NAME is first used; the first use
compiles it with the module given (``re`` by default, ``regex`` where a pattern needs it) and binds the
compiled pattern's methods on the object, so later calls cost what the compiled pattern's own do. A small
crash log runs a few of the module-level patterns the parsers define; compiling all of them at start-up
was a third of the time to import `diagnose.api`.

Every pattern defined here, and every signal of the KB, also keeps its compiled form between runs, in the
compiled-KB cache (`precompile` when the cache is written, `use_compiled` when it is read), so a run restores
the few patterns it uses instead of compiling them (about 15 us each against 0.3 to 1.5 ms: compiling them was
a third of a small crash log's run). `regex` pickles a pattern as its compiled code, and unpickling one skips
the parser; for `re`, whose pickle compiles again, the store keeps what `re`'s compiler hands to `_sre.compile`
(checked against `_sre.MAGIC`; `_sre.compile` validates the code it is given). The KB cache is keyed by the
versions of Python and `regex`, so a stored pattern is always one this interpreter and this `regex` wrote; a
pattern not stored, or one that does not load, is compiled as before.
"""

from __future__ import annotations

import _sre  # re's own engine, loaded with re anyway
import pickle
import re
from typing import Any

_BOUND = ("search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split", "pattern", "flags",
          "groups", "groupindex")

Key = tuple[str, Any, int]  # ("re" or "regex", pattern, flags)
_stored: dict[Key, bytes] = {}  # compiled forms from the KB cache (use_compiled)
_code_patterns: list[Key] = []  # the code's own patterns (`compile`, `remember`): precompile stores them


def _re_parts(pattern: Any, flags: int) -> tuple[Any, ...]:
    """What `re`'s compiler passes to `_sre.compile` after `pattern` (the parse and the code)."""
    try:
        from re import _compiler, _parser  # type: ignore[attr-defined]  # Python 3.11 and later
    except ImportError:  # pragma: no cover - Python 3.10
        import sre_compile as _compiler  # type: ignore[no-redef]
        import sre_parse as _parser  # type: ignore[no-redef]
    parsed = _parser.parse(pattern, flags)
    code = [int(op) for op in _compiler._code(parsed, flags)]  # plain ints: the opcodes are int subclasses
    state = parsed.state
    names = [None] * state.groups
    for name, index in state.groupdict.items():
        names[index] = name
    return (_sre.MAGIC, flags | state.flags, code, state.groups - 1, dict(state.groupdict), tuple(names))


def _restore(key: Key) -> Any:
    blob = _stored.get(key)
    if blob is None:
        return None
    try:
        if key[0] == "regex":
            return pickle.loads(blob)
        magic, *parts = pickle.loads(blob)
        return _sre.compile(key[1], *parts) if magic == _sre.MAGIC else None
    except Exception:  # noqa: BLE001 - a stored form that does not load is compiled anew
        return None


def re_compile(pattern: Any, flags: int = 0) -> Any:
    """`re.compile(pattern, flags)`, restored from the KB cache where it has the pattern."""
    got = _restore(("re", pattern, int(flags)))
    return got if got is not None else re.compile(pattern, flags)


def regex_compile(pattern: Any, flags: int = 0) -> Any:
    """`regex.compile(pattern, flags)`, restored from the KB cache where it has the pattern."""
    got = _restore(("regex", pattern, int(flags)))
    if got is not None:
        return got
    import regex

    return regex.compile(pattern, flags)


def remember(pattern: Any, flags: int = 0, module: Any = re) -> None:
    """A pattern the code compiles with `re_compile` / `regex_compile` (not `compile`): stored with the KB too."""
    _code_patterns.append(("re" if module is re else "regex", pattern, int(flags)))


def use_compiled(store: dict[Key, bytes]) -> None:
    """Patterns compiled when the KB cache was written (its `patterns`), for a run to restore."""
    global _stored
    if not _stored:
        _stored = store  # the KB's own dict, not a copy (read only here)
    elif store is not _stored:
        _stored = {**_stored, **store}


def precompile(signals: list[Any], derived: list[Key] | None = None) -> dict[Key, bytes]:
    """Each signal pattern (`regex`, flags 0), each of `derived` (patterns the code builds from the signals) and
    each of the code's own patterns, compiled and kept in a form a later run loads without compiling. A pattern
    that does not compile is left out (it fails where it is used, as it would have)."""
    import regex

    store: dict[Key, bytes] = {}
    for key in [("regex", p, 0) for p in signals] + list(derived or []) + _code_patterns:
        if key in store:
            continue
        kind, pattern, flags = key
        try:
            if kind == "regex":
                store[key] = pickle.dumps(regex.compile(pattern, flags), protocol=pickle.HIGHEST_PROTOCOL)
                continue
            parts = _re_parts(pattern, flags)
            restored = _sre.compile(pattern, *parts[1:])
            plain = re.compile(pattern, flags)
            if (restored.flags, restored.groups, restored.groupindex) == (plain.flags, plain.groups, plain.groupindex):
                store[key] = pickle.dumps(parts, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # noqa: BLE001 - a pattern or an interpreter this cannot store: compiled when used
            continue
    return store


class LazyPattern:
    """Stands for a compiled pattern; compiles it the first time an attribute is asked for."""

    def __init__(self, pattern: str, flags: int = 0, module: Any = re) -> None:
        self._source = (pattern, flags, module)
        remember(pattern, flags, module)

    def compiled(self) -> Any:
        """The compiled pattern (compiled now if it was not yet)."""
        got = self.__dict__.get("_compiled")
        if got is None:
            pattern, flags, module = self._source
            got = re_compile(pattern, flags) if module is re else regex_compile(pattern, flags)
            self.__dict__["_compiled"] = got
            for name in _BOUND:
                value = getattr(got, name, None)
                if value is not None:
                    self.__dict__[name] = value
        return got

    def __getattr__(self, name: str) -> Any:
        # only called for attributes not bound yet (the first use, or a rarely used attribute)
        if name.startswith("__") or name in ("_source", "_compiled"):
            raise AttributeError(name)
        return getattr(self.compiled(), name)

    def text_and_flags(self) -> tuple[str, int]:
        """The pattern's text and flags, without compiling it."""
        pattern, flags, _ = self._source
        return pattern, int(flags)

    def __reduce__(self) -> tuple[Any, ...]:
        pattern, flags, module = self._source
        return (module.compile, (pattern, flags))

    def __repr__(self) -> str:
        return f"lazy {self._source[0]!r}"


def compile(pattern: str, flags: int = 0, module: Any = re) -> LazyPattern:  # noqa: A001 - mirrors re.compile
    """A pattern compiled with `module` (``re`` or ``regex``) on first use."""
    return LazyPattern(pattern, flags, module)
