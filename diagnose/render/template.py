"""`--template FILE`: a team's own post-mortem form, a Jinja2 template fed the context the built-in
post-mortem is made from (docs/postmortem-template.md.j2 is a sample; docs/postmortem.md lists the names).

Jinja2 comes with the `postmortem` extra and is imported only when a template is given. The template
runs sandboxed (it can read the context, not call into Python), with undefined names an error, so a
typo in a team's form is one line that names the file and the line, not an empty field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from diagnose import __version__
from diagnose.errors import DiagnoseError
from diagnose.model import Diagnosis
from diagnose.render import environment, incident, markdown, md_finding, mermaid, svg


def context(d: Diagnosis) -> dict[str, Any]:
    """What every post-mortem output is made from: the diagnosis, the incident, and the parts drawn."""
    inc = incident.build(d)
    top = d.findings[0] if d.findings else None
    return {
        "diagnosis": d,
        "findings": d.findings,
        "top": top,
        "incident": inc,
        "environment": environment.rows(d.facts),
        "mermaid": mermaid.gantt(inc) if inc.moments else "",
        "svg": svg.render(inc, title=f"Incident timeline: {top.title}" if top else ""),
        "builtin": markdown.render(d),
        "version": __version__,
        "kb_version": d.kb_version,
    }


def fence(text: object, lang: str = "") -> str:
    """A code block that holds any text: `{{ mermaid | fence("mermaid") }}`."""
    return "\n".join(markdown.fence(str(text).split("\n"), lang))


FILTERS: dict[str, Any] = {"code": markdown.code, "cell": markdown.cell, "prose": markdown.prose, "fence": fence,
                           "reason": md_finding.reason}


def render(d: Diagnosis, path: str) -> str:
    try:
        import jinja2
        from jinja2.sandbox import SandboxedEnvironment
    except ImportError:
        raise DiagnoseError("--template needs Jinja2: pip install 'gpu-diagnose[postmortem]'") from None
    try:
        source = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DiagnoseError(f"cannot read template {path}: {getattr(exc, 'strerror', None) or exc}") from None
    env = SandboxedEnvironment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                               trim_blocks=True, lstrip_blocks=True)
    env.filters.update(FILTERS)
    try:
        return env.from_string(source).render(context(d))
    except jinja2.TemplateSyntaxError as exc:
        raise DiagnoseError(f"template {path}:{exc.lineno}: {exc.message}") from None
    except (jinja2.TemplateError, TypeError, ValueError, AttributeError) as exc:
        raise DiagnoseError(f"template {path}:{_line(exc)}: {exc}") from None


def _line(exc: BaseException) -> str:
    """The template line an error at render time came from, read from its traceback."""
    tb, line = exc.__traceback__, "?"
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "<template>":
            line = str(tb.tb_lineno)
        tb = tb.tb_next
    return line
