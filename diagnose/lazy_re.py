"""Patterns compiled on first use, not at import.

A module-level ``NAME = lazy_re.compile(r"...")`` costs nothing until NAME is first used; the first use
compiles it with the module given (``re`` by default, ``regex`` where a pattern needs it) and binds the
compiled pattern's methods on the object, so later calls cost what the compiled pattern's own do. A small
crash log runs a few of the module-level patterns the parsers define; compiling all of them at start-up
was a third of the time to import `diagnose.api`.
"""

from __future__ import annotations

import re
from typing import Any

_BOUND = ("search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split", "pattern", "flags",
          "groups", "groupindex")


class LazyPattern:
    """Stands for a compiled pattern; compiles it the first time an attribute is asked for."""

    def __init__(self, pattern: str, flags: int = 0, module: Any = re) -> None:
        self._source = (pattern, flags, module)

    def compiled(self) -> Any:
        """The compiled pattern (compiled now if it was not yet)."""
        got = self.__dict__.get("_compiled")
        if got is None:
            pattern, flags, module = self._source
            got = module.compile(pattern, flags)
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

    def __reduce__(self) -> tuple[Any, ...]:
        pattern, flags, module = self._source
        return (module.compile, (pattern, flags))

    def __repr__(self) -> str:
        return f"lazy {self._source[0]!r}"


def compile(pattern: str, flags: int = 0, module: Any = re) -> LazyPattern:  # noqa: A001 - mirrors re.compile
    """A pattern compiled with `module` (``re`` or ``regex``) on first use."""
    return LazyPattern(pattern, flags, module)
