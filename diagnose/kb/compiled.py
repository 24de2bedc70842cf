"""The knowledge base as the engine uses it: plain objects, compiled once, cached on disk.

The cache key is the content of every rule, compat and catalogue (rules/catalog/) file plus the
versions of diagnose, Python and `regex`; the cache is safe to delete and `--no-cache` bypasses it.
The cached rules name their files relative to their rules root (a KB built in one checkout serves
another with the same rules): `load` resolves them against the roots of this run.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from diagnose import __version__, lazy_re
from diagnose.kb import cache, catalog, loader
from diagnose.kb.cache import cache_dir
from diagnose.record import field, record

# a fix step's placeholders: {packages.torch}, {groups.model_type}, {facts.driver_version}, {compat.T.expected}
PLACEHOLDER = lazy_re.compile(r"\{((?:packages|groups|facts|compat)\.[\w.-]+)\}")


@record
class CompiledSignal:
    """One signal of a rule: a regex or a fuzzy text, its weight and where it may match."""

    id: str
    weight: float
    regex: str | None = None
    fuzzy: str | None = None
    cuda_error: list[str] | None = None  # the CUDA errors `regex` was compiled from (rules/catalog/)
    threshold: int = 90
    kinds: frozenset[str] | None = None
    known_in: dict[str, str] | None = None  # {table, group, column}: the group must be a key of that table
    scope: str | None = None  # "cut-traceback": only inside a traceback cut before its exception line; "cut-last-frame": its last frame
    effect: str | None = None  # "contradict": the line argues against the rule; "support": it only adds (rank.assess)


@record
class CompiledRule:
    """A rule file as the engine uses it (plain values; its signals compiled)."""

    id: str
    title: str
    category: str
    severity: str
    summary: str
    description: str
    signals: list[CompiledSignal]
    conditions: list[dict[str, Any]]
    explains: list[str]
    fixed_in: dict[str, str]
    fix: list[dict[str, str]]
    verify: list[dict[str, Any]]
    verified_by: list[str]
    references: list[str]
    examples: dict[str, list[str]]
    path: str
    generic: bool = False  # a generic symptom: its lines alone never establish a specific cause
    root: int = 0  # which rules root `path` is under (0: the shipped rules, then each --rules dir)


@record
class KnowledgeBase:
    """Every rule, compat table and the CUDA error catalogue, as one cached object."""

    version: str
    rules: dict[str, CompiledRule]
    compat: dict[str, dict[str, Any]] = field(default_factory=dict)
    catalog: catalog.Catalog = field(default_factory=catalog.Catalog)
    # every signal's pattern and the code's own, compiled when the cache is written (lazy_re.precompile): a
    # run restores the few it uses instead of compiling them
    patterns: dict[lazy_re.Key, bytes] = field(default_factory=dict, repr=False)

    def signals(self) -> list[tuple[CompiledRule, CompiledSignal]]:
        return [(rule, sig) for rule in self.rules.values() for sig in rule.signals]


def _verified_text(source: Any) -> str:
    for key in ("seed", "url", "reproduction"):
        value = getattr(source, key, None)
        if value:
            label = {"seed": "seed ", "url": "", "reproduction": "reproduction "}[key]
            return f"{label}{value}" + (f" ({source.note})" if source.note else "")
    return str(source)


def compile_rule(rule: Any, path: Path, cat: catalog.Catalog | None = None) -> CompiledRule:
    signals = [
        CompiledSignal(
            id=s.id,
            weight=s.weight,
            regex=s.regex if s.cuda_error is None else catalog.compile_signal(cat, s.cuda_error, f"{path}: {s.id}"),
            cuda_error=s.cuda_error,
            fuzzy=s.fuzzy,
            threshold=s.threshold,
            kinds=frozenset(s.artifact) if s.artifact else None,
            known_in=s.known_in.model_dump() if s.known_in else None,
            scope=s.scope,
            effect=s.effect,
        )
        for s in rule.signals
    ]
    return CompiledRule(
        id=rule.id,
        title=rule.title,
        category=rule.category,
        severity=rule.severity,
        summary=rule.summary,
        description=rule.description,
        signals=signals,
        conditions=[c.model_dump(exclude_none=True) for c in rule.conditions],
        explains=list(rule.explains),
        generic=rule.generic,
        fixed_in=dict(rule.fixed_in),
        fix=[f.model_dump(exclude_none=True) for f in rule.fix],
        verify=[v.model_dump(exclude_none=True) for v in rule.verify],
        verified_by=[_verified_text(v) for v in rule.verified_by],
        references=list(rule.references),
        examples={"match": list(rule.examples.match), "no_match": list(rule.examples.no_match)},
        path=str(path),
    )


def build(dirs: list[Path]) -> KnowledgeBase:
    """Validate and compile every rule and compat table under `dirs` (no cache)."""
    from diagnose.errors import RuleError
    from diagnose.kb import catalog_schema

    cat = catalog_schema.load(dirs)
    rules: dict[str, CompiledRule] = {}
    for path in loader.rule_paths(dirs):
        rule_file = loader.read_yaml(path)
        rule = loader.validate_rule(rule_file)
        if rule.id in rules:
            raise RuleError(f"{path}:1: duplicate rule id {rule.id!r} (also {rules[rule.id].path})")
        rules[rule.id] = compile_rule(rule, path, cat)
    compat = {}
    for path in loader.compat_paths(dirs):
        compat[path.stem] = loader.read_yaml(path).data
    return KnowledgeBase(version=_kb_version(dirs), rules=rules, compat=compat, catalog=cat)


def _content_hash(dirs: list[Path]) -> str:
    import hashlib  # only when the KB is built (its version names its content)

    digest = hashlib.sha256()
    for root in dirs:
        for path in sorted(root.rglob("*.yaml")):
            digest.update(str(path.relative_to(root)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def _stat_key(roots: list[Path], suffix: str) -> str:
    """Every `suffix` file under `roots` as (relative path, size, mtime in ns): the cache key of a run. Like a
    .pyc's, it is read from the directory entries without opening a file (a run used to read and hash all
    rule files, a tenth of a small log's time); an edited file has a new mtime, and its content hash still
    names the KB's version."""
    parts: list[str] = []
    for root in roots:
        _stat_dir(str(root), "", suffix, parts)
        parts.append("|")
    return "\n".join(parts)


def _stat_dir(folder: str, prefix: str, suffix: str, parts: list[str]) -> None:
    """_stat_key's walk: the entries of `folder` by name, files before the folders under it (os.walk's order),
    the sizes and times from scandir's stat (no path is joined or made relative twice)."""
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return
    subdirs = []
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):  # os.walk does not follow a link to a folder either
            subdirs.append(entry)
        elif entry.name.endswith(suffix):
            st = entry.stat()
            parts.append(f"{prefix}{entry.name}:{st.st_size}:{st.st_mtime_ns}")
    for entry in subdirs:
        _stat_dir(entry.path, f"{prefix}{entry.name}{os.sep}", suffix, parts)


def _code_hash() -> str:
    """The code that compiles the KB is part of the cache key: a changed compiler rebuilds it (lazy_re included:
    it writes the stored patterns)."""
    st = os.stat(lazy_re.__file__)
    return f"{_stat_key([Path(__file__).parent], '.py')}|lazy_re:{st.st_size}:{st.st_mtime_ns}"


def _kb_version(dirs: list[Path]) -> str:
    return f"{__version__}+{_content_hash(dirs)[:10]}"


def load(extra_dirs: list[Path] | None = None, use_cache: bool = True,
         derived: Callable[[list[str]], list[lazy_re.Key]] | None = None) -> KnowledgeBase:
    """The KB from the shipped rules plus `extra_dirs`, from the cache when it is current. `derived(signals)`: the
    patterns other layers build from the signal patterns (lazy_re keys), stored compiled with them."""
    import regex

    dirs = [loader.default_rules_dir(), *(extra_dirs or [])]
    if not use_cache:
        return build(dirs)
    key = cache.key(f"{_stat_key(dirs, '.yaml')}|{__version__}|{_code_hash()}|{sys.version}|{regex.__version__}".encode())
    path = cache_dir() / f"kb-{key}.pickle"
    kb = cache.read(path)
    if not isinstance(kb, KnowledgeBase):
        kb = build(dirs)
        _relative(kb, dirs)
        signals = sorted({sig.regex for _, sig in kb.signals() if sig.regex})
        kb.patterns = lazy_re.precompile(signals, derived(signals) if derived else [])
        cache.write(path, kb)
    lazy_re.use_compiled(kb.patterns)
    _resolve(kb, dirs)
    return kb


def _relative(kb: KnowledgeBase, dirs: list[Path]) -> None:
    """Name each rule's file relative to its rules root, as the cache stores it."""
    roots = [d.resolve() for d in dirs]
    for rule in kb.rules.values():
        path = Path(rule.path).resolve()
        for i, root in enumerate(roots):
            if path.is_relative_to(root):
                rule.root, rule.path = i, path.relative_to(root).as_posix()
                break


def _resolve(kb: KnowledgeBase, dirs: list[Path]) -> None:
    """The files of this run's roots (a relative path from the cache, joined to its root)."""
    roots = [str(d) for d in dirs]
    for rule in kb.rules.values():  # plain string joins: a Path per rule was a tenth of the KB's load
        if rule.root < len(roots) and not os.path.isabs(rule.path):
            rule.path = os.path.join(roots[rule.root], *rule.path.split("/"))
