"""Confidence calibration: a printed confidence is what that raw score has meant on logs the KB was not tuned on."""

from __future__ import annotations

from conftest import FIXTURES

from diagnose import api
from diagnose.engine.calibrate import GUESS_MAX, REPORT_FLOOR, SECOND_FLOOR, calibrate, interpolate, unreliable
from diagnose.model import Finding


def _finding(rule_id: str, confidence: float, basis: str = "log") -> Finding:
    return Finding(rule_id, rule_id, "c", "high", confidence, "", [], basis=basis)


def test_the_shipped_table_is_monotone_and_from_measured_sets(kb):
    table = kb.compat["confidence-calibration"]
    rows = table["rows"]
    assert sum(r["findings"] for r in rows) >= 300  # fitted on hundreds of first measurements, not a handful
    assert all(0 <= r["right"] <= r["findings"] for r in rows)
    values = [interpolate(rows, x / 100) for x in range(0, 101)]
    assert values == sorted(values), "a higher raw score must never read as less sure"
    assert all(s.startswith("holdout") for s in table["sources"])


def test_a_raw_score_that_was_right_nine_times_in_ten_reads_so(kb):
    rows = kb.compat["confidence-calibration"]["rows"]
    for row in rows:
        if row["findings"] >= 20:  # enough findings for the share to mean something
            share = row["right"] / row["findings"]
            assert abs(interpolate(rows, row["raw"]) - share) < 0.1, row


def test_a_second_finding_cannot_also_be_nearly_certain(kb):
    first, second = _finding("a", 0.9), _finding("b", 0.88)
    calibrate([first, second], kb.compat)
    assert first.confidence > 0.9
    assert second.confidence == max(SECOND_FLOOR, round(1 - first.confidence, 3))
    assert any("ranked below" in r for r in second.reasons)


def test_a_cut_traceback_is_never_raised_and_a_guess_stays_a_guess(kb):
    cut, = [_finding("a", 0.5, "cut")]
    calibrate([cut], kb.compat)
    assert cut.confidence <= 0.5
    guess = _finding("b", 0.5, "guess")
    calibrate([guess], kb.compat)
    assert guess.confidence <= GUESS_MAX


def test_a_score_the_table_rates_nearly_never_right_is_withheld_not_reported():
    compat = {"confidence-calibration": {"rows": [
        {"raw": 0.3, "calibrated": 0.06, "findings": 8, "right": 0, "raw_range": "0.30-0.30"},
        {"raw": 0.45, "calibrated": 0.7, "findings": 99, "right": 71, "raw_range": "0.40-0.50"},
        {"raw": 0.9, "calibrated": 0.95, "findings": 300, "right": 288, "raw_range": "0.85-0.95"}]}}
    weak, fair, strong = _finding("a", 0.3), _finding("b", 0.45), _finding("c", 0.9)
    assert interpolate(compat["confidence-calibration"]["rows"], 0.3) < REPORT_FLOOR
    withheld = unreliable([weak, fair, strong], compat)
    assert [f.rule_id for f, _ in withheld] == ["a"]
    assert "0 were the true cause" in withheld[0][1] and "not reported" in withheld[0][1]
    # a cause named from a cut traceback or by similarity has its own bound, so it is kept
    assert unreliable([_finding("d", 0.3, "cut"), _finding("e", 0.3, "guess")], compat) == []
    assert unreliable([weak], {}) == []  # without a table nothing is withheld


def test_a_withheld_finding_is_a_near_miss_with_its_reason(kb, tmp_path, monkeypatch):
    # vLLM's platform line alone is a symptom (also a CPU-only torch) weighted 0.3; with a table that rates 0.3 as
    # almost never right, the user gets no finding and --explain says why, with the table's figures
    monkeypatch.setitem(kb.compat, "confidence-calibration", {"rows": [
        {"raw": 0.3, "calibrated": 0.05, "findings": 9, "right": 0, "raw_range": "0.30-0.30"},
        {"raw": 0.9, "calibrated": 0.95, "findings": 300, "right": 288, "raw_range": "0.85-0.95"}]})
    log = tmp_path / "server.log"
    log.write_text("INFO 05-20 20:12:25 [__init__.py:252] No platform detected, vLLM is running on UnspecifiedPlatform\n")
    diagnosis = api.diagnose([str(log)], kb=kb)
    assert diagnosis.findings == []
    near = [v for v in diagnosis.rejected if v.rule_id == "no-gpu-visible"]
    assert near and "not reported" in near[0].reason and "0 were the true cause" in near[0].reason
    assert near[0].matched == ["vllm-unspecified-platform"]


def test_a_failed_registry_import_is_not_an_unsupported_architecture(kb, tmp_path):
    # vLLM's "architectures are not supported" after its registry subprocess could not import a package: the
    # import, not the architecture, failed, so the architecture finding is argued below the reporting line
    log = tmp_path / "server.log"
    log.write_text(
        "ERROR 10-25 00:26:24 registry.py:272] ModuleNotFoundError: No module named 'transformers'\n"
        "ValueError: Model architectures ['LlamaForCausalLM'] are not supported for now. Supported architectures: "
        "dict_keys(['LlamaForCausalLM', 'MistralForCausalLM'])\n")
    diagnosis = api.diagnose([str(log)], kb=kb)
    assert "engine-unsupported-architecture" not in [f.rule_id for f in diagnosis.findings]
    assert any(v.rule_id == "engine-unsupported-architecture" for v in diagnosis.rejected)


def test_the_reason_says_what_the_raw_score_was_and_what_it_meant(kb):
    log = FIXTURES / "torch-extension-abi-mismatch--seed-002" / "verify.log"
    first = api.diagnose([str(log)], kb=kb).findings[0]
    said = [r for r in first.reasons if "calibrated from" in r]
    assert len(said) == 1 and "were the true cause" in said[0]
    assert f"{first.confidence:.2f}" in said[0]


def test_without_a_table_the_raw_scores_stand():
    finding = _finding("a", 0.6)
    calibrate([finding], {})
    assert finding.confidence == 0.6 and not finding.reasons
