"""Load the rule files: validate each against the strict model, report `file:line` for a bad one.

Validation needs yaml and pydantic, which cost a third of a second to import; the result is
compiled (kb/compiled.py) and cached, so a warm run never imports either.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from diagnose.errors import RuleError
from diagnose.record import record


@record(eq=False)
class RuleFile:
    """A rule file as read: its path, its data and the YAML node tree (for line numbers)."""

    path: Path
    data: dict[str, Any]
    root: Any  # the yaml node tree, for line numbers


def default_rules_dir() -> Path:
    """The KB shipped with diagnose: the repo's rules/ in a checkout, the packaged copy otherwise."""
    env = os.environ.get("DIAGNOSE_RULES_DIR")
    if env:
        return Path(env)
    here = Path(__file__).resolve().parent
    for candidate in (here.parents[1] / "rules", here.parent / "_rules"):
        if candidate.is_dir():
            return candidate
    raise RuleError(f"the knowledge base is missing: no rules/ next to {here.parents[1]}")


def rule_paths(dirs: Iterable[Path]) -> list[Path]:
    """Every rule file under the given dirs (compat tables and catalogues excluded), in a stable order."""
    paths: list[Path] = []
    for root in dirs:
        if not root.is_dir():
            raise RuleError(f"{root}: not a directory of rules")
        paths.extend(
            p for p in sorted(root.rglob("*.yaml"))
            if not {"compat", "catalog"} & set(p.relative_to(root).parts)
        )
    return paths


def compat_paths(dirs: Iterable[Path]) -> list[Path]:
    paths: list[Path] = []
    for root in dirs:
        if (root / "compat").is_dir():
            paths.extend(sorted((root / "compat").glob("*.yaml")))
    return paths


def read_yaml(path: Path) -> RuleFile:
    import yaml

    # libyaml's parser when PyYAML has it (the wheels do): the same documents and line marks, about 14 times faster
    # than the pure-Python one (91 rule files: 0.4 s against 5.7 s, the bulk of a cold start's KB build)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        text = path.read_text(encoding="utf-8")
        root = yaml.compose(text, Loader=loader)
        data = yaml.load(text, Loader=loader)  # noqa: S506 - a safe loader (CSafeLoader or SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        line = mark.line + 1 if mark else 1
        raise RuleError(f"{path}:{line}: invalid YAML: {exc.problem}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RuleError(f"{path}: cannot read: {exc}") from None
    if not isinstance(data, dict):
        raise RuleError(f"{path}:1: a rule file holds one mapping")
    return RuleFile(path, data, root)


def validate_rule(rule_file: RuleFile) -> Any:
    """The validated Rule, or RuleError naming the file, the line and the field."""
    from pydantic import ValidationError

    from diagnose.kb.schema import Rule

    try:
        rule = Rule.model_validate(rule_file.data)
    except ValidationError as exc:
        problems = schema_problems(rule_file, exc)
        more = f" (and {len(problems) - 1} more: `diagnose rules lint` lists them)" if len(problems) > 1 else ""
        raise RuleError(problems[0] + more, problems) from None
    stem = rule_file.path.stem
    if rule.id != stem:
        line = line_of(rule_file.root, ["id"])
        raise RuleError(f"{rule_file.path}:{line}: id {rule.id!r} differs from the file name {stem!r}")
    folder = rule_file.path.parent.name
    if folder != rule.category:
        line = line_of(rule_file.root, ["category"])
        raise RuleError(
            f"{rule_file.path}:{line}: category {rule.category!r} differs from its folder {folder!r}"
        )
    return rule


def schema_problems(rule_file: RuleFile, exc: Any) -> list[str]:
    """Every schema error of one rule file, each as `file:line: field: message`."""
    out = []
    for err in exc.errors():
        loc = [part for part in err["loc"] if not (isinstance(part, str) and "[" in part)]
        line = line_of(rule_file.root, loc)
        where = ".".join(str(p) for p in err["loc"]) or "(top)"
        out.append(f"{rule_file.path}:{line}: {where}: {err['msg']}")
    return out


def line_of(node: Any, loc: list[Any]) -> int:
    """The 1-based line of the yaml node at a pydantic error location (as deep as it exists)."""
    import yaml

    best = node.start_mark.line + 1 if node is not None else 1
    for part in loc:
        child = None
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if key.value == part:
                    best = key.start_mark.line + 1
                    child = value
                    break
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if part < len(node.value):
                child = node.value[part]
        if child is None:
            break
        node = child
        best = node.start_mark.line + 1
    return best
