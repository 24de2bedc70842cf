"""OUTPUT: one small module per format; `RENDERERS` maps a format name to its renderer."""

from __future__ import annotations

from collections.abc import Callable

from diagnose.model import Diagnosis


def _text(d: Diagnosis, **opts: object) -> str:
    from diagnose.render import text

    return text.render(d, **opts)  # type: ignore[arg-type]


def _json(d: Diagnosis, **opts: object) -> str:
    from diagnose.render import json_out

    return json_out.render(d)


def _markdown(d: Diagnosis, **opts: object) -> str:
    from diagnose.render import markdown

    return markdown.render(d)


def _slack(d: Diagnosis, **opts: object) -> str:
    from diagnose.render import slack

    return slack.render(d)


def _html(d: Diagnosis, **opts: object) -> str:
    from diagnose.render import html

    return html.render(d)


def _svg(d: Diagnosis, **opts: object) -> str:
    from diagnose.render import incident, svg

    return svg.render(incident.build(d), title=d.findings[0].title if d.findings else "")


RENDERERS: dict[str, Callable[..., str]] = {"text": _text, "json": _json, "markdown": _markdown, "slack": _slack,
                                            "html": _html, "svg": _svg}
