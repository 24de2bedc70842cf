"""The rendered post-mortem in a real browser (headless Chromium): the page `--format html` writes is
loaded, its SVG must show one lane per artifact with the root cause's marker visible, and a
screenshot is saved. The incident is test_postmortem's: four real fixture files in a temp dir.

Chromium is Playwright's own (`playwright install chromium`) or the system's (`apt-get install
chromium`); where neither starts, the tests skip and say why. DIAGNOSE_SCREENSHOT=path.png keeps the
screenshot (docs/img/postmortem-xid79-nccl.png was made so); DIAGNOSE_MERMAID_JS=mermaid.min.js (from
`npm install mermaid`) also has the browser draw the Markdown's Mermaid block with Mermaid itself.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_postmortem import PARTS, incident_dir

from diagnose import api
from diagnose.render import RENDERERS

TIMEOUT_MS = 30_000


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    errors = []
    with sync_api.sync_playwright() as p:
        system = [shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")]
        for exe in [None, *dict.fromkeys(e for e in system if e)]:  # Playwright's own first
            try:
                b = p.chromium.launch(executable_path=exe, args=["--no-sandbox"], timeout=TIMEOUT_MS)
            except Exception as exc:  # no browser here: try the next, then skip
                errors.append(f"{exe or 'playwright chromium'}: {str(exc).splitlines()[0]}")
                continue
            yield b
            b.close()
            return
    pytest.skip("no headless Chromium could be started (" + "; ".join(errors) + ")")


@pytest.fixture(scope="module")
def page_of_incident(browser, kb, tmp_path_factory) -> Iterator[tuple[Any, Path]]:  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("browser")
    html = root / "postmortem.html"
    here = os.getcwd()
    os.chdir(root)  # the inputs named as a user names them: incident/dmesg.log
    try:
        html.write_text(RENDERERS["html"](api.diagnose([incident_dir(root).name], kb=kb)), encoding="utf-8")
    finally:
        os.chdir(here)
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(html.as_uri())
    yield page, root
    page.close()


def test_the_svg_has_a_lane_per_artifact_and_a_visible_cause(page_of_incident) -> None:  # type: ignore[no-untyped-def]
    page, root = page_of_incident
    figure = page.locator("figure.incident svg")
    assert figure.count() == 1 and figure.is_visible()
    sources = page.locator("g.lane").evaluate_all("gs => gs.map(g => g.dataset.source)")
    assert sorted({s.rsplit("/", 1)[-1] for s in sources}) == sorted(PARTS)  # every artifact has its lane
    cause = page.locator("g.marker.cause").first
    assert cause.is_visible()
    box, frame = cause.bounding_box(), figure.bounding_box()
    assert box and frame and box["width"] > 5 and frame["x"] <= box["x"] <= frame["x"] + frame["width"]
    lane_of_cause = page.evaluate("""() => { const m = document.querySelector('g.marker.cause path').getBBox();
        return [...document.querySelectorAll('g.lane')].find(g => { const r = g.querySelector('rect').getBBox();
            return r.y <= m.y + m.height / 2 && m.y + m.height / 2 <= r.y + r.height; }).dataset.lane; }""")
    assert lane_of_cause.endswith("dmesg.log")  # drawn in the kernel log's lane
    assert page.locator("g.marker.symptom").count() >= 3 and page.locator("g.break").count() == 1
    assert "214 d" in (page.locator("g.break").text_content() or "")
    shot = root / "postmortem.png"
    figure.screenshot(path=str(shot))
    assert shot.stat().st_size > 10_000
    if os.environ.get("DIAGNOSE_SCREENSHOT"):
        page.screenshot(path=os.environ["DIAGNOSE_SCREENSHOT"], full_page=True, clip=_top_of(page))


def _top_of(page: Any) -> dict[str, float]:
    """The page from its title down to the end of the picture: what a reader sees first."""
    bottom = page.evaluate("() => { const r = document.querySelector('figure.incident').getBoundingClientRect();"
                           " return r.bottom + window.scrollY; }")
    return {"x": 0, "y": 0, "width": 1200, "height": bottom + 16}


def test_the_page_reads_as_the_markdown_post_mortem(page_of_incident) -> None:  # type: ignore[no-untyped-def]
    page, _ = page_of_incident
    headings = page.locator("h2").all_inner_texts()
    assert headings[:4] == ["Summary", "Impact", "Timeline", "Environment"]
    reasons = page.locator("h3 ~ ul").first.locator("li").all_inner_texts()
    assert reasons and all(re.match(r"(for|against|note): \w", r) for r in reasons)
    assert page.locator("li:empty").count() == 0


def test_mermaid_draws_the_markdowns_block(browser, kb, tmp_path) -> None:  # type: ignore[no-untyped-def]
    js = os.environ.get("DIAGNOSE_MERMAID_JS")
    if not js or not Path(js).is_file():
        pytest.skip("set DIAGNOSE_MERMAID_JS to mermaid.min.js (npm install mermaid) to draw the block with Mermaid")
    md = RENDERERS["markdown"](api.diagnose([str(incident_dir(tmp_path))], kb=kb))
    block = re.search(r"(?ms)^```mermaid\n(.*?)^```$", md)[1]  # type: ignore[index]
    page = browser.new_page()
    page.set_content("<html><body><div id='out'></div></body></html>")
    page.add_script_tag(content=Path(js).read_text())
    result = page.evaluate("""async (text) => { mermaid.initialize({startOnLoad: false});
        try { const {svg} = await mermaid.render('incident', text); document.getElementById('out').innerHTML = svg;
              return 'ok'; } catch (e) { return String(e.message || e); } }""", block)
    assert result == "ok"
    labels = page.locator("#out svg text").evaluate_all("ts => ts.map(t => t.textContent || '')")
    assert any("xid-fallen-off-bus" in t for t in labels) and any("without a cited line" in t for t in labels)
    page.close()
