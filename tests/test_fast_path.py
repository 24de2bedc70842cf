"""The prefilter (Hyperscan over blocks) must give the same findings as reading every line."""

from __future__ import annotations

import pytest
from conftest import FIXTURES

from diagnose import api
from diagnose.artifacts import prefilter, reader, sniff
from diagnose.kb.selftest import find_cases

CASES = [c for c in find_cases(FIXTURES) if not c.expected.get("healthy")] + [
    c for c in find_cases(FIXTURES) if c.expected.get("healthy")
][::4]


def summary(diagnosis):
    def walk(findings):
        for f in findings:
            yield f.rule_id, tuple(sorted((e.source, e.line) for e in f.evidence)), round(f.confidence, 3)
            yield from walk(f.symptoms)

    return sorted(walk(diagnosis.findings)), [(e.source, e.line) for e in diagnosis.unmatched_errors]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_same_findings_every_line_and_through_the_block_prefilter(case, kb, monkeypatch):
    every_line = summary(api.diagnose(case.artifacts(), kb=kb, use_prefilter=False))
    monkeypatch.setattr(reader, "SMALL_INPUT", 0)  # force the block prefilter even on small inputs
    through_blocks = summary(api.diagnose(case.artifacts(), kb=kb))
    assert through_blocks[0] == every_line[0]


@pytest.mark.parametrize("case", CASES[::5], ids=lambda c: c.name)
def test_same_findings_without_hyperscan(case, kb, monkeypatch):
    if prefilter.hyperscan_module() is None:
        pytest.skip("hyperscan is not installed here: the fallback is the only path")
    with_hs = summary(api.diagnose(case.artifacts(), kb=kb))
    monkeypatch.setenv("DIAGNOSE_NO_HYPERSCAN", "1")
    monkeypatch.setattr(reader, "SMALL_INPUT", 0)
    without = summary(api.diagnose(case.artifacts(), kb=kb))
    assert without[0] == with_hs[0]


@pytest.mark.parametrize("case", CASES[::15], ids=lambda c: c.name)
def test_same_findings_without_hyperscan_or_re2(case, kb, monkeypatch):
    """The last fallback (each pattern through `regex`) still gives the reading of every line."""
    every_line = summary(api.diagnose(case.artifacts(), kb=kb, use_prefilter=False))
    monkeypatch.setenv("DIAGNOSE_NO_HYPERSCAN", "1")
    monkeypatch.setenv("DIAGNOSE_NO_RE2", "1")
    monkeypatch.setattr(reader, "SMALL_INPUT", 0)
    assert summary(api.diagnose(case.artifacts(), kb=kb))[0] == every_line[0]


def test_the_re2_fallback_is_the_one_used_without_hyperscan(kb, monkeypatch):
    pytest.importorskip("re2")
    monkeypatch.setenv("DIAGNOSE_NO_HYPERSCAN", "1")
    built = prefilter.Prefilter([s.regex for _, s in kb.signals() if s.regex])
    assert built._re2 is not None
    assert len(built._slow) < len(built.patterns) // 10  # RE2 takes nearly every pattern once widened


def test_block_mode_keeps_true_line_numbers(tmp_path, kb, monkeypatch):
    log = tmp_path / "big.log"
    filler = b"INFO 11-29 10:00:00 [engine.py:1] Avg prompt throughput: 1.0 tokens/s\n" * 200_000
    log.write_bytes(filler + b"RuntimeError: operator torchvision::nms does not exist\n" + filler)
    diagnosis = api.diagnose([str(log)], kb=kb)
    finding = diagnosis.findings[0]
    assert finding.rule_id == "torchvision-torch-mismatch"
    assert finding.evidence[0].line == 200_001
    assert any("selected by the prefilter" in n for i in diagnosis.inputs for n in i.notes)
    assert sum(i.lines for i in diagnosis.inputs) == 400_001


def test_a_crash_loop_gives_the_same_report_when_the_reader_skips_repeated_lines(tmp_path, kb, monkeypatch):
    # real text: an SGLang start-up (fixtures/healthy) and the H200 device-side-assert reproduction, restarted
    # 400 times; its assert lines repeat in shape, so past each signal's 20 hits the block reader skips them
    startup = (FIXTURES / "healthy" / "server-sglang-startup-pr11830" / "server.log").read_bytes()
    crash = (FIXTURES / "device-side-assert--repro-h200-embedding" / "fail-device-assert.log").read_bytes()
    log = tmp_path / "loop.log"
    log.write_bytes((startup + crash) * 400)
    every_line = api.diagnose([str(log)], kb=kb, use_prefilter=False)
    skipped = []
    original = sniff._Scanner._count_folded

    def count_folded(self):
        skipped.append(self.source.folded)
        original(self)

    monkeypatch.setattr(sniff._Scanner, "_count_folded", count_folded)
    monkeypatch.setattr(reader, "SMALL_INPUT", 0)
    through_blocks = api.diagnose([str(log)], kb=kb)
    assert sum(skipped) > 1000  # the repeats were skipped, not read
    assert summary(through_blocks) == summary(every_line)
    assert [(e.line, e.text) for e in through_blocks.findings[0].evidence] == \
        [(e.line, e.text) for e in every_line.findings[0].evidence]
    assert [(i.kind, i.lines) for i in through_blocks.inputs] == [(i.kind, i.lines) for i in every_line.inputs]
    assert through_blocks.facts == every_line.facts
