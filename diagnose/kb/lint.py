"""`diagnose rules lint`: every problem in the KB at once, each with `file:line` and what to do.

Checks: the strict schema (ids, file stem == id, folder == category, fixes with verified_by),
duplicate ids, regexes that do not compile or backtrack catastrophically (each is tried against
adversarial input under a time limit), examples that do not behave, `explains` targets that do
not exist or form a cycle, verify commands that are not read-only; across rules (lint_cross.py),
near-miss examples another rule matches without claiming them, and rival findings on a fixture.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import regex

from diagnose import lazy_re
from diagnose.errors import RuleError
from diagnose.kb import loader
from diagnose.kb.compiled import PLACEHOLDER

ADVERSARIAL_TIMEOUT = 0.2
NESTED_QUANTIFIER = lazy_re.compile(r"\((?:[^()\\]|\\.)*[+*](?:[^()\\]|\\.)*\)[+*{]", module=regex)
WRITES = lazy_re.compile(
    r"(?:^|[;&|]\s*|\bsudo\s+)(?:rm|mv|cp|dd|mkfs\S*|modprobe|rmmod|insmod|reboot|shutdown|kill|pkill|"
    r"apt(?:-get)?|yum|dnf|pip3?\s+(?:install|uninstall)|uv\s+pip\s+(?:install|uninstall)|conda\s+(?:install|remove)|"
    r"systemctl\s+(?:start|stop|restart|enable|disable)|tee|chmod|chown|nvidia-smi\s+-(?:r|pm|c|i\s+\d+\s+-r))\b"
    r"|(?:^|\s)(?:\d?>>?|&>)\s*(?!&|/dev/null)[^\s&|]"
, module=regex)


@dataclass
class Issue:
    where: str
    message: str
    severity: str = "error"

    def __str__(self) -> str:
        return f"{self.where}: {self.severity}: {self.message}"


def adversarial_inputs(pattern: str) -> list[str]:
    """Strings that make a backtracking regex blow up: its own characters, long, with a bad end."""
    chars = sorted({c for c in regex.sub(r"\\.", "", pattern) if c.isprintable()})[:40] or ["a"]
    samples = [" " * 20000 + "!", "a" * 20000 + "!", "\t" * 5000 + "x", "0" * 20000 + "x"]
    samples += [c * 5000 + "\x00" for c in chars]
    samples.append("".join(chars) * 500 + "\x00")
    literals = [lit for lit in regex.split(r"[\\()\[\]{}|?*+.^$]", pattern) if len(lit) >= 2]
    for lit in literals[:5]:
        samples.append((lit + " ") * 2000 + "\x00")
    return samples


def check_regex(pattern: str) -> str | None:
    """None when safe; else why not."""
    try:
        compiled = regex.compile(pattern)
    except regex.error as exc:
        return f"does not compile: {exc}"
    if NESTED_QUANTIFIER.search(pattern):
        return "nested quantifier (like `(a+)+`): can backtrack catastrophically; rewrite it"
    for sample in adversarial_inputs(pattern):
        try:
            compiled.search(sample, timeout=ADVERSARIAL_TIMEOUT)
        except TimeoutError:
            return f"took over {ADVERSARIAL_TIMEOUT}s on a {len(sample)}-character adversarial line"
    return None


@functools.cache
def _compiled(pattern: str) -> Any:
    """`pattern` compiled once per lint run: the cross-rule checks try every signal on every example line, and with
    more signals than `regex`'s own cache holds (500) each search would compile its pattern again."""
    return regex.compile(pattern)


def _signal_matches(sig: Any, line: str) -> bool:
    if getattr(sig, "cuda_error", None):  # compiled from rules/catalog/cuda-errors.yaml
        from diagnose.kb.catalog_schema import shipped_signal_regex

        return bool(_compiled(shipped_signal_regex(sig.cuda_error)).search(line))
    if sig.regex is not None:
        from diagnose.engine.match import cjk_spaced

        # as the matcher sees the line: a run of Chinese / Japanese / Korean set apart from ASCII words by a space
        m = _compiled(sig.regex).search(line if line.isascii() else cjk_spaced(line))
        known_in = getattr(sig, "known_in", None)
        if m and known_in:  # the matched entity must be one the compat table knows
            spec = known_in if isinstance(known_in, dict) else known_in.model_dump()
            value = (m.groupdict().get(spec["group"]) or "").lower()  # as engine/scope.py: Qwen2Config's "Qwen2" too
            return value in _table_keys(spec["table"], spec.get("column", "model_type"))
        return bool(m)
    from rapidfuzz import fuzz

    return bool(fuzz.partial_ratio(sig.fuzzy, line, score_cutoff=sig.threshold))


_KEYS: dict[tuple[str, str], set[str]] = {}


def _table_keys(table: str, column: str) -> set[str]:
    """The keys of a shipped compat table's rows (for `known_in` signals)."""
    if (table, column) not in _KEYS:
        path = loader.default_rules_dir() / "compat" / f"{table}.yaml"
        from diagnose.kb.compat import table_keys

        _KEYS[(table, column)] = table_keys(loader.read_yaml(path).data if path.is_file() else {}, column)
    return _KEYS[(table, column)]


def lint_rule(rule: Any, rule_file: loader.RuleFile) -> list[Issue]:
    issues: list[Issue] = []
    path = rule_file.path

    def at(*loc: Any) -> str:
        return f"{path}:{loader.line_of(rule_file.root, list(loc))}"

    for i, sig in enumerate(rule.signals):
        if sig.regex is not None and (why := check_regex(sig.regex)):
            issues.append(Issue(at("signals", i, "regex"), f"signal {sig.id}: regex {why}"))
    for i, line in enumerate(rule.examples.match):
        if not any(_signal_matches(s, line) for s in rule.signals):
            issues.append(Issue(at("examples", "match", i), f"example matches no signal: {line[:80]!r}"))
    for i, line in enumerate(rule.examples.no_match):
        hit = next((s.id for s in rule.signals if _signal_matches(s, line)), None)
        if hit:
            issues.append(Issue(at("examples", "no_match", i), f"no_match example matches signal {hit}: {line[:80]!r}"))
    for i, cond in enumerate(rule.conditions):
        named = [cond.compare.group] if cond.compare else []
        if cond.memory_elsewhere:
            named += [cond.memory_elsewhere.total, cond.memory_elsewhere.free, cond.memory_elsewhere.held]
        missing = [g for g in named if not _captures(rule, g)]
        if missing:
            issues.append(Issue(at("conditions", i), f"condition names group(s) no signal captures: {', '.join(missing)}"))
    for i, step in enumerate(rule.verify):
        if WRITES.search(step.run):
            issues.append(Issue(at("verify", i, "run"), f"verify command is not read-only: {step.run!r}"))
    for i, step in enumerate(rule.fix):
        if step.run and "{" in step.run:
            bad = [f for f in PLACEHOLDER.findall(step.run) if not _known_placeholder(f, rule)]
            if bad:
                issues.append(Issue(at("fix", i, "run"), f"unknown placeholder(s) {', '.join(bad)}"))
    if not rule.examples.no_match:
        issues.append(Issue(at("examples"), "add examples.no_match: a near-miss line this rule must not match"))
    return issues


def _captures(rule: Any, group: str) -> bool:
    """Does one of the rule's signal regexes capture `group`?"""
    return any(s.regex and f"(?P<{group}>" in s.regex for s in rule.signals)


def _known_placeholder(name: str, rule: Any) -> bool:
    head, _, rest = name.partition(".")
    if head == "packages" and rest:
        return True
    if head == "facts":
        return rest in ("driver_version", "cuda_driver_version", "compute_capability", "kernel_release", "torch_cuda",
                        "torch_index_url", "gpu_index", "extension", "extension_module", "glibc_version",
                        "torch_release", "torch_of_torchvision", "torchvision_of_old_torch", "python", "python_bin",
                        "model", "script", "driver_branch", "port", "old_torch_index_url", "build_package",
                        "build_module", "gpu_count")
    if head == "groups":
        return _captures(rule, rest)
    if head == "compat":
        return any(c.compat and rest.startswith(c.compat + ".") for c in rule.conditions)
    return False


def lint(dirs: list[Path]) -> list[Issue]:
    issues: list[Issue] = []
    rules: dict[str, tuple[Any, loader.RuleFile]] = {}
    for path in loader.rule_paths(dirs):
        try:
            rule_file = loader.read_yaml(path)
            rule = loader.validate_rule(rule_file)
        except RuleError as exc:
            for problem in exc.problems:
                where, _, message = problem.partition(": ")
                issues.append(Issue(where, message))
            continue
        if rule.id in rules:
            issues.append(Issue(f"{path}:1", f"duplicate rule id {rule.id!r} (also {rules[rule.id][1].path})"))
            continue
        rules[rule.id] = (rule, rule_file)
        issues.extend(lint_rule(rule, rule_file))
    for rule, rule_file in rules.values():
        for i, target in enumerate(rule.explains):
            if target not in rules:
                where = f"{rule_file.path}:{loader.line_of(rule_file.root, ['explains', i])}"
                issues.append(Issue(where, f"explains {target!r}, which is not a rule"))
    issues.extend(_cycles(rules))
    issues.extend(_unseen_by_line_filter(rules))
    from diagnose.kb import catalog_schema  # the catalogues: schema, sources, the rule ids they name

    issues.extend(catalog_schema.lint(dirs, set(rules)))
    from diagnose.kb.lint_cross import unowned_near_misses

    issues.extend(unowned_near_misses(rules))
    for path in loader.compat_paths(dirs):
        try:
            data = loader.read_yaml(path).data
        except RuleError as exc:
            issues.append(Issue(str(exc).split(": ")[0], str(exc)))
            continue
        if data.get("id") != path.stem:
            issues.append(Issue(f"{path}:1", "compat table id differs from its file name"))
        if not data.get("sources"):
            issues.append(Issue(f"{path}:1", "compat table has no sources: say where its facts come from"))
        for row in data.get("rows", []):
            if isinstance(row, dict) and "pattern" in row and (why := check_regex(str(row["pattern"]))):
                issues.append(Issue(f"{path}:1", f"pattern {row['pattern']!r}: {why}"))
    return issues


def _unseen_by_line_filter(rules: dict[str, tuple[Any, loader.RuleFile]]) -> list[Issue]:
    """Match examples whose signal regex matches but the Hyperscan line filter does not report it: the engine never
    hands such a line to the regex. Hyperscan reads a line as bytes, so a `.`, `\\S` or `\\W` meant to stand for one
    non-ASCII character (the curly apostrophe of "model’s") meets three bytes of it; and mixes of patterns have hidden
    each other's matches (prefilter.HS_UNRELIABLE)."""
    from diagnose.artifacts import pylog
    from diagnose.artifacts.prefilter import LineFilter, hyperscan_module
    from diagnose.engine.match import cjk_spaced
    from diagnose.kb.compiled import cache_dir

    if hyperscan_module() is None:
        return []
    patterns = [s.regex for rule, _ in rules.values() for s in rule.signals if s.regex]
    line_filter = LineFilter(patterns, pylog.ERRORISH_PATTERN, cache_dir())
    issues = []
    for rule, rule_file in rules.values():
        for i, line in enumerate(rule.examples.match):
            found, _ = line_filter.classify(line if line.isascii() else cjk_spaced(line))
            if found is None:
                continue
            for sig in rule.signals:
                if sig.regex and sig.regex not in found and _signal_matches(sig, line):
                    where = f"{rule_file.path}:{loader.line_of(rule_file.root, ['examples', 'match', i])}"
                    issues.append(Issue(where, f"signal {sig.id} matches this example but the Hyperscan line filter "
                                               f"does not report it, so the engine never tries it: {line[:80]!r}"))
    return issues


def _cycles(rules: dict[str, tuple[Any, loader.RuleFile]]) -> list[Issue]:
    issues = []
    state: dict[str, int] = {}

    def visit(rule_id: str, trail: list[str]) -> None:
        state[rule_id] = 1
        for target in rules[rule_id][0].explains if rule_id in rules else []:
            if state.get(target) == 1:
                cycle = " -> ".join([*trail[trail.index(target):], target]) if target in trail else target
                issues.append(Issue(str(rules[rule_id][1].path), f"explains forms a cycle: {cycle}"))
            elif target in rules and state.get(target) is None:
                visit(target, [*trail, target])
        state[rule_id] = 2

    for rule_id in sorted(rules):
        if state.get(rule_id) is None:
            visit(rule_id, [rule_id])
    return issues
