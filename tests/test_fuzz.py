"""Property tests over any text: every parser is total, and the whole pipeline accounts for every
input and answers the JSON contract. A small budget here (CI); benchmarks/fuzz_campaign.py runs
the long campaign with the same hostile pieces.
"""

from __future__ import annotations

import bz2
import gzip
import json
import lzma

import jsonschema
import pytest
from conftest import ROOT, tar_with_link

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from diagnose import api  # noqa: E402
from diagnose.artifacts import host, nvidia_smi, nvsmi_query, pip, pylog, topology  # noqa: E402
from diagnose.errors import InputError  # noqa: E402
from diagnose.render import RENDERERS  # noqa: E402

SCHEMA = json.loads((ROOT / "docs" / "diagnosis.schema.json").read_text())
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)

# real shapes of every artifact kind, and the pieces that broke them (issue #16)
FRAGMENTS = [
    "| NVIDIA-SMI 570.86.15              Driver Version: 570.86.15      CUDA Version: 12.8     |",
    "|   0  NVIDIA H200                    On  |   00000000:18:00.0 Off |                    0 |",
    "| N/A   32C    P0             75W /  700W |       1MiB / 143771MiB |      0%      Default |",
    "==============NVSMI LOG==============", "Driver Version                            : 580.159.04",
    "GPU 00000000:18:00.0", "    Product Name                          : NVIDIA H200", "    Minor Number : 3",
    "    FB Memory Usage", "        Total                             : 143771 MiB", "    Remapped Rows",
    "        Pending                           : No", "    ECC Errors", "        Volatile",
    "            DRAM Uncorrectable            : 0",
    "index, name, driver_version, pci.bus_id, memory.total [MiB], compute_cap",
    "0, NVIDIA H200, 580.159.04, 00000000:18:00.0, 143771 MiB, 9.0",
    "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity", "GPU0\t X \tNV18\t0-47\t0", "GPU1\tNV18\t X \t0-47\t0",
    "GPU 0: NVIDIA H200 (UUID: GPU-5f2b1c3a-8d4e-4f6a-9b0c-1d2e3f4a5b6c)", "\t Link 0: 26.562 GB/s",
    "torch==2.9.1+cu128", "Package    Version", "---------- -------", "vllm       0.11.0",
    '[{"name": "torch", "version": "2.9.1"}]', '[{"name": null}]',
    "Collecting environment information...", "PyTorch version: 2.9.1+cu128", "GPU 0: NVIDIA H200",
    "Nvidia driver version: 580.159.04", "[pip3] torch==2.9.1", "Successfully installed torch-2.9.1",
    "[ 8341.513252] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU has fallen off the bus.",
    "Linux gpu-01 6.8.0-45-generic #45-Ubuntu SMP", "/sys/module/nvidia/parameters/NVreg_OpenRmEnableUnsupportedGpus: 1",
    "Traceback (most recent call last):", '  File "/srv/app.py", line 3, in <module>',
    "RuntimeError: operator torchvision::nms does not exist", "\x1b[31mERROR\x1b[0m boom", "\x1b]0;title",
    "{", '  "diagnose_collect": "nvml",', '  "gpus": [{"index": "x", "bus_id": "GG:18:00.0"}],',
    '  "pairs": [{"a": null}],', '  "items": 5', "}", '{"diagnose_collect": "manifest", "items": [{"name": 1}]}',
    "<nvidia_smi_log><gpu id=\"00000000:18:00.0\"><minor_number>²</minor_number></gpu></nvidia_smi_log>",
]
HOSTILE = ["²", "①", "٣", "GG", "9" * 5000, "\x1b]", "\x00", " " * 3000, ":", "[", "{", '"', "\t", "N/A", "-1",
           "null", "\ufffd", "é", "\x1b[", "," * 50]


@st.composite
def mutated(draw: st.DrawFn) -> str:
    line = draw(st.sampled_from(FRAGMENTS))
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(line)))
        line = line[:at] + draw(st.sampled_from(HOSTILE)) + line[at + draw(st.integers(0, 3)):]
    return line * draw(st.sampled_from([1, 1, 1, 2, 40]))


LINES = st.lists(st.one_of(st.sampled_from(FRAGMENTS), mutated(), st.text(max_size=80)), max_size=40)
BLOCK_PARSERS = [nvidia_smi.parse_table, nvidia_smi.parse_csv, nvsmi_query.parse_query, topology.parse_matrix,
                 topology.parse_list, host.parse_env_report]
TEXT_PARSERS = [nvsmi_query.parse_xml, host.parse_json_doc, pip.parse_list_json]
LINE_PARSERS = [host.line_facts, host.parse_xid, host.log_time, pip.parse_freeze_line, pip.is_freeze_line,
                pip.parse_install_line, pylog.strip_ansi, pylog.is_exception_line, nvsmi_query.is_query_line]


@FUZZ
@given(LINES)
def test_every_parser_is_total_over_any_text(lines):
    for parse in BLOCK_PARSERS:
        parse(lines)
    for parse_text in TEXT_PARSERS:
        parse_text("\n".join(lines))
    tracker = pylog.TracebackTracker()
    for i, line in enumerate(lines, 1):
        for parse_line in LINE_PARSERS:
            parse_line(line)
        tracker.feed(i, line)


def _wrap(data: bytes, how: str) -> bytes:
    if how == "gzip":
        return gzip.compress(data)
    if how == "bzip2":
        return bz2.compress(data)
    if how == "xz":
        return lzma.compress(data)
    if how == "truncated-gzip":
        return gzip.compress(data)[: max(10, len(data) // 3)]
    if how == "tar":
        return tar_with_link("logs/server.log", data, "logs/latest")
    if how == "utf-16":
        return b"\xff\xfe" + data.decode("utf-8", "replace").encode("utf-16-le")
    return data


ARTIFACTS = st.lists(
    st.tuples(LINES.map(lambda ls: "\n".join(ls).encode("utf-8", "surrogatepass")),
              st.sampled_from(["plain", "plain", "gzip", "bzip2", "xz", "truncated-gzip", "tar", "utf-16"])),
    min_size=1, max_size=4)


@FUZZ
@given(ARTIFACTS)
def test_the_pipeline_accounts_for_every_input_and_answers_the_schema(kb, artifacts):
    named = [(f"input-{i}.log", _wrap(data, how)) for i, (data, how) in enumerate(artifacts)]
    try:
        diagnosis = api.diagnose_texts(named, kb=kb)
    except InputError as exc:
        assert str(exc).startswith(("nothing to diagnose", "input-")), exc
        return
    seen = {i.source.split(":", 1)[0] for i in diagnosis.inputs} | {s.source.split(":", 1)[0] for s in diagnosis.skipped}
    assert {name for name, _ in named} <= seen  # nothing the user gave is absent
    notes = [n for i in diagnosis.inputs for n in i.notes]
    assert not [n for n in notes if "could not be parsed" in n], notes  # no parser raised
    jsonschema.validate(json.loads(RENDERERS["json"](diagnosis)), SCHEMA)


@FUZZ
@given(st.binary(max_size=2000), st.sampled_from(["gzip", "bzip2", "xz", "truncated-gzip", "tar", "utf-16", "plain"]))
def test_any_bytes_in_any_wrapping_are_diagnosed_or_skipped_with_a_reason(kb, data, how):
    try:
        diagnosis = api.diagnose_texts([("blob", _wrap(data, how))], kb=kb)
    except InputError as exc:
        assert "blob" in str(exc)
        return
    assert diagnosis.inputs or diagnosis.skipped
