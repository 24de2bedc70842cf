"""The Bolt app: what Slack sends, routed to the Handler (thread.py). Every listener acknowledges
first (Slack gives 3 s) and does the work after, on Bolt's worker threads."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt import App
from slack_sdk import WebClient

from diagnose.kb.compiled import KnowledgeBase
from diagnose.slack import answer, manifest
from diagnose.slack.settings import SlackSettings
from diagnose.slack.store import Store
from diagnose.slack.text import unescape
from diagnose.slack.thread import Handler

log = logging.getLogger("diagnose.slack")
USAGE = ("Mention me in a thread with a crash log or a log file (`@diagnose`), or paste a log after the command: "
         "`/diagnose <log lines>`. Secrets, IPs, hosts and user names are masked in every answer.")


def build(settings: SlackSettings, kb: KnowledgeBase, store: Store) -> App:
    client = WebClient(token=settings.bot_token, base_url=settings.api_url)
    app = App(client=client, signing_secret=settings.signing_secret or "", process_before_response=False,
              request_verification_enabled=bool(settings.signing_secret))
    handler = Handler(settings, kb, store)

    @app.event("app_mention")
    def on_mention(event: dict[str, Any], client: WebClient, context: Any) -> None:
        channel, ts = event["channel"], event["ts"]
        handler.thread(client, channel, event.get("thread_ts") or ts, ts, context.bot_user_id)

    @app.shortcut(manifest.SHORTCUT_ID)
    def on_shortcut(ack: Any, shortcut: dict[str, Any], client: WebClient, context: Any) -> None:
        ack()
        message, channel = shortcut["message"], shortcut["channel"]["id"]
        handler.thread(client, channel, message.get("thread_ts") or message["ts"], message["ts"], context.bot_user_id)

    @app.command(manifest.COMMAND)
    def on_command(ack: Any, command: dict[str, Any], respond: Any) -> None:
        text = unescape(command.get("text") or "")
        if not text:
            ack(response_type="ephemeral", text=USAGE)
            return
        ack(response_type="ephemeral", text="Diagnosing… the answer follows in this channel.")
        handler.command(text, command.get("channel_id") or "", respond)

    @app.action(answer.RIGHT)
    def on_right(ack: Any, action: dict[str, Any], body: dict[str, Any], respond: Any) -> None:
        ack()
        handler.feedback(action["value"], body["user"]["id"], respond, rule="")

    @app.action(answer.WRONG)
    def on_wrong(ack: Any, action: dict[str, Any], body: dict[str, Any], respond: Any) -> None:
        ack()
        handler.feedback(action["selected_option"]["value"], body["user"]["id"], respond)

    @app.error
    def on_error(error: Exception, body: dict[str, Any]) -> None:
        log.error("diagnose slack: %s: %s", type(error).__name__, error)

    return app
