"""The post-mortem of a four-artifact incident, as CommonMark renderers, a reader and Mermaid see it.

No fixture pairs an Xid 79 with an NCCL watchdog timeout, so `incident()` puts one together in a temp
dir from four real fixture files, unedited: the kernel journal with the Xid 79 of
fixtures/near-miss--xid-other--pop-os-3363 (as dmesg.log), the NCCL watchdog timeout of
fixtures/nccl-timeout--repro-h200x2-torchrun, and the nvidia-smi and collect_env of the H200 host that
timeout ran on (fixtures/healthy/host-h200x2-snapshot). The journal comes from another host and
another month: the post-mortem must show that (a gap of 214 days, a PCI address that is none of the
GPUs listed) instead of papering over it.
"""

from __future__ import annotations

import datetime as dt
import html as html_lib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES

from diagnose import api
from diagnose.render import incident, markdown

H200X2 = FIXTURES / "healthy" / "host-h200x2-snapshot"
PARTS = {
    "dmesg.log": FIXTURES / "near-miss--xid-other--pop-os-3363" / "journal.log",
    "fail-nccl-timeout.log": FIXTURES / "nccl-timeout--repro-h200x2-torchrun" / "fail-nccl-timeout.log",
    "nvidia-smi.txt": H200X2 / "nvidia-smi.txt",
    "collect-env.txt": H200X2 / "collect-env.txt",
}


def incident_dir(root: Path) -> Path:
    folder = root / "incident"
    folder.mkdir()
    for name, src in PARTS.items():
        shutil.copyfile(src, folder / name)
    return folder


@pytest.fixture(scope="module")
def diagnosis(kb, tmp_path_factory):  # type: ignore[no-untyped-def]
    return api.diagnose([str(incident_dir(tmp_path_factory.mktemp("pm")))], kb=kb)


@pytest.fixture(scope="module")
def md(diagnosis) -> str:  # type: ignore[no-untyped-def]
    return markdown.render(diagnosis)


def test_the_incident_names_the_xid_as_cause_of_the_nccl_timeout(diagnosis) -> None:  # type: ignore[no-untyped-def]
    top = diagnosis.findings[0]
    assert top.rule_id == "xid-fallen-off-bus"
    assert "nccl-timeout" in [s.rule_id for s in top.symptoms]


# --- the document as three Markdown renderers draw it ------------------------------------------

def _markdown_it(md: str) -> str:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable("table").render(md)


def _python_markdown(md: str) -> str:  # what MkDocs draws with its default extensions
    import markdown as python_markdown

    return python_markdown.markdown(md, extensions=["tables", "fenced_code"])


def _pandoc(md: str) -> str:
    if not shutil.which("pandoc"):
        pytest.skip("pandoc is not installed (apt-get install pandoc)")
    return subprocess.run(["pandoc", "-f", "gfm", "-t", "html"], input=md, capture_output=True, text=True,
                          timeout=60, check=True).stdout


def _shape(html: str) -> dict[str, object]:
    """What a reader sees of the structure: headings, list items, code blocks, tables and their cells."""
    text = lambda s: " ".join(html_lib.unescape(re.sub(r"<[^>]+>", "", s)).split())  # noqa: E731
    items = re.findall(r"(?s)<li>(.*?)</li>", html)
    return {
        "headings": [text(h) for h in re.findall(r"(?s)<h[1-6][^>]*>(.*?)</h[1-6]>", html)],
        "items": [text(i).removeprefix("[ ] ") for i in items],  # GitHub and pandoc draw `[ ]` as a checkbox
        "nested_lists": len(re.findall(r"<li>\s*<ul>", html)),
        "code_blocks": len(re.findall(r"<pre", html)),
        "tables": [len(re.findall(r"<t[dh][ >]", t)) for t in re.findall(r"(?s)<table.*?</table>", html)],
    }


@pytest.mark.parametrize("renderer", [_markdown_it, _python_markdown, _pandoc], ids=["markdown-it", "mkdocs", "pandoc"])
def test_why_this_confidence_is_a_list_of_reasons_with_words(md, renderer) -> None:  # type: ignore[no-untyped-def]
    html = renderer(md)
    after = html.split("Why this confidence:", 1)[1]
    reasons = re.findall(r"(?s)<li>(.*?)</li>", after.split("</ul>", 1)[0])
    assert reasons and all(re.match(r"(for|against|note): \w", r.strip()) for r in reasons), reasons
    assert _shape(html)["nested_lists"] == 0  # an item whose only content is another list looks empty


@pytest.mark.parametrize("renderer", [_python_markdown, _pandoc], ids=["mkdocs", "pandoc"])
def test_github_pandoc_and_mkdocs_draw_the_same_document(md, renderer) -> None:  # type: ignore[no-untyped-def]
    expected, got = _shape(_markdown_it(md)), _shape(renderer(md))
    for key in ("headings", "items", "code_blocks", "tables"):
        assert got[key] == expected[key], key


# --- what the post-mortem says --------------------------------------------------------------------

TIME_CELL = re.compile(r"^`(--\d\d-\d\d|\d{4}-\d\d-\d\d)T\d\d:\d\d:\d\d(\.\d{3})?Z?` \((T\+0|\+[\d.]+ s|\+\d[^)]*)\)$")


def _timeline_rows(md: str) -> list[list[str]]:
    section = md.split("## Timeline", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| ---")]
    return [[c.strip() for c in re.split(r"(?<!\\)\|", r)[1:-1]] for r in rows[1:]]


def test_timeline_times_are_one_iso_format_with_offsets_from_t0(md, diagnosis) -> None:  # type: ignore[no-untyped-def]
    times = [row[0] for row in _timeline_rows(md) if row[0] not in ("—", "⋯")]
    assert times and all(TIME_CELL.match(t) for t in times), times
    assert times[0] == "`--04-29T19:24:11` (T+0)"  # the journal gives no year, so none is shown
    assert "`--11-29T19:50:56.183` (+214 d 00:26:45)" in times
    moments = {m.event.line: m for m in incident.build(diagnosis).moments if m.event.source.endswith("nccl-timeout.log")}
    first, later = moments[142].offset, moments[150].offset
    assert first is not None and later is not None
    assert later - first == pytest.approx(5.175, abs=0.001)  # 19:50:56.183 -> 19:51:01.358


def test_gaps_without_a_cited_line_are_said(md) -> None:  # type: ignore[no-untyped-def]
    gaps = [row[2] for row in _timeline_rows(md) if row[0] == "⋯"]
    assert gaps == ["_214 d 00:26:45 without a cited line_", "_1 min without a cited line_"]


def test_impact_window_and_affected_gpu_come_from_the_inputs(md) -> None:  # type: ignore[no-untyped-def]
    impact = md.split("## Impact", 1)[1].split("\n## ", 1)[0]
    assert "from when to when" not in impact
    assert "From `--04-29T19:24:11` to `--11-29T19:52:01.028` (214 d 00:27:50)" in impact
    assert re.search(r"first cited line `[^`]*dmesg\.log:2`, last `[^`]*fail-nccl-timeout\.log:214`", impact)
    # the journal's GPU is not on the H200 host: said, not mapped to a wrong index
    assert "Xid 79 names PCI 0000:01:00, which is none of the GPUs the inputs list (0000:00:06.0, 0000:00:07.0)" in impact


def test_an_xids_pci_address_maps_to_the_gpu_index_of_the_nvidia_smi(kb, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A real Xid 13 of an H200 host (PCI:0000:00:06) and the nvidia-smi of such a host: GPU 0."""
    shutil.copyfile(FIXTURES / "cuda-illegal-memory-access--repro-h200-misaligned" / "dmesg.log", tmp_path / "dmesg.log")
    shutil.copyfile(H200X2 / "nvidia-smi.txt", tmp_path / "nvidia-smi.txt")
    d = api.diagnose([str(tmp_path)], kb=kb)
    notes = [a.note for a in incident.affected_gpus(d)]
    assert notes and notes[0].startswith("Xid 13, 43 names PCI 0000:00:06: GPU 0 (NVIDIA H200, bus id 0000:00:06.0)")
    assert "- **Affected GPU**: Xid 13, 43 names PCI 0000:00:06: GPU 0" in markdown.render(d)


def test_the_draft_leaves_to_people_only_what_the_inputs_cannot_say(md) -> None:  # type: ignore[no-untyped-def]
    headings = [line for line in md.splitlines() if line.startswith("## ")]
    assert headings.index("## What we did") < headings.index("## Action items")
    todo = [line for line in md.splitlines() if "TODO" in line]
    assert len(todo) == 4  # the note that says so, who was affected, what we did, what keeps it from recurring
    assert not any(word in line for line in todo for word in ("from when to when", "which GPU"))


def test_each_input_is_one_row_with_one_kind(md) -> None:  # type: ignore[no-untyped-def]
    section = md.split("## Inputs", 1)[1]
    rows = [r for r in section.splitlines() if r.startswith("| `")]
    names = [re.match(r"\| `([^`]*)`", r)[1].rsplit("/", 1)[-1] for r in rows]  # type: ignore[index]
    assert sorted(names) == sorted(PARTS)
    kinds = {n: r.split(" | ")[1] for n, r in zip(names, rows)}
    assert kinds["nvidia-smi.txt"] == "nvidia-smi; lines 1–2 read as server-log"
    assert kinds["collect-env.txt"].startswith("collect-env")


# --- the picture --------------------------------------------------------------------------------

TASK = re.compile(r"^    (?P<name>[^:#;%\n]+?) :(?P<tags>crit, milestone|milestone|done), (?P<id>[mg]\d+), "
                  r"(?P<start>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}), (?P<end>0s|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3})$")


def test_the_mermaid_block_is_a_gantt_mermaid_can_read(md, diagnosis) -> None:  # type: ignore[no-untyped-def]
    """Mermaid's gantt grammar, for the statements we write: keywords, sections, tasks `name :tags, id,
    start, end`; the dates parse with the dateFormat given; ids are unique; a gap ends after it starts."""
    block = re.search(r"(?ms)^```mermaid\n(.*?)^```$", md)[1].splitlines()  # type: ignore[index]
    assert block[0] == "gantt"
    assert block[1].startswith("    title ") and block[2] == "    dateFormat YYYY-MM-DD HH:mm:ss.SSS"
    assert re.fullmatch(r"    axisFormat [%\w :-]+", block[3]) and block[4] == "    todayMarker off"
    inc = incident.build(diagnosis)
    sections, ids, tasks = [], set(), []
    for line in block[5:]:
        if line.startswith("    section "):
            sections.append(line[len("    section "):])
            continue
        m = TASK.match(line)
        assert m, line
        assert m["id"] not in ids
        ids.add(m["id"])
        start = dt.datetime.strptime(m["start"], "%Y-%m-%d %H:%M:%S.%f")
        if m["end"] != "0s":
            assert dt.datetime.strptime(m["end"], "%Y-%m-%d %H:%M:%S.%f") > start
        tasks.append((sections[-1], m["tags"], m["name"], start))
    assert sections[-1] == "Gaps" and len(sections) - 1 == len({m.lane for m in inc.moments})
    causes = [t for t in tasks if t[1] == "crit, milestone"]
    assert causes and all("xid-fallen-off-bus" in t[2] for t in causes) and all("dmesg.log" in t[0] for t in causes)
    watchdog = next(t for t in tasks if "line 142" in t[2])
    assert watchdog[3] - causes[0][3] == dt.timedelta(days=214, minutes=26, seconds=45, milliseconds=183)


def test_html_and_svg_formats_from_the_command_line(tmp_path) -> None:  # type: ignore[no-untyped-def]
    folder = incident_dir(tmp_path)
    for fmt in ("html", "svg"):
        out = subprocess.run([sys.executable, "-m", "diagnose", "--format", fmt, str(folder)], capture_output=True,
                             text=True, timeout=120)
        assert out.returncode == 1, out.stderr  # a root cause found
        # a lane per artifact; the NCCL log's lines in three: its two ranks and the launcher's own lines
        assert out.stdout.count('<g class="lane"') == 6
        if fmt == "html":
            assert out.stdout.startswith("<!DOCTYPE html>") and "<h2>Timeline</h2>" in out.stdout
            assert "<script" not in out.stdout and "```mermaid" not in out.stdout


def test_hostile_log_text_stays_text_in_the_svg_html_and_mermaid() -> None:
    from xml.etree import ElementTree

    from diagnose.model import Diagnosis, Evidence, Finding
    from diagnose.render import html, mermaid, svg

    hostile = "2026-11-29 19:50:56 x | y `z` <script>alert(1)</script> ]]> :crit; %% ``` [link](http://evil)"
    e = [Evidence("a|b<c>.log", 3, hostile, "s"), Evidence("a|b<c>.log", 9, hostile.replace(":56", ":59"), "s")]
    d = Diagnosis(kb_version="1", findings=[Finding("r", "T <b>", "c", "high", 0.9, "s", e, rank=1)])
    picture = svg.render(incident.build(d), title="T <b>")
    root = ElementTree.fromstring(picture)  # well-formed XML
    assert root.tag.endswith("svg") and "<script>" not in picture
    page = html.render(d)
    assert "<script>" not in page and "&lt;script&gt;" in page
    for line in mermaid.gantt(incident.build(d)).splitlines()[5:]:
        assert line.startswith("    section ") or TASK.match(line), line


def test_a_picture_of_a_large_incident_draws_the_first_lines_and_says_what_it_left_out() -> None:
    from diagnose.model import Diagnosis, Evidence, Finding
    from diagnose.render import mermaid, svg

    evidence = [Evidence(f"node-{i % 20:02d}.log", i, f"2026-11-29 19:{i // 60:02d}:{i % 60:02d} ERROR x", "s")
                for i in range(1, 61)]
    d = Diagnosis(kb_version="1", findings=[Finding("r", "t", "c", "high", 0.9, "s", evidence, rank=1)])
    picture = svg.render(incident.build(d))
    assert picture.count('<g class="marker') == incident.MAX_DRAWN
    assert "not drawn: 20 later cited line(s)" in picture
    assert "not drawn: 20 later cited line(s)" in mermaid.gantt(incident.build(d)).splitlines()[1]
