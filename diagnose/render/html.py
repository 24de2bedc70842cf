"""`--format html`: the post-mortem as one self-contained page (no script, no link out for the
picture): the Markdown post-mortem rendered by markdown-it-py, its Mermaid block replaced by the
SVG that diagnose draws itself (diagnose/render/svg.py).

markdown-it-py comes with the `postmortem` extra; it is imported only when this format is asked for.
"""

from __future__ import annotations

from html import escape
from typing import Any

from diagnose.errors import DiagnoseError
from diagnose.model import Diagnosis
from diagnose.render import incident, markdown, svg

STYLE = """
body { font-family: -apple-system, "Segoe UI", "DejaVu Sans", Arial, sans-serif; max-width: 1140px;
       margin: 2em auto; padding: 0 1em; color: #1f2328; line-height: 1.5; }
pre { background: #f6f8fa; padding: .8em; overflow-x: auto; font-size: 12px; }
code { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 90%; }
table { border-collapse: collapse; display: block; overflow-x: auto; font-size: 13px; }
th, td { border: 1px solid #d0d7de; padding: 4px 8px; vertical-align: top; }
td:first-child code { white-space: nowrap; }
blockquote { border-left: 4px solid #d0d7de; margin: 0; padding: 0 1em; color: #57606a; }
figure.incident { margin: 1em 0; overflow-x: auto; }
"""


def render(diagnosis: Diagnosis, **_: object) -> str:
    try:
        from markdown_it import MarkdownIt
    except ImportError:
        raise DiagnoseError("--format html needs markdown-it-py: pip install 'gpu-diagnose[postmortem]'") from None
    inc = incident.build(diagnosis)
    top = diagnosis.findings[0].title if diagnosis.findings else "a failure with no known root cause"
    picture = svg.render(inc, title=f"Incident timeline: {top}")
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    rules = md.renderer.rules  # type: ignore[attr-defined]
    fence = rules["fence"]

    def fence_or_picture(tokens: list[Any], idx: int, options: Any, env: Any) -> str:
        if tokens[idx].info.strip() == "mermaid":
            return f'<figure class="incident">\n{picture}</figure>\n'
        return fence(tokens, idx, options, env)  # type: ignore[no-any-return]

    rules["fence"] = fence_or_picture
    body = md.render(markdown.render(diagnosis))
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f"<title>Post-mortem: {escape(top)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
            f"{body}</body>\n</html>\n")
