"""pySigma: parse and validate the Sigma rules, and convert them to LogQL and Lucene / query DSL."""

from __future__ import annotations

import copy
import json
from typing import Any

import yaml

from diagnose.export.sigma import Exported

# checks that do not fit rules generated from a KB (they ask for hand-kept metadata)
SKIP_VALIDATORS = {"date_existence", "identifier_uniqueness", "description_length", "custom_attributes",
                   "sigmahq_date", "sigmahq_filename", "sigmahq_filename_prefix",
                   "attacktag", "d3_fendtag"}  # these two download MITRE data
TARGETS = ("sigma", "loki", "lucene", "dsl")


def to_yaml(rule: dict[str, Any]) -> str:
    return yaml.safe_dump({k: v for k, v in rule.items() if v is not None}, sort_keys=False, allow_unicode=True,
                          width=1000)


def validate(exported: list[Exported]) -> dict[str, list[str]]:
    """{rule id: pySigma's issues}; a rule pySigma cannot parse has its error as the issue."""
    from sigma.collection import SigmaCollection
    from sigma.validation import SigmaValidator
    from sigma.validators.core import validators

    checks = [v for name, v in validators.items() if name not in SKIP_VALIDATORS]
    validator = SigmaValidator(checks)
    out: dict[str, list[str]] = {}
    for e in exported:
        if e.sigma is None:
            continue
        try:
            collection = SigmaCollection.from_yaml(to_yaml(e.sigma))
            found = validator.validate_rules(collection)  # type: ignore[arg-type]
            issues = [f"{type(i).__name__}: {i.description}" for i in found]
        except Exception as err:  # pySigma's errors have no common base worth naming
            issues = [f"{type(err).__name__}: {err}"]
        out[e.rule_id] = issues
    return out


def lucene_rule(e: Exported, field: str = "message") -> dict[str, Any] | None:
    """The rule with its patterns on `field` in Lucene's dialect (ES matches a regexp on a whole term:
    `field` should be a keyword or wildcard field holding the whole line)."""
    if e.sigma is None or not e.lucene:
        return None
    rule = copy.deepcopy(e.sigma)
    rule["detection"] = {"selection": {f"{field}|re": e.lucene}, "condition": "selection"}
    return rule


def convert(e: Exported, target: str, field: str = "message") -> str | None:
    """The rule as a `target` query; None where none of its signals can be one."""
    from sigma.collection import SigmaCollection

    if target == "sigma":
        return to_yaml(e.sigma) if e.sigma else None
    if target == "loki":
        from sigma.backends.loki import LogQLBackend

        if e.sigma is None:
            return None
        return "\n".join(LogQLBackend().convert(SigmaCollection.from_yaml(to_yaml(e.sigma))))
    rule = lucene_rule(e, field)
    if rule is None:
        return None
    from sigma.backends.elasticsearch import LuceneBackend

    collection = SigmaCollection.from_yaml(to_yaml(rule))
    if target == "dsl":
        return json.dumps(LuceneBackend().convert(collection, "dsl_lucene"), indent=2)
    return "\n".join(LuceneBackend().convert(collection))
