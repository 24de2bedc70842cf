"""Rewrite a Python pattern to RE2 (Loki, Sigma) or Lucene regexp (Elasticsearch / OpenSearch).

Parsed with the standard library's own regex parser and written back out construct by construct, so a
construct the target lacks is named, never passed through. Lazy quantifiers become greedy (whether a line
matches does not change); Lucene has no \\b: it is dropped there, with a note (the query may match more)."""

from __future__ import annotations

try:
    from re import _constants as C  # type: ignore[attr-defined]
    from re import _parser as P  # type: ignore[attr-defined]
except ImportError:  # Python 3.10
    import sre_constants as C  # type: ignore[no-redef]
    import sre_parse as P  # type: ignore[no-redef]

RE2_META = set(r"\.^$|?*+()[]{}")
LUCENE_META = set(r'\.?+*|{}[]()"#@&<>~^$')  # ^ and $ are plain in Lucene; escaped, they read the same anywhere
CLASS_META = set(r"\]^-[")
CATEGORIES = {  # name -> (RE2, Lucene class body); Lucene has no \d \w \s shorthands in every version
    C.CATEGORY_DIGIT: (r"\d", "0-9"), C.CATEGORY_WORD: (r"\w", "A-Za-z0-9_"), C.CATEGORY_SPACE: (r"\s", " \t"),
    C.CATEGORY_NOT_DIGIT: (r"\D", None), C.CATEGORY_NOT_WORD: (r"\W", None), C.CATEGORY_NOT_SPACE: (r"\S", None),
}
NEGATED = {C.CATEGORY_NOT_DIGIT: "0-9", C.CATEGORY_NOT_WORD: "A-Za-z0-9_", C.CATEGORY_NOT_SPACE: " \t"}


class Untranslatable(ValueError):
    """The pattern uses a construct the target dialect lacks."""


def rewrite(pattern: str, target: str) -> tuple[str, list[str]]:
    """(pattern in `target` ('re2' | 'lucene'), notes). Lucene's is wrapped in .* (it matches whole terms).

    >>> rewrite(r"Xid \\d+ (?:on|at) (?i:GPU)", "re2")[0]
    'Xid \\\\d+ (?:on|at) (?i:GPU)'
    >>> rewrite(r"^Xid \\d+[:,] (ab|cd)", "lucene")[0]
    'Xid [0-9]+[:,] (ab|cd).*'
    >>> rewrite(r"(?<!no )error", "re2")
    Traceback (most recent call last):
    ...
    diagnose.export.dialect.Untranslatable: lookbehind (?<= / (?<!)
    """
    try:
        parsed = P.parse(pattern)
    except Exception as e:  # a `regex`-only construct (\\p{..}, possessive, ...)
        raise Untranslatable(f"not a pattern the standard parser reads: {e}") from None
    w = _Writer(target, bool(parsed.state.flags & C.SRE_FLAG_IGNORECASE))
    body = w.seq(list(parsed))
    if target == "re2":
        return (f"(?i:{body})" if w.icase else body), w.notes  # scoped: a backend may join alternatives
    return (("" if w.start else ".*") + body + ("" if w.end else ".*")), w.notes


class _Writer:
    def __init__(self, target: str, icase: bool) -> None:
        self.lucene = target == "lucene"
        self.icase = icase
        self.notes: list[str] = []
        self.start = self.end = False

    def seq(self, items: list, top: bool = True) -> str:  # type: ignore[type-arg]
        out = []
        for i, (op, av) in enumerate(items):
            if op is C.AT:
                out.append(self.at(av, top and i == 0, top and i == len(items) - 1))
            else:
                out.append(self.one(op, av))
        return "".join(out)

    def one(self, op, av) -> str:  # type: ignore[no-untyped-def]
        if op is C.LITERAL:
            return self.char(chr(av))
        if op is C.NOT_LITERAL:
            return f"[^{self.cls_char(chr(av))}]"
        if op is C.ANY:
            return "."
        if op is C.IN:
            return self.klass(av)
        if op is C.CATEGORY:
            return self.klass([(C.CATEGORY, av)])
        if op in (C.MAX_REPEAT, C.MIN_REPEAT):
            lo, hi, sub = av
            inner = self.seq(list(sub), top=False)
            if len(sub) > 1 or sub[0][0] in (C.MAX_REPEAT, C.MIN_REPEAT):
                inner = f"(?:{inner})" if not self.lucene else f"({inner})"
            hi_s = "" if hi is C.MAXREPEAT else str(hi)
            q = {(0, ""): "*", (1, ""): "+", (0, "1"): "?"}.get((lo, hi_s), f"{{{lo},{hi_s}}}" if lo != hi else f"{{{lo}}}")
            if not self.lucene and max(lo, hi if hi is not C.MAXREPEAT else 0) > 1000:
                raise Untranslatable("a repetition over 1000 (RE2's limit)")
            return inner + q
        if op is C.SUBPATTERN:
            _, add, dele, sub = av
            inner = self.seq(list(sub), top=False)
            if len(sub) == 1 and sub[0][0] is C.BRANCH and not add and not dele:
                return inner  # the branch is grouped already
            if add & C.SRE_FLAG_IGNORECASE and not self.lucene:
                return f"(?i:{inner})"
            if add & C.SRE_FLAG_IGNORECASE or add & ~C.SRE_FLAG_IGNORECASE or dele:
                raise Untranslatable("an inline flag group (?flags:...)")
            return f"({inner})" if self.lucene else f"(?:{inner})"
        if op is C.BRANCH:
            alts = "|".join(self.seq(list(alt), top=False) for alt in av[1])
            return f"({alts})" if self.lucene else f"(?:{alts})"
        names = {C.ASSERT: "lookahead (?= / (?!)", C.ASSERT_NOT: "lookahead (?= / (?!)", C.GROUPREF: "a backreference",
                 C.GROUPREF_EXISTS: "a conditional group"}
        if op in (C.ASSERT, C.ASSERT_NOT) and av[0] < 0:
            raise Untranslatable("lookbehind (?<= / (?<!)")
        raise Untranslatable(names.get(op, f"the construct {op}"))

    def at(self, code, first: bool, last: bool) -> str:  # type: ignore[no-untyped-def]
        if code in (C.AT_BOUNDARY, C.AT_NON_BOUNDARY):
            if not self.lucene:
                return r"\b" if code is C.AT_BOUNDARY else r"\B"
            self.notes.append(r"Lucene has no \b: dropped, the query may match more lines")
            return ""
        start = code in (C.AT_BEGINNING, C.AT_BEGINNING_STRING)
        if not self.lucene:
            return "^" if start else "$"
        if (start and first) or (not start and last):
            self.start, self.end = self.start or start, self.end or not start
            return ""
        raise Untranslatable("an anchor (^ or $) inside the pattern")

    def char(self, c: str) -> str:
        if self.lucene and self.icase and c.lower() != c.upper():
            return f"[{c.lower()}{c.upper()}]"
        meta = LUCENE_META if self.lucene else RE2_META
        return "\\" + c if c in meta else (r"\t" if c == "\t" else c)

    def cls_char(self, c: str) -> str:
        special = CLASS_META | (LUCENE_META if self.lucene else {"\\"})
        return "\\" + c if c in special else c

    def klass(self, items: list) -> str:  # type: ignore[type-arg]
        neg = bool(items) and items[0][0] is C.NEGATE
        items = items[1:] if neg else items
        if not neg and len(items) == 1 and items[0][0] is C.CATEGORY:
            re2, lucene = CATEGORIES[items[0][1]]
            if not self.lucene:
                return re2
            return f"[{lucene}]" if lucene is not None else f"[^{NEGATED[items[0][1]]}]"
        parts = []
        for op, av in items:
            if op is C.LITERAL:
                ch = chr(av)
                parts.append(self.cls_char(ch) + (self.cls_char(ch.swapcase()) if self.lucene and self.icase
                                                  and ch.lower() != ch.upper() else ""))
            elif op is C.RANGE:
                lo, hi = chr(av[0]), chr(av[1])
                parts.append(f"{self.cls_char(lo)}-{self.cls_char(hi)}")
                # Lucene has no case-insensitive flag: `(?i)[a-z]` needs its upper-case range written out too
                if self.lucene and self.icase and ("a" <= lo <= hi <= "z" or "A" <= lo <= hi <= "Z"):
                    parts.append(f"{lo.swapcase()}-{hi.swapcase()}")
            elif op is C.CATEGORY:
                re2, lucene = CATEGORIES[av]
                if not self.lucene:
                    parts.append(re2)
                elif lucene is not None:
                    parts.append(lucene)
                elif len(items) == 1 and not neg:
                    return f"[^{NEGATED[av]}]"
                else:
                    raise Untranslatable(r"a negated class (\D \W \S) inside [...] (Lucene)")
            else:
                raise Untranslatable(f"the class item {op}")
        return f"[{'^' if neg else ''}{''.join(parts)}]"
