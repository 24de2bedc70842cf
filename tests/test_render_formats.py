"""Markdown post-mortems and Slack messages: golden files from real fixtures, Slack's own models, limits.

The golden files render a diagnosis frozen in tests/golden/<case>.diagnosis.json (made from the real
fixtures named below), so that a change to the KB does not churn them; a change to a renderer does.
Regenerate after an intended change, then read the diff:

    DIAGNOSE_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_render_formats.py
"""

from __future__ import annotations

import json
import os
import re
import typing
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, ROOT

from diagnose import api, model, record
from diagnose.kb.selftest import find_cases
from diagnose.model import Diagnosis, Evidence, Finding
from diagnose.redact import redact_diagnosis
from diagnose.render import RENDERERS, markdown, slack, timeline

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("DIAGNOSE_UPDATE_GOLDEN") == "1"
H200X2 = FIXTURES / "healthy" / "host-h200x2-snapshot"
CASES: dict[str, list[tuple[str, Path | bytes]]] = {
    "torch-extension-abi-mismatch": [("verify.log", FIXTURES / "torch-extension-abi-mismatch--seed-002" / "verify.log")],
    "nccl-timeout-h200x2": [
        ("fail-nccl-timeout.log", FIXTURES / "nccl-timeout--repro-h200x2-torchrun" / "fail-nccl-timeout.log"),
        ("nvidia-smi.txt", H200X2 / "nvidia-smi.txt"),
        ("pip-freeze.txt", H200X2 / "pip-freeze.txt"),
    ],
    "xid-ecc-syslog": [("syslog.log", FIXTURES / "xid-ecc-uncorrectable--gpu-operator-1146" / "syslog.log")],
    "healthy-no-finding": [
        ("allreduce.log", next((FIXTURES / "healthy" / "nccl-allreduce-h200x2-repro").glob("*.log"))),
        ("core.bin", b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 4),
    ],
}


def _build(cls: Any, data: Any) -> Any:
    """A model record back from its asdict() form."""
    hints = typing.get_type_hints(cls, vars(model))
    kwargs = {f.name: _convert(hints[f.name], data[f.name]) for f in record.fields(cls) if f.name in data}
    return cls(**kwargs)


def _convert(tp: Any, value: Any) -> Any:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if record.is_record(tp):
        return _build(tp, value)
    if origin is list and value is not None:
        return [_convert(args[0], v) for v in value]
    if origin is tuple:
        return tuple(value)
    return value


def frozen(case: str) -> Diagnosis:
    path = GOLDEN / f"{case}.diagnosis.json"
    if UPDATE:
        artifacts = [(name, src.read_bytes() if isinstance(src, Path) else src) for name, src in CASES[case]]
        diagnosis = api.diagnose_texts(artifacts)
        diagnosis.kb_version = "0.0.0+golden"
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(json.dumps(record.asdict(diagnosis), indent=1, ensure_ascii=False) + "\n")
    return _build(Diagnosis, json.loads(path.read_text()))


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if UPDATE:
        path.write_text(text)
    assert path.exists(), f"{path} is missing: run with DIAGNOSE_UPDATE_GOLDEN=1"
    assert text == path.read_text(), f"{name} differs from its golden file; DIAGNOSE_UPDATE_GOLDEN=1 regenerates it"


@pytest.mark.parametrize("case", list(CASES))
def test_markdown_golden(case):
    check_golden(f"{case}.md", RENDERERS["markdown"](frozen(case)))


@pytest.mark.parametrize("case", list(CASES))
def test_slack_golden(case):
    text = RENDERERS["slack"](redact_diagnosis(frozen(case)))
    check_golden(f"{case}.slack.json", text)
    validate_with_slack_sdk(json.loads(text))


def test_the_frozen_diagnoses_still_name_the_fixtures_causes(kb):
    """A golden stays a real case: the engine today still names the frozen top cause."""
    for case, sources in CASES.items():
        live = api.diagnose_texts([(n, s.read_bytes() if isinstance(s, Path) else s) for n, s in sources], kb=kb)
        assert [f.rule_id for f in live.findings[:1]] == [f.rule_id for f in frozen(case).findings[:1]], case


def validate_with_slack_sdk(message: dict[str, Any]) -> None:
    from slack_sdk.models.blocks import Block

    blocks = Block.parse_all(message["blocks"])
    assert len(blocks) == len(message["blocks"]) <= slack.MAX_BLOCKS
    for block in blocks:
        block.validate_json()  # Slack's own limits: header 150, text 3000, context elements 10, ...
    assert [b.to_dict() for b in blocks] == message["blocks"]
    assert message["text"]


# --- Markdown as GitHub renders it ------------------------------------------------------------

def _table_rows(md: str) -> list[str]:
    return [line for line in md.splitlines() if line.startswith("| ")]


def _cells(row: str) -> int:
    return len(re.split(r"(?<!\\)\|", row)) - 2


def test_markdown_sections_of_a_post_mortem():
    md = RENDERERS["markdown"](frozen("nccl-timeout-h200x2"))
    headings = [line for line in md.splitlines() if line.startswith("#")]
    assert headings[0] == "# Post-mortem: NCCL collective timed out (watchdog)"
    for section in ("## Summary", "## Impact", "## Timeline", "## Environment", "## Root cause",
                    "## Errors no rule explains", "## Action items", "## Inputs"):
        assert section in headings
    assert "| GPUs | `2 × NVIDIA H200 (compute capability 9.0, 143771 MiB)` |" in md
    assert "| NVIDIA driver | `580.159.04" in md and "| torch | `2.11.0` |" in md
    assert "fail-nccl-timeout.log:142  [rank0]:[E1129 19:50:56.183415218" in md  # evidence as source:line


def _outside_code(md: str) -> str:
    """What GitHub renders as Markdown: the text outside fenced blocks and code spans."""
    md = re.sub(r"(?ms)^( *)(`{3,}).*?^\1\2$", "", md)
    return re.sub(r"(`+)(?:(?!\1).)+?\1", "", md.replace("\\|", "|"))


def test_markdown_quotes_hostile_log_text_safely():
    """Pipes, backticks, HTML, links and code fences in a log line cannot break a table or a code block."""
    hostile = "x | y `z` <script>alert(1)</script> ``` [link](http://evil) | end"
    e = Evidence("a|b.log", 3, hostile, "s")
    f = Finding("r", "Title <with> | pipe", "c", "high", 0.9, "Summary with `<code>` and <tag>.", [e], rank=1,
                fix=[{"step": "Do <this>.", "run": "echo ```; echo |"}])
    d = Diagnosis(kb_version="1", findings=[f], unmatched_errors=[Evidence("b.log", 4, hostile, "error-line")])
    md = markdown.render(d)
    timeline_rows = [r for r in _table_rows(md) if "a\\|b.log:3" in r or "b.log:4" in r]
    assert len(timeline_rows) == 2 and all(_cells(r) == 4 for r in timeline_rows)
    rendered = _outside_code(md)
    assert "<script>" not in rendered and "](http://evil)" not in rendered and "<tag>" not in rendered
    assert "Title &lt;with&gt; | pipe" in md and "`<code>`" in md and "Do &lt;this&gt;." in md
    assert "````sh\necho ```; echo |\n````" in md  # a fence longer than any in the content


def test_timeline_is_honest_about_missing_times():
    d = frozen("torch-extension-abi-mismatch")
    md = RENDERERS["markdown"](d)
    assert "The lines carry no timestamps: this is input order" in md
    events, how = timeline.ordered(timeline.events(frozen("nccl-timeout-h200x2")))
    assert how.startswith("Ordered by the times the logs give")
    assert [e.line for e in events[:2]] == [142, 150]


def test_timeline_does_not_merge_clocks_that_cannot_be_compared():
    a = Evidence("dmesg.txt", 5, "[ 1843.439669] NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.", "s")
    b = Evidence("server.log", 9, "2026-11-29 19:50:56 ERROR worker died", "s")
    d = Diagnosis(kb_version="1", findings=[Finding("r", "t", "c", "high", 0.9, "s", [b, a], rank=1)])
    events, how = timeline.ordered(timeline.events(d))
    assert "do not share one clock" in how
    assert [e.source for e in events] == ["server.log", "dmesg.txt"]  # input order, as first cited


@pytest.mark.parametrize("stamp", ["2024-13-45T25:61:61Z", "2024-02-30T10:00:00+01:00", "0001-01-01T00:00:00+23:59",
                                   "[" + "9" * 5000 + ".5]"])  # the last: float('inf') seconds after boot
def test_digits_in_a_dates_shape_that_are_no_date_are_no_time(stamp):
    """Issue #16: `month must be in 1..12` from the post-mortem's timeline was an internal error."""
    assert timeline.parse_time(f"{stamp} RuntimeError: boom") is None
    assert timeline.parse_time("2024-02-29T10:00:00+01:00 RuntimeError: boom").shown == "2024-02-29T09:00:00.000Z"


@pytest.mark.parametrize("case", find_cases(FIXTURES)[::5], ids=lambda c: c.name)
def test_every_format_renders_real_fixtures(case, kb):
    diagnosis = redact_diagnosis(api.diagnose(case.artifacts(), kb=kb))
    md = RENDERERS["markdown"](diagnosis)
    for f in diagnosis.findings:
        for e in f.evidence:
            if e.line:
                assert f"{e.source}:{e.line}  " in md
    header_cells = None
    for row in _table_rows(md):
        if row.startswith("| ---"):
            continue
        header_cells = header_cells if header_cells is not None else _cells(row)
        assert 2 <= _cells(row) <= 4, row
    validate_with_slack_sdk(slack.message(diagnosis))


def test_slack_cuts_long_evidence_with_a_note_and_stays_in_limits():
    long_line = "RuntimeError: CUDA error: an illegal memory access was encountered " + "x" * 5000
    evidence = [Evidence("huge.log", i, f"{long_line} #{i}", "s") for i in range(1, 200)]
    steps = [{"step": f"Step {i}: " + "do the thing carefully " * 40, "run": "echo " + "y" * 400} for i in range(30)]
    findings = [Finding(f"rule-{i}", "A very long title " * 20, "c", "high", 0.9 - i / 100, "summary " * 500,
                        evidence, rank=i + 1, fix=steps, verify=[{"run": "true", "expect": {"exit_code": 0}}] * 40,
                        references=[f"https://github.com/x/y/issues/{n}" for n in range(20)])
                for i in range(60)]
    d = Diagnosis(kb_version="1", findings=findings, unmatched_errors=evidence[:50])
    message = slack.message(d)
    validate_with_slack_sdk(message)
    texts = [b["text"]["text"] for b in message["blocks"] if b["type"] == "section"]
    assert all(len(t) <= slack.MAX_TEXT for t in texts)
    assert len(message["blocks"][0]["text"]["text"]) <= slack.MAX_HEADER
    evidence_text = next(t for t in texts if t.startswith("*Evidence*"))
    assert "more line(s) cut" in evidence_text and "huge.log:1  RuntimeError" in evidence_text
    assert any("more candidate cause(s) not shown" in t for t in texts)
    assert "more step(s) cut" in next(t for t in texts if t.startswith("*Fix*"))
    one_giant_step = record.replace(findings[0], fix=[{"step": "z" * 10_000}])
    fix = next(b["text"]["text"] for b in slack.message(Diagnosis(kb_version="1", findings=[one_giant_step]))["blocks"]
               if b["type"] == "section" and b["text"]["text"].startswith("*Fix*"))
    assert len(fix) <= slack.MAX_TEXT and fix.endswith("…")


def test_slack_escapes_what_slack_would_parse():
    d = redact_diagnosis(Diagnosis(kb_version="1", findings=[Finding(
        "r", "t", "c", "high", 0.9, "s", [Evidence("a.log", 1, "connect to 10.0.0.5 failed & <@U123> pinged", "s")],
        rank=1)]))
    text = json.dumps(slack.message(d))
    assert "&lt;ip-1&gt;" in text and "&amp;" in text and "&lt;@U123&gt;" in text and "<@U123>" not in text


def test_renderers_import_neither_artifacts_nor_engine():
    for module in ("markdown", "slack", "timeline", "environment", "incident", "mermaid", "svg", "html", "template", "md_text", "md_finding", "md_timeline"):
        source = (ROOT / "diagnose" / "render" / f"{module}.py").read_text()
        assert "diagnose.artifacts" not in source and "diagnose.engine" not in source, module
