"""`diagnose slack` (run the app), `diagnose slack manifest`, `diagnose feedback export`. Nothing from
slack_bolt is imported until a command runs."""

from __future__ import annotations

import os
from pathlib import Path

import click

from diagnose.errors import DiagnoseError

EXTRA = "the Slack app needs its extra ({name} is missing): pip install 'gpu-diagnose[slack]'"


@click.group("slack", invoke_without_command=True)
@click.option("--http", is_flag=True, help="HTTP events on /slack/events of `diagnose serve`, not Socket Mode.")
@click.option("--host", default="127.0.0.1", show_default=True, help="With --http: the address to listen on.")
@click.option("--port", default=3000, show_default=True, type=click.IntRange(0, 65535), help="With --http.")
@click.pass_context
def slack_cmd(ctx: click.Context, http: bool, host: str, port: int) -> None:
    """The Slack app: answers @diagnose in a thread (its messages and files), the "Diagnose this"
    message action and /diagnose.

    \b
    SLACK_BOT_TOKEN       the bot token (xoxb-...), from "OAuth & Permissions"
    SLACK_APP_TOKEN       Socket Mode: an app-level token (xapp-...) with connections:write
    SLACK_SIGNING_SECRET  --http: Slack's signing secret (DIAGNOSE_API_TOKEN as for `diagnose serve`)
    DIAGNOSE_SLACK_STORE  where answers and feedback are kept (default ~/.local/state/diagnose/slack.sqlite3)
    """
    if ctx.invoked_subcommand:
        return
    from diagnose.slack.settings import SlackSettings

    settings = SlackSettings.from_env(http=http)
    try:
        if not http:
            from diagnose.slack import run

            run.socket_mode(settings)
            return
        from diagnose.server import serve
        from diagnose.slack import run
    except ImportError as exc:
        raise DiagnoseError(EXTRA.format(name=exc.name)) from None
    serve.run(serve.Settings.from_env(host=host, port=port), extend=run.mount(settings))


@slack_cmd.command("manifest")
@click.option("--name", default="diagnose", show_default=True, help="The app's and the bot's name.")
@click.option("--http-url", help="The public base URL of `diagnose slack --http` (default: Socket Mode).")
def manifest_cmd(name: str, http_url: str | None) -> None:
    """Print the app manifest to paste into api.slack.com/apps -> Create New App -> From a manifest."""
    from diagnose.slack import manifest

    click.echo(manifest.render(name, http_url), nl=False)


@click.group("feedback")
def feedback_cmd() -> None:
    """What people said about the Slack app's answers."""


@feedback_cmd.command("export")
@click.option("-o", "--output", default="fixtures-draft", show_default=True, type=click.Path(file_okay=False),
              help="Folder for the draft fixture folders.")
@click.option("--store", type=click.Path(dir_okay=False, exists=True), help="The app's store (default: as the app).")
def export_cmd(output: str, store: str | None) -> None:
    """Write each wrong-cause answer as a draft fixture folder (expected.yaml + its redacted evidence)."""
    from diagnose.slack import export
    from diagnose.slack.settings import STORE_ENV, default_store
    from diagnose.slack.store import Store

    path = Path(store or os.environ.get(STORE_ENV) or default_store())
    if not path.exists():
        raise DiagnoseError(f"no answers kept yet: {path} does not exist")
    folders = export.export(Store(path), Path(output))
    for folder in folders:
        click.echo(str(folder))
    click.echo(f"{len(folders)} draft fixture(s) in {output}: finish each expected.yaml (source, how) and add the real log",
               err=True)
