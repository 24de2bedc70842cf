"""The knowledge base as the engine uses it: plain objects, compiled once, cached on disk.

The cache key is the content of every rule, compat and catalogue (rules/catalog/) file plus the
versions of diagnose, Python and `regex`; the cache is safe to delete and `--no-cache` bypasses it.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import re
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from diagnose import __version__
from diagnose.kb import catalog, loader

# a fix step's placeholders: {packages.torch}, {groups.model_type}, {facts.driver_version}, {compat.T.expected}
PLACEHOLDER = re.compile(r"\{((?:packages|groups|facts|compat)\.[\w.-]+)\}")


@dataclass
class CompiledSignal:
    id: str
    weight: float
    regex: str | None = None
    fuzzy: str | None = None
    cuda_error: list[str] | None = None  # the CUDA errors `regex` was compiled from (rules/catalog/)
    threshold: int = 90
    kinds: frozenset[str] | None = None
    known_in: dict[str, str] | None = None  # {table, group, column}: the group must be a key of that table
    scope: str | None = None  # "cut-traceback": only inside a traceback cut before its exception line


@dataclass
class CompiledRule:
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


@dataclass
class KnowledgeBase:
    version: str
    rules: dict[str, CompiledRule]
    compat: dict[str, dict[str, Any]] = field(default_factory=dict)
    catalog: catalog.Catalog = field(default_factory=catalog.Catalog)

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
    digest = hashlib.sha256()
    for root in dirs:
        for path in sorted(root.rglob("*.yaml")):
            digest.update(str(path.relative_to(root)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def _code_hash() -> str:
    """The code that compiles the KB is part of the cache key: a changed compiler rebuilds it."""
    digest = hashlib.sha256()
    for path in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def _kb_version(dirs: list[Path]) -> str:
    return f"{__version__}+{_content_hash(dirs)[:10]}"


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "diagnose"


def load(extra_dirs: list[Path] | None = None, use_cache: bool = True) -> KnowledgeBase:
    """The KB from the shipped rules plus `extra_dirs`, from the cache when it is current."""
    import regex

    dirs = [loader.default_rules_dir(), *(extra_dirs or [])]
    if not use_cache:
        return build(dirs)
    key = hashlib.sha256(
        f"{_content_hash(dirs)}|{__version__}|{_code_hash()}|{sys.version}|{regex.__version__}".encode()
    ).hexdigest()[:24]
    path = cache_dir() / f"kb-{key}.pickle"
    try:
        with open(path, "rb") as fh:
            kb = pickle.load(fh)
        if isinstance(kb, KnowledgeBase):
            return kb
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
        pass
    kb = build(dirs)
    _write_cache(path, kb)
    return kb


def _write_cache(path: Path, kb: KnowledgeBase) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".kb-")
        with os.fdopen(fd, "wb") as fh:
            pickle.dump(kb, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
        for stale in path.parent.glob("kb-*.pickle"):  # older KB versions: keep the cache small
            if stale != path:
                stale.unlink(missing_ok=True)
    except OSError:
        pass  # a read-only home is fine: we just rebuild next time
