"""`--template FILE`: a team's Jinja2 form gets the built-in post-mortem's context (test_postmortem's
incident: four real fixture files in a temp dir), mistakes in it are one line with exit 2, and Jinja2
stays out of the command line's start-up.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT
from test_postmortem import incident_dir

from diagnose import api
from diagnose.errors import DiagnoseError
from diagnose.render import incident, markdown, template

SAMPLE = ROOT / "docs" / "postmortem-template.md.j2"


@pytest.fixture(scope="module")
def diagnosis(kb, tmp_path_factory):  # type: ignore[no-untyped-def]
    return api.diagnose([str(incident_dir(tmp_path_factory.mktemp("tpl")))], kb=kb)


def test_the_sample_form_is_filled_from_the_same_context(diagnosis) -> None:  # type: ignore[no-untyped-def]
    out = template.render(diagnosis, str(SAMPLE))
    inc = incident.build(diagnosis)
    assert out.startswith("# Incident report: A GPU fell off the PCIe bus (NVRM Xid 79)\n")
    assert "| Root cause | `xid-fallen-off-bus` |" in out and "| Confidence | 0.99 |" in out
    assert f"| Window | {markdown.cell(inc.window)} |" in out
    assert f"| Affected GPU | {markdown.cell(inc.affected[0].note)} |" in out
    rows = [line for line in out.split("## Timeline", 1)[1].splitlines() if line.startswith("| `")]
    assert len(rows) == len(inc.moments)
    assert rows[0].startswith("| `--04-29T19:24:11` | T+0 | `") and "dmesg.log:2`" in rows[0]
    assert "```mermaid\ngantt\n" in out  # the same picture as the built-in post-mortem's
    assert "- for: the kernel log holds an NVRM Xid 79" in out


def test_the_context_is_the_built_in_post_mortems(diagnosis) -> None:  # type: ignore[no-untyped-def]
    ctx = template.context(diagnosis)
    assert ctx["builtin"] == markdown.render(diagnosis)
    assert ctx["mermaid"] in ctx["builtin"] and ctx["incident"].window in ctx["builtin"]


def test_from_the_command_line_into_a_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "report.md"
    run = subprocess.run([sys.executable, "-m", "diagnose", "--template", str(SAMPLE), "-o", str(out),
                          str(incident_dir(tmp_path))], capture_output=True, text=True, timeout=120)
    assert run.returncode == 1, run.stderr  # a root cause found, as without --template
    assert out.read_text().startswith("# Incident report: ")


@pytest.mark.parametrize(("text", "message"), [
    ("{{ top.title }}\n{{ top.no_such_field }}\n", ":2: 'diagnose.model.Finding object' has no attribute 'no_such_field'"),
    ("line one\n{% for x in %}\n", ":2: Expected an expression"),
    ("{{ diagnosis.__class__.__mro__ }}\n", ":1: access to attribute '__class__'"),  # the sandbox
])
def test_a_mistake_in_the_form_is_one_line_naming_file_and_line(diagnosis, tmp_path, text, message) -> None:  # type: ignore[no-untyped-def]
    form = tmp_path / "form.md.j2"
    form.write_text(text)
    with pytest.raises(DiagnoseError) as err:
        template.render(diagnosis, str(form))
    assert str(err.value).startswith(f"template {form}") and message in str(err.value)
    assert "\n" not in str(err.value)


def test_cli_errors_exit_2_without_a_traceback(tmp_path) -> None:  # type: ignore[no-untyped-def]
    folder = incident_dir(tmp_path)
    for args in (["--template", str(tmp_path / "missing.j2")], ["--template", str(SAMPLE), "--format", "json"]):
        run = subprocess.run([sys.executable, "-m", "diagnose", *args, str(folder)], capture_output=True, text=True,
                             timeout=120)
        assert run.returncode == 2 and run.stderr.startswith("diagnose: error: ") and "Traceback" not in run.stderr
        assert len(run.stderr.strip().splitlines()) == 1, run.stderr


def test_jinja2_and_markdown_it_stay_out_of_the_cli_start_up() -> None:
    code = "import sys, diagnose.cli; print(sorted(m for m in ('jinja2', 'markdown_it') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"


def test_docs_name_every_key_of_the_context(diagnosis) -> None:  # type: ignore[no-untyped-def]
    doc = (ROOT / "docs" / "postmortem.md").read_text()
    assert all(f"`{key}`" in doc for key in template.context(diagnosis)), "docs/postmortem.md lists the context"
    assert Path(SAMPLE).name in doc
