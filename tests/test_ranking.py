"""Ranking a post-mortem can trust: folding, calibration, unknown failures and their fingerprints."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from conftest import FIXTURES, run_cli

from diagnose import api
from diagnose.kb import selftest

SEED_CHAIN = (
    # real lines: a uv install that replaced torch (fixtures/pip-resolver-replaced-torch--repro-uv-torchvision)
    # followed by the seed's sgl_kernel failure (seed 002) and torchvision's own (seed 003)
    " - torch==2.13.0+cpu\n"
    " + torch==2.15.0\n"
    "ImportError: [sgl_kernel] CRITICAL: Could not load any common_ops library...\n"
)


def test_symptoms_fold_under_their_cause_and_the_cause_ranks_first(kb):
    diagnosis = api.diagnose_texts([("paste", SEED_CHAIN)], kb=kb)
    first = diagnosis.findings[0]
    assert first.rule_id == "pip-resolver-replaced-torch"
    assert [s.rule_id for s in first.symptoms] == ["torch-extension-abi-mismatch"]
    assert all(f.rule_id != "torch-extension-abi-mismatch" for f in diagnosis.findings)
    assert any("symptom torch-extension-abi-mismatch" in r for r in first.reasons)


def test_a_symptom_without_its_cause_is_still_a_candidate(kb):
    diagnosis = api.diagnose_texts([("paste", SEED_CHAIN.splitlines()[-1])], kb=kb)
    assert diagnosis.findings[0].rule_id == "torch-extension-abi-mismatch"


def test_a_contradicting_fact_demotes_and_says_why(kb):
    line = "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 147456, Hardware limit: 101376\n"
    sm120 = api.diagnose_texts([("log", line)], kb=kb)
    assert sm120.findings and sm120.findings[0].rule_id == "sm120-shared-memory-nan"
    h200 = (FIXTURES / "healthy" / "host-h200x2-snapshot" / "nvidia-smi.txt").read_text()
    on_h200 = api.diagnose_texts([("log", line), ("nvidia-smi.txt", h200)], kb=kb)
    assert all(f.rule_id != "sm120-shared-memory-nan" for f in on_h200.findings)
    verdict = next(v for v in on_h200.rejected if v.rule_id == "sm120-shared-memory-nan")
    assert "9.0" in verdict.reason


def test_confidence_is_calibrated_on_the_labelled_fixtures(kb):
    results = [selftest.run_case(c, kb) for c in selftest.find_cases(FIXTURES)]
    cal = selftest.calibration(results)
    assert cal.predictions > 150
    assert cal.brier <= 0.1, cal
    high = [row for row in cal.rows if row[0].startswith(("0.8", "0.9"))]
    assert all(right >= 0.75 for _, n, _, right in high if n >= 10), cal.rows


def test_unknown_failure_gives_the_failing_line_and_a_stable_fingerprint(kb):
    def run(rank: int, addr: str, path: str):
        text = (
            f"[rank{rank}]: Traceback (most recent call last):\n"
            f'[rank{rank}]:   File "{path}/model_runner.py", line 1412, in forward\n'
            f"[rank{rank}]: FluxCapacitorError: capacitor {addr} overloaded at {path}/flux.py:33 with shape [8, 4096]\n"
        )
        return api.diagnose_texts([("run.log", text)], kb=kb)

    a, b = run(0, "0x7f00aa", "/opt/venv/lib"), run(3, "0x11bb", "/home/user/env/lib")
    assert not a.findings
    assert a.unmatched_errors[0].line == 3 and a.unmatched_errors[0].text.startswith("FluxCapacitorError")
    assert a.unmatched_errors[0].fingerprint == b.unmatched_errors[0].fingerprint


def test_rules_draft_writes_a_rule_that_recognises_the_failure(tmp_path: Path):
    log = tmp_path / "run.log"
    log.write_text("Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\n"
                   "FluxCapacitorError: capacitor 0x7f00 overloaded at /opt/a/flux.py:33\n")
    proc = run_cli("rules", "draft", str(log), "--out", str(tmp_path / "draft"))
    assert proc.returncode == 0, proc.stderr.decode()
    [rule_file] = (tmp_path / "draft" / "rules").rglob("*.yaml")
    rule = yaml.safe_load(rule_file.read_text())
    assert rule["examples"]["match"] == ["FluxCapacitorError: capacitor 0x7f00 overloaded at /opt/a/flux.py:33"]
    again = tmp_path / "again.log"
    again.write_text("FluxCapacitorError: capacitor 0x1 overloaded at /srv/b/flux.py:9\n")
    # a KB with an extra rules directory compiles its own Hyperscan databases on first use (about 40 s on one core of
    # the development machine, more on a loaded runner): the limit guards against a hang, not a slow build
    found = run_cli("--rules", str(tmp_path / "draft" / "rules"), "--format", "json", str(again), timeout=300)
    assert rule["id"] in found.stdout.decode()


def test_explain_lists_every_signal_and_condition_and_why_rules_were_rejected():
    line = "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 147456, Hardware limit: 101376\n"
    smi = (FIXTURES / "healthy" / "host-h200x2-snapshot" / "nvidia-smi.txt").read_bytes()
    plain = run_cli("--format", "json", "-", input=NMS_LINE)
    assert all(not f["checks"] for f in json.loads(plain.stdout)["findings"])
    explained = json.loads(run_cli("--format", "json", "--explain", "-", input=NMS_LINE).stdout)
    checks = explained["findings"][0]["checks"]
    assert any(c.startswith("signal nms-does-not-exist") and c.endswith("matched") for c in checks)
    assert any("not seen" in c for c in checks)
    # a near-miss: the SM120 message on an H200 is rejected, and --explain says by which fact
    proc = run_cli("--explain", "-", input=line.encode() + smi)
    assert "sm120-shared-memory-nan" in proc.stdout.decode() and "9.0" in proc.stdout.decode()


NMS_LINE = b"RuntimeError: operator torchvision::nms does not exist\n"


def test_a_fixture_can_require_folded_symptoms(kb, tmp_path):
    (tmp_path / "paste.log").write_text(SEED_CHAIN)
    ok = selftest.run_case(selftest.Case(tmp_path, {"first": "pip-resolver-replaced-torch",
                                                    "symptoms": ["torch-extension-abi-mismatch"]}), kb)
    assert ok.ok, ok.problems
    bad = selftest.run_case(selftest.Case(tmp_path, {"first": "pip-resolver-replaced-torch",
                                                     "symptoms": ["nccl-other"]}), kb)
    assert bad.problems == ["expected nccl-other folded under pip-resolver-replaced-torch"]


def test_multi_rank_evidence_names_its_ranks_and_the_earliest(kb):
    case = FIXTURES / "nccl-timeout--repro-h200x2-torchrun"
    d = api.diagnose([str(p) for p in case.iterdir() if p.name != "expected.yaml"], kb=kb)
    reasons = " ".join(d.findings[0].reasons)
    assert "ranks in the evidence: 0, 1; the earliest is rank 0 (line 142 of" in reasons


def test_a_rank_of_5000_digits_is_no_rank_and_no_exception(kb):
    """The fuzz campaign's input (issue #16): the real multi-rank log with one rank's number swollen."""
    case = FIXTURES / "nccl-timeout--repro-h200x2-torchrun"
    texts = [(p.name, p.read_bytes().replace(b"[rank1]", b"[rank" + b"9" * 5000 + b"]"))
             for p in case.iterdir() if p.name != "expected.yaml"]
    assert any(b"9" * 5000 in t for _, t in texts)
    d = api.diagnose_texts(texts, kb=kb)
    assert d.findings[0].rule_id == "nccl-timeout"
    assert "9" * 5000 not in " ".join(d.findings[0].reasons)


def test_a_generic_line_alone_does_not_name_a_rare_cause(kb):
    # the line torch prints for every failed cuInit: nvidia-uvm-hmm is one of its causes, not the only one
    line = "RuntimeError: CUDA driver initialization failed, you might not have a CUDA gpu.\n"
    diagnosis = api.diagnose_texts([("paste", line)], kb=kb)
    assert diagnosis.findings[0].rule_id == "no-gpu-visible"
    uvm = next(f for f in diagnosis.findings if f.rule_id == "nvidia-uvm-hmm")
    assert uvm.confidence < diagnosis.findings[0].confidence
    assert any("only evidence is the line" in r for r in uvm.reasons)


def test_a_phb_topology_where_nothing_failed_is_not_a_finding(kb):
    # bare-metal EPYC host, two GPUs PHB apart (fixtures/near-miss--vfio-p2p-disabled--aikitoria-13), no P2P table
    topo = (FIXTURES / "near-miss--vfio-p2p-disabled--aikitoria-13" / "topo.txt").read_text().splitlines()[:7]
    diagnosis = api.diagnose_texts([("topo.txt", "\n".join(topo) + "\n")], kb=kb)
    assert diagnosis.facts.topology, "the topology was read"
    assert not diagnosis.findings


def test_a_crash_loop_repeated_past_the_evidence_cap_is_not_listed_as_unexplained(kb):
    # the H200 reproduction's crash, 45 times in one log (a server restarted by its supervisor): past the first
    # 20 the signals keep no more evidence, yet the 45th traceback is the failure the finding explains
    crash = (FIXTURES / "device-side-assert--repro-h200-embedding" / "fail-device-assert.log").read_text()
    diagnosis = api.diagnose_texts([("loop.log", crash * 45)], kb=kb)
    assert diagnosis.findings[0].rule_id == "device-side-assert"
    assert [e.text for e in diagnosis.unmatched_errors] == []


def test_an_oom_line_whose_numbers_show_another_process_holding_the_gpu_names_that_cause(kb):
    # PyTorch < 2.1 wording, the sizes of a real report (pytorch-CycleGAN-and-pix2pix#962): 10.76 GiB card, 2.75 GiB
    # reserved by the failing process, 26 MiB free -> about 8 GiB held elsewhere
    shared = ("RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 10.76 GiB total capacity; 2.42 GiB "
              "already allocated; 26.12 MiB free; 2.75 GiB reserved in total by PyTorch)\n")
    # the same wording where the failing process holds nearly all of its 6 GiB card (fixtures' own line)
    alone = ("RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 6.00 GiB total capacity; 4.11 GiB "
             "already allocated; 34.82 MiB free; 4.42 GiB reserved in total by PyTorch)\n")
    first = api.diagnose_texts([("train.log", shared)], kb=kb).findings[0]
    assert first.rule_id == "gpu-memory-held-by-other-process"
    assert [s.rule_id for s in first.symptoms] == ["cuda-oom"]
    assert any("7.98 GiB (74%) held by other processes" in r for r in first.reasons)
    diagnosis = api.diagnose_texts([("train.log", alone)], kb=kb)
    assert [f.rule_id for f in diagnosis.findings] == ["cuda-oom"]


def test_an_english_error_written_against_chinese_text_still_matches_its_signals(kb):
    # real reports write the error straight after the Chinese words, no space: `显示HeaderTooLarge` (ms-swift#3764);
    # to a Unicode \b the Han characters are word characters, so a signal's \b must see the edge there
    first = api.diagnose_texts([("report.md", "显示HeaderTooLarge\n")], kb=kb).findings[0]
    assert first.rule_id == "checkpoint-corrupt-or-incomplete"
    assert first.evidence[0].text == "显示HeaderTooLarge"  # the evidence is the line as written


def test_a_line_the_generic_rule_takes_only_with_its_catch_all_belongs_to_the_cause_it_names(kb):
    # NCCL's WARN for a collective captured into a CUDA graph (a TP=2 engine with graphs on): nccl-other takes the
    # line only as "an NCCL WARN", the capture rule by the words that name the failure
    line = "misc/strongstream.cc:378 NCCL WARN Cuda failure 'operation failed due to a previous error during capture'\n"
    diagnosis = api.diagnose_texts([("nccl-debug.log", line)], kb=kb)
    assert diagnosis.findings[0].rule_id == "cuda-graph-capture-failed"
    assert [s.rule_id for s in diagnosis.findings[0].symptoms] == ["nccl-other"]
