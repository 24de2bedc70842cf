"""The catalogues (rules/catalog/): they load and validate, findings and unmatched errors quote them,
and a CUDA error is recognised the same by its enum name, its message and its number.

The log lines are real: copied from fixtures/ (named beside each) or from public threads.
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import jsonschema
import pytest
import regex

from diagnose import api
from diagnose.kb import catalog, catalog_docs, catalog_schema, compiled, lint, loader
from diagnose.render import RENDERERS

ROOT = Path(__file__).resolve().parents[1]
RULES = ROOT / "rules"
# fixtures/near-miss--xid-fallen-off-bus--pytorch-51382/dmesg.log (pytorch/pytorch#51382)
XID_31 = ("[Fri Jan 29 23:42:34 2021] NVRM: Xid (PCI:0000:db:00): 31, pid=13641, Ch 00000008, intr 00000000. "
          "MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_10 faulted @ 0x7fd7_90743000. Fault is of type FAULT_PDE "
          "ACCESS_TYPE_VIRT_READ")
# rules/hardware/xid-other.yaml examples (a real Xid 109 capture)
XID_109 = ("[Fri Aug 30 11:43:14 2024] NVRM: Xid (PCI:0000:cb:00): 109, pid=1797828, name=pt_main_thread, "
           "Ch 00000008, errorString CTX SWITCH TIMEOUT, Info 0x58005")
# the three wordings of CUDA error 700
ILLEGAL_ADDRESS = [
    "torch.AcceleratorError: CUDA error: an illegal memory access was encountered",  # fixtures/ (PyTorch 2.9)
    # PyTorch's hint line after it (fixtures/), and cupy's exception (a public GeoTIFF reader's changelog)
    "Search for `cudaErrorIllegalAddress' in https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html "
    "for more information.",
    "    cupy.cuda.runtime.CUDARuntimeError: cudaErrorIllegalAddress",
    # a TensorRT YOLOv8 sample's log, quoted in a public repository's issue notes
    "CUDA error 700 at /home/cdy/Data_HDD/Projects/VideoPipe/third_party/trt_yolov8/trt_yolov8_detector.cpp:90",
]
# fixtures/ (a vLLM engine log on an NVSwitch host) and a public thread (error 804 in a venv)
ERROR_802 = ("ERROR 02-20 16:43:12 engine.py:389] Unexpected error from cudaGetDeviceCount(). Did you run some cuda "
             "functions before calling NumCudaDevices() that might have already set an error? Error 802: system "
             "not yet initialized")
ERROR_804 = ("UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did you run some cuda "
             "functions before calling NumCudaDevices() that might have already set an error? Error 804: forward "
             "compatibility was attempted on non supported HW (Triggered internally at "
             "/pytorch/c10/cuda/CUDAFunctions.cpp:119.)")
NOT_CUDA = [
    "make[2]: *** [CMakeFiles/foo.dir/build.make:76: foo.o] Error 2",
    "INFO 06-01 10:00:00 metrics.py:341] Avg prompt throughput: 700.0 tokens/s, 700 ms",
    "error: subprocess-exited-with-error, error code 1",
]


def schema() -> dict:
    return json.loads((ROOT / "docs" / "diagnosis.schema.json").read_text())


def test_the_catalogues_load_and_validate(kb):
    assert len(kb.catalog.xids) >= 172 and len(kb.catalog.cuda) >= 130
    for path in catalog_schema.catalog_paths([RULES]):
        table, _ = catalog_schema.validate(path)
        assert table.sources and all(row.source.startswith("https://") for row in table.rows)
    xid = kb.catalog.xids
    assert xid[79]["rules"] == ["xid-fallen-off-bus"] and xid[79]["immediate"] == "RESTART_BM"
    assert {n for n, r in xid.items() if r["rules"] == ["xid-ecc-uncorrectable"]} == {48, 63, 64, 94, 95}
    assert {n for n, r in xid.items() if r["rules"] == ["nvlink-error"]} == {74, *range(144, 151)}
    assert xid[31]["mnemonic"] == "ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT" and xid[31]["causes"] == ["hw", "driver", "user-app"]
    row = kb.catalog.cuda[700]
    assert (row["runtime"], row["driver"], row["message"]) == (
        "cudaErrorIllegalAddress", "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered")
    assert kb.catalog.cuda[802]["rules"] == ["fabric-manager-missing"]


def test_lint_accepts_the_shipped_catalogues_and_names_a_wrong_rule_id(tmp_path, kb):
    issues = [i for i in lint.lint([RULES]) if "catalog" in i.where]
    assert not issues, [str(i) for i in issues]
    shutil.copytree(RULES / "catalog", tmp_path / "catalog")
    path = tmp_path / "catalog" / "xid.yaml"
    text = path.read_text().replace("rules: [xid-fallen-off-bus]", "rules: [xid-falen-off-bus]")
    path.write_text(text)
    found = catalog_schema.lint([tmp_path], set(kb.rules))
    assert [i.severity for i in found if "xid-falen-off-bus" in i.message] == ["error"]
    # a taxonomy id whose rule is still being written is accepted while it is pending ...
    path.write_text(text.replace("pending_rules: []", "pending_rules: [xid-falen-off-bus, xid-other]"))
    found = catalog_schema.lint([tmp_path], set(kb.rules))
    assert not any(i.severity == "error" for i in found)
    # ... and once it is a rule, lint asks for it to leave the list
    assert any("'xid-other' is a rule now" in i.message and i.severity == "warning" for i in found)


def test_a_catalogue_typo_is_an_error_with_its_line(tmp_path):
    shutil.copytree(RULES / "catalog", tmp_path / "catalog")
    path = tmp_path / "catalog" / "cuda-errors.yaml"
    path.write_text(path.read_text().replace("  runtime: cudaErrorIllegalAddress", "  runtime: cudaIllegalAddress"))
    with pytest.raises(Exception, match=r"cuda-errors\.yaml:\d+: rows\.\d+\.runtime"):
        catalog_schema.load([tmp_path])


def test_the_catalogues_are_part_of_the_kb_cache_key(tmp_path):
    shutil.copytree(RULES / "catalog", tmp_path / "catalog")
    before = compiled._content_hash([tmp_path])
    path = tmp_path / "catalog" / "xid.yaml"
    path.write_text(path.read_text().replace("GPU memory page fault", "GPU memory page fault (edited)"))
    assert compiled._content_hash([tmp_path]) != before


def test_an_xid_31_finding_names_the_catalogue_row_in_json():
    diagnosis = api.diagnose_texts([("dmesg.log", XID_31 + "\n")])
    data = json.loads(RENDERERS["json"](diagnosis))
    jsonschema.validate(data, schema())
    finding = data["findings"][0]
    assert finding["rule_id"] == "xid-other"
    note = finding["catalog"][0]
    assert (note["kind"], note["number"], note["known"]) == ("xid", 31, True)
    assert note["name"] == "ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT" and note["title"] == "GPU memory page fault"
    assert note["action"].startswith("restart the application") and note["reset"] is False
    assert note["source"] == "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"
    assert finding["fix"][0]["step"].startswith("Xid 31 (GPU memory page fault")


@pytest.mark.parametrize("fmt", ["text", "markdown", "slack"])
def test_every_format_carries_the_xid_note(fmt):
    diagnosis = api.diagnose_texts([("dmesg.log", XID_31 + "\n")])
    assert "Xid 31 (GPU memory page fault" in RENDERERS[fmt](diagnosis)


def test_an_xid_the_catalogue_lacks_still_gives_xid_other_with_a_note(kb):
    partial = copy.copy(kb)
    partial.catalog = copy.copy(kb.catalog)
    partial.catalog.xids = {n: r for n, r in kb.catalog.xids.items() if n != 109}
    diagnosis = api.diagnose_texts([("dmesg.log", XID_109 + "\n")], kb=partial)
    finding = diagnosis.findings[0]
    assert finding.rule_id == "xid-other"
    assert finding.catalog[0].known is False and finding.catalog[0].number == 109
    assert "is not in NVIDIA's Xid catalog" in finding.fix[0]["step"]
    jsonschema.validate(json.loads(RENDERERS["json"](diagnosis)), schema())


def test_an_xid_number_of_5000_digits_is_no_catalogue_row_and_no_exception(kb):
    """The fuzz campaign's input (issue #16): int() refuses over 4,300 digits."""
    line = XID_31.replace(": 31,", ": " + "9" * 5000 + ",")
    assert line != XID_31 and catalog.mentions(kb.catalog, line) == []
    diagnosis = api.diagnose_texts([("dmesg.log", line + "\n" + XID_31 + "\n")], kb=kb)
    assert [(n.kind, n.number) for n in diagnosis.findings[0].catalog] == [("xid", 31)]


@pytest.mark.parametrize("line", ILLEGAL_ADDRESS)
def test_cuda_error_700_is_recognised_by_name_message_and_number(kb, line):
    assert catalog.mentions(kb.catalog, line) == [("cuda-error", 700)]
    signal = catalog.signal_regex(kb.catalog, ["cudaErrorIllegalAddress"])
    assert regex.search(signal, line)
    assert catalog.signal_regex(kb.catalog, ["CUDA_ERROR_ILLEGAL_ADDRESS"]) == signal


@pytest.mark.parametrize(("line", "code"), [(ERROR_802, 802), (ERROR_804, 804)])
def test_error_n_colon_after_cudagetdevicecount(kb, line, code):
    assert ("cuda-error", code) in catalog.mentions(kb.catalog, line)


@pytest.mark.parametrize("line", NOT_CUDA)
def test_a_bare_number_is_not_a_cuda_error(kb, line):
    assert catalog.mentions(kb.catalog, line) == []
    assert not regex.search(catalog.signal_regex(kb.catalog, ["cudaErrorMemoryAllocation", "cudaErrorInvalidValue"]), line)


def test_the_old_thc_numbering_is_not_read_as_a_number(kb):
    # PyTorch <= 1.x (THC) on CUDA <= 10.0: 59 was the assert; today 59 is no error at all
    line = "RuntimeError: cuda runtime error (59) : device-side assert triggered at /pytorch/aten/src/THC/generic/THCTensorMath.cu:26"
    assert catalog.mentions(kb.catalog, line) == [("cuda-error", 710)]


def test_a_cuda_error_signal_compiles_at_kb_build_and_an_unknown_name_is_a_rule_error(kb, tmp_path):
    ecc = kb.rules["xid-ecc-uncorrectable"]
    sig = next(s for s in ecc.signals if s.cuda_error)
    assert sig.cuda_error == ["cudaErrorECCUncorrectable"] and "uncorrectable ECC error encountered" in (sig.regex or "")
    assert lint.check_regex(sig.regex or "") is None
    with pytest.raises(Exception, match="unknown CUDA error 'cudaErrorNoSuchThing'"):
        catalog.compile_signal(kb.catalog, ["cudaErrorNoSuchThing"], "rule.yaml: sig")


def test_an_unmatched_cuda_error_carries_the_catalogue_meaning():
    # the exception line is a real PyTorch wording (CUDA error 400); no rule claims it
    log = ('Traceback (most recent call last):\n  File "/app/serve.py", line 88, in step\n    out = graph.replay()\n'
           "RuntimeError: CUDA error: invalid resource handle\n")
    diagnosis = api.diagnose_texts([("server.log", log)])
    unmatched = [e for e in diagnosis.unmatched_errors if e.catalog]
    assert unmatched and unmatched[0].catalog[0].number == 400
    data = json.loads(RENDERERS["json"](diagnosis))
    jsonschema.validate(data, schema())
    assert any(e.get("catalog") for e in data["unmatched_errors"])
    assert "CUDA error 400 (cudaErrorInvalidResourceHandle" in RENDERERS["text"](diagnosis)


def test_catalogue_docs_are_generated_from_the_data():
    stale = catalog_docs.drift(loader.default_rules_dir(), ROOT / "docs" / "catalog")
    assert not stale, f"run `diagnose rules docs`: {stale}"
