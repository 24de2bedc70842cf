"""`reasons` and `verified_by` in the JSON are structured ({effect, text}; {url | seed | reproduction, note})
and say the same as the readable text output."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml
from conftest import FIXTURES, ROOT, run_cli

from diagnose import api
from diagnose.model import REASON_EFFECTS, source_item

SCHEMA = json.loads((ROOT / "docs" / "diagnosis.schema.json").read_text())
H200X2 = FIXTURES / "healthy" / "host-h200x2-snapshot"
INCIDENT = [str(FIXTURES / "nccl-timeout--repro-h200x2-torchrun" / "fail-nccl-timeout.log"),
            str(H200X2 / "nvidia-smi.txt"), str(H200X2 / "pip-freeze.txt")]
SIGN = {effect: sign for sign, effect in REASON_EFFECTS.items()}


@pytest.fixture(scope="module")
def kb():  # type: ignore[no-untyped-def]
    return api.load_kb()  # the cached KB, as the command line uses it


def test_reasons_and_sources_are_objects_in_json_and_the_same_words_in_text():
    data = json.loads(run_cli("--format", "json", *INCIDENT).stdout)
    jsonschema.validate(data, SCHEMA)
    top = data["findings"][0]
    assert top["rule_id"] == "nccl-timeout"
    assert {r["effect"] for r in top["reasons"]} == {"raises", "note"}
    assert all(set(r) == {"effect", "text"} and not r["text"].startswith(("+", "-", "·")) for r in top["reasons"])
    kinds = [next(k for k in source if k != "note") for source in top["verified_by"]]
    assert kinds == ["url", "reproduction"]
    assert top["verified_by"][1]["reproduction"] == "fixtures/nccl-timeout--repro-h200x2-torch211"
    # the text output wraps prose to the terminal: compare the words, not where the lines break
    text = " ".join(run_cli("--explain", *INCIDENT).stdout.decode().split())
    for reason in top["reasons"]:
        assert " ".join(f"{SIGN[reason['effect']]} {reason['text']}".split()) in text
    for source, kind in zip(top["verified_by"], kinds):
        assert " ".join(f"{source[kind]} ({source['note']})".split()) in text


def test_every_rules_sources_read_back_as_its_yaml_says(kb):
    """What the JSON gives for each rule's verified_by is what the rule file holds, field for field."""
    for rule in kb.rules.values():
        path = Path(rule.path) if Path(rule.path).is_absolute() else ROOT / "rules" / rule.path
        written = yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))["verified_by"]
        expected = [{k: v for k, v in entry.items() if k != "note"} | {"note": entry.get("note") or None}
                    for entry in written]
        assert [source_item(text) for text in rule.verified_by] == expected, rule.id
