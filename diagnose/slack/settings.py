"""What the Slack app needs from the environment: its tokens, where it keeps answers, its limits."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from diagnose.errors import DiagnoseError

BOT_TOKEN_ENV = "SLACK_BOT_TOKEN"
APP_TOKEN_ENV = "SLACK_APP_TOKEN"
SIGNING_SECRET_ENV = "SLACK_SIGNING_SECRET"
STORE_ENV = "DIAGNOSE_SLACK_STORE"
API_URL_ENV = "DIAGNOSE_SLACK_API_URL"  # Slack's Web API through a proxy (or a test's stand-in)


def default_store() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "diagnose" / "slack.sqlite3"


@dataclass(frozen=True)
class SlackSettings:
    bot_token: str
    app_token: str | None = None  # xapp-...: Socket Mode
    signing_secret: str | None = None  # HTTP events mode
    store: Path | None = None
    api_url: str = "https://slack.com/api/"  # the tests point this at their stand-in
    max_file: int = 8 * 1024 * 1024  # bytes read of one file: a larger one is read from its head and tail
    max_total: int = 32 * 1024 * 1024  # bytes read of one thread's files, newest first
    max_files: int = 20
    max_inflated: int = 64 * 1024 * 1024
    dedupe_s: float = 24 * 3600.0  # the same failure in a channel within this long: a link, not a report
    ack_reaction: str = "eyes"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ, *, http: bool = False, **options: object) -> SlackSettings:
        def get(name: str) -> str | None:
            return (environ.get(name) or "").strip() or None

        bot = get(BOT_TOKEN_ENV)
        if not bot or not bot.startswith("xoxb-"):
            raise DiagnoseError(f"{BOT_TOKEN_ENV} is not set to a bot token (xoxb-...): see README, 'A Slack bot'")
        app_token, secret = get(APP_TOKEN_ENV), get(SIGNING_SECRET_ENV)
        if not http and not (app_token and app_token.startswith("xapp-")):
            raise DiagnoseError(f"{APP_TOKEN_ENV} is not set to an app-level token (xapp-..., scope "
                                "connections:write) for Socket Mode; or run with --http behind `diagnose serve`")
        if http and not secret:
            raise DiagnoseError(f"{SIGNING_SECRET_ENV} is not set: HTTP events mode verifies Slack's signature")
        store = Path(get(STORE_ENV) or default_store())
        if get(API_URL_ENV):
            options["api_url"] = get(API_URL_ENV)
        return cls(bot_token=bot, app_token=app_token, signing_secret=secret, store=store, **options)  # type: ignore[arg-type]
