"""`diagnose export`: Sigma rules validated by pySigma, LogQL and Lucene queries that match what the rules match."""

from __future__ import annotations

import json
import re

import pytest
import regex

pytest.importorskip("sigma")
pytest.importorskip("sigma.backends.loki")
pytest.importorskip("sigma.backends.elasticsearch")

from diagnose.export import backends, sigma  # noqa: E402
from diagnose.export.dialect import Untranslatable, rewrite  # noqa: E402
from tests.conftest import run_cli  # noqa: E402


@pytest.fixture(scope="module")
def exported(kb):  # type: ignore[no-untyped-def]
    return {e.rule_id: e for e in sigma.export_all(kb)}


def test_every_sigma_rule_passes_pysigma(exported) -> None:  # type: ignore[no-untyped-def]
    issues = backends.validate(list(exported.values()))
    assert len(issues) >= 50  # nearly every rule has a strong line signal
    assert {rid: found for rid, found in issues.items() if found} == {}


def test_each_signal_is_in_the_query_or_named_as_left_out(kb, exported) -> None:  # type: ignore[no-untyped-def]
    for rule in kb.rules.values():
        e = exported[rule.id]
        patterns = e.sigma["detection"]["keywords"]["|re"] if e.sigma else []
        assert len(patterns) == len(e.signals)
        left = "\n".join(e.left_out)
        for s in rule.signals:
            assert s.id in e.signals or f"signal {s.id}:" in left, (rule.id, s.id)
        # a fact of the node is never silently dropped
        assert left.count("condition on") == len(rule.conditions), rule.id


def test_rewritten_patterns_match_the_rules_examples(kb) -> None:  # type: ignore[no-untyped-def]
    checked = 0
    for rule in kb.rules.values():
        for line in rule.examples.get("match", []):
            for s in rule.signals:
                if not s.regex or not regex.search(s.regex, line):
                    continue
                try:
                    re2, _ = rewrite(s.regex, "re2")
                    lucene, _ = rewrite(s.regex, "lucene")
                except Untranslatable:
                    continue
                assert re.search(re2, line), (rule.id, s.id, re2)
                # Lucene matches a regexp against the whole field; its escapes read the same in Python
                assert re.fullmatch(lucene, line, re.S), (rule.id, s.id, lucene)
                checked += 1
    assert checked > 200


def test_constructs_the_engines_lack_are_named() -> None:
    for pattern, why in [(r"(?<!no )error", "lookbehind"), (r"error(?! ignored)", "lookahead"),
                         (r"(a)\1", "backreference")]:
        with pytest.raises(Untranslatable, match=why):
            rewrite(pattern, "re2")
    with pytest.raises(Untranslatable, match="anchor"):
        rewrite(r"a|^b", "lucene")
    assert rewrite(r"\bXid\b", "lucene")[1]  # \b dropped, with a note
    assert rewrite(r"(?i)fallen off", "lucene")[0] == ".*[fF][aA][lL][lL][eE][nN] [oO][fF][fF].*"


def test_three_rules_as_logql_and_lucene(exported) -> None:  # type: ignore[no-untyped-def]
    for rid, text in [("nccl-timeout", "Watchdog caught collective operation timeout"),
                      ("cuda-fork-reinit", "in forked subprocess"),
                      ("xid-fallen-off-bus", "fallen off the bus and is not responding")]:
        loki = backends.convert(exported[rid], "loki")
        lucene = backends.convert(exported[rid], "lucene")
        dsl = json.loads(backends.convert(exported[rid], "dsl") or "null")
        # a raw `...` string, or "..." where a pattern holds a backtick (nccl-timeout's XLA wording does)
        assert loki and loki.startswith("{") and ("|~ `" in loki or '|~ "' in loki) and text in loki
        assert lucene and "message:/.*" in lucene and text in lucene
        assert text in json.dumps(dsl)


def test_export_command() -> None:
    out = run_cli("export", "nccl-timeout", "--format", "json", "--to", "loki")
    assert out.returncode == 0, out.stderr
    [row] = json.loads(out.stdout)
    assert row["rule_id"] == "nccl-timeout" and "Watchdog" in row["loki"]
    bad = run_cli("export", "no-such-rule")
    assert bad.returncode != 0 and bad.stderr.decode().strip().count("\n") == 0 and b"no-such-rule" in bad.stderr
