"""The app manifest a team pastes into "Create an app" -> "From a manifest" (api.slack.com/apps).

The least scopes the app needs, each for one thing it does (SCOPES says which). Socket Mode by
default; `http_url` gives the Events / interactivity / command URL of `diagnose serve` instead.
"""

from __future__ import annotations

from typing import Any

import yaml

COMMAND = "/diagnose"
SHORTCUT_ID = "diagnose_this"
SCOPES = {
    "app_mentions:read": "receive @diagnose mentions (the app_mention event)",
    "channels:history": "read the messages of the thread it is mentioned in, in public channels",
    "groups:history": "the same in private channels it was invited to",
    "files:read": "files.info and the url_private download of the logs and bundles shared in the thread",
    "files:write": "upload the Markdown post-mortem into the thread (files_upload_v2)",
    "chat:write": "reply in the thread with the summary, and the short link for a repeated failure",
    "reactions:write": "the immediate acknowledgement: a reaction on the message that asked",
    "commands": "the /diagnose slash command and the 'Diagnose this' message action",
}


def manifest(name: str = "diagnose", http_url: str | None = None) -> dict[str, Any]:
    settings: dict[str, Any] = {
        "event_subscriptions": {"bot_events": ["app_mention"]},
        "interactivity": {"is_enabled": True},
        "org_deploy_enabled": False,
        "socket_mode_enabled": http_url is None,
        "token_rotation_enabled": False,
    }
    command: dict[str, Any] = {"command": COMMAND, "description": "Name the root cause of a pasted failure log",
                               "usage_hint": "<log lines>", "should_escape": False}
    if http_url:
        url = http_url.rstrip("/") + "/slack/events"
        settings["event_subscriptions"]["request_url"] = url
        settings["interactivity"]["request_url"] = url
        command["url"] = url
    return {
        "display_information": {
            "name": name,
            "description": "Names the root cause of a failed GPU / LLM-inference deployment from its logs",
            "background_color": "#2c3e50",
        },
        "features": {
            "bot_user": {"display_name": name, "always_online": True},
            "slash_commands": [command],
            "shortcuts": [{"name": "Diagnose this", "type": "message", "callback_id": SHORTCUT_ID,
                           "description": "Diagnose this message's thread and its files"}],
        },
        "oauth_config": {"scopes": {"bot": sorted(SCOPES)}},
        "settings": settings,
    }


def render(name: str = "diagnose", http_url: str | None = None) -> str:
    comments = "".join(f"#   {scope}: {why}\n" for scope, why in SCOPES.items())
    head = "# diagnose's Slack app manifest: paste it into api.slack.com/apps -> Create New App -> From a manifest\n"
    return head + "# bot scopes, each for one thing:\n" + comments + yaml.safe_dump(
        manifest(name, http_url), sort_keys=False)
