"""`diagnose slack`: Socket Mode (an outbound WebSocket, no public URL), or `--http`: the same app's
events, interactivity and command on `/slack/events` of `diagnose serve`."""

from __future__ import annotations

import logging
import sys
from typing import Any

from diagnose import api
from diagnose.kb.compiled import KnowledgeBase
from diagnose.settings import current
from diagnose.slack.settings import SlackSettings
from diagnose.slack.store import Store

EVENTS_PATH = "/slack/events"


def build(settings: SlackSettings, kb: KnowledgeBase | None = None) -> Any:
    from diagnose.slack import app

    assert settings.store is not None
    return app.build(settings, kb or api.load_kb(), Store(settings.store))


def socket_mode(settings: SlackSettings) -> None:
    from slack_bolt.adapter.socket_mode import SocketModeHandler

    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s %(message)s")
    kb = api.load_kb(current().get("extra-rules"))  # a team's own rules (config file, DIAGNOSE_EXTRA_RULES)
    bolt = build(settings, kb)
    print(f"diagnose slack: Socket Mode (kb {kb.version}, {len(kb.rules)} rules; answers kept in {settings.store}; "
          "redaction on)", file=sys.stderr, flush=True)
    SocketModeHandler(bolt, settings.app_token).start()


def mount(settings: SlackSettings) -> Any:
    """For `diagnose serve`: a function that adds POST /slack/events to its FastAPI app."""
    from slack_bolt.adapter.fastapi import SlackRequestHandler

    def extend(app: Any, kb: KnowledgeBase) -> str:
        handler = SlackRequestHandler(build(settings, kb))

        async def slack_events(request: Any) -> Any:  # a Starlette route: Bolt checks Slack's signature
            return await handler.handle(request)

        app.add_route(EVENTS_PATH, slack_events, methods=["POST"], include_in_schema=False)
        return EVENTS_PATH

    return extend
