"""Command line: options -> api -> renderer -> exit code. Nothing else lives here."""

from __future__ import annotations

import sys
from typing import Any

import click

from diagnose import cli_conventions as conv
from diagnose import cli_fast, cli_run
from diagnose import cli_settings as cset
from diagnose.errors import EXIT_CLEAN, EXIT_FOUND, EXIT_USAGE, DiagnoseError

FORMATS = cli_fast.FORMATS  # the plain path (cli_fast.py) parses --format without click
# Subcommands imported only when named (or listed by --help / completion): a plain `diagnose crash.log`
# does not pay for defining them. fleet/export/slack import Ray, pySigma, Bolt only when they run.
LAZY_COMMANDS = {
    "rules": "diagnose.cli_rules:rules_cmd",
    "slack": "diagnose.slack.cli:slack_cmd",
    "feedback": "diagnose.slack.cli:feedback_cmd",
    "fleet": "diagnose.fleet.cli:fleet_cmd",
    "export": "diagnose.export.cli:export_cmd",
}


class DefaultGroup(click.Group):
    """`diagnose [INPUT ...]` runs the diagnosis; `diagnose rules ...` etc. are subcommands."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *LAZY_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in LAZY_COMMANDS:
            import importlib

            module, attr = LAZY_COMMANDS[cmd_name].split(":")
            self.add_command(getattr(importlib.import_module(module), attr), cmd_name)
        return self.commands.get(cmd_name)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if ctx.resilient_parsing and not args:  # shell completion: complete the commands themselves
            return super().parse_args(ctx, args)
        names = self.list_commands(ctx)
        if not args or (args[0] not in names and args[0] not in ("--help", "-h", "--version")):
            if not ctx.resilient_parsing:
                conv.refuse_typo(args, dict.fromkeys(names))  # `diagnose preflite`: a mistyped command, not a file
            args = ["run", *args]
        return super().parse_args(ctx, args)

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list[Any]:
        from click.shell_completion import CompletionItem

        return [*super().shell_complete(ctx, incomplete), CompletionItem(incomplete, type="file")]  # or an input

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        conv.format_epilog(self, ctx, formatter)  # the run command's options, exit codes, environment


@click.group(cls=DefaultGroup, context_settings={"help_option_names": ["-h", "--help"]})
@conv.version_option
def cli() -> None:
    """Name the root cause of a failed GPU / LLM-inference deployment.

    \b
    cat crash.log | diagnose
    diagnose server.log dmesg.txt nvidia-smi.txt pip-freeze.txt
    diagnose --format json bundle.tar.gz
    """


@cli.command("run")
@click.argument("inputs", nargs=-1, type=click.Path(dir_okay=True, allow_dash=True))
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write here instead of stdout.")
@click.option("--top", type=click.IntRange(min=1), help="Show at most N root causes.")
@click.option("--rules", "extra_rules", multiple=True, type=click.Path(file_okay=False, exists=True), help="An extra directory of rules.")
@click.option("--explain", is_flag=True, help="Also say why rules with some evidence were not reported.")
@click.option("--color", type=click.Choice(["auto", "always", "never"]), default="auto", show_default=True)
@click.option("--no-cache", is_flag=True, help="Rebuild the compiled knowledge base instead of using the cache.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when a root cause is found.")
@click.option("--redact/--no-redact", default=None,
              help="Mask tokens, IPs, hostnames, e-mails and user names. [default: on for slack, off otherwise]")
@click.option("--template", type=click.Path(dir_okay=False), metavar="FILE",
              help="Write the post-mortem through a Jinja2 template of your own (see docs/postmortem.md).")
@click.option("-q", "--quiet", is_flag=True, help="No progress line and no warnings on stderr (errors still).")
@cset.show_settings_option
@click.pass_context
def run_cmd(ctx: click.Context, inputs: tuple[str, ...], fmt: str, output: str | None, top: int | None,
            extra_rules: tuple[str, ...], explain: bool, color: str, no_cache: bool, exit_zero: bool,
            redact: bool | None, template: str | None, quiet: bool) -> None:
    """Diagnose INPUT files, directories and bundles ('-' or a pipe is stdin)."""

    if ctx.meta.get("show_settings"):  # the config files' and environment's settings, the flags given winning
        click.echo("\n".join(cset.settings_lines(ctx)))
        return
    paths = list(inputs)
    if not paths:
        if sys.stdin.isatty():
            raise click.UsageError("no input: give a file or directory, or pipe a log into diagnose")
        paths = ["-"]
    if template and ctx.get_parameter_source("fmt") == click.core.ParameterSource.COMMANDLINE and fmt != "markdown":
        raise click.UsageError(f"--template writes the post-mortem; it does not combine with --format {fmt}")
    cli_run.run(paths, fmt=fmt, output=output, top=top, extra_rules=extra_rules, explain=explain, color=color,
                no_cache=no_cache, exit_zero=exit_zero, redact=redact, template=template, quiet=quiet)


@cli.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8080, show_default=True, type=click.IntRange(0, 65535))
@click.option("--insecure-no-auth", is_flag=True, help="Serve /v1/diagnose without a bearer token (testing only).")
@click.option("--redact/--no-redact", default=True, show_default=True, help="Mask secrets and identities in answers.")
@click.option("--max-body-mb", default=8.0, show_default=True, type=click.FloatRange(min=0.001), help="Largest request body.")
@click.option("--timeout", "timeout_s", default=30.0, show_default=True, type=click.FloatRange(min=0.1),
              help="Seconds a request may take.")
@click.option("--max-inflight", default=256, show_default=True, type=click.IntRange(min=1),
              help="Requests with their body read, waiting for or holding a worker; more are answered 503.")
@click.option("--workers", default=0, show_default=True, type=click.IntRange(min=0),
              help="Diagnosis worker processes, each stopped at the request's deadline (0: one per CPU, at most 8).")
def serve_cmd(host: str, port: int, insecure_no_auth: bool, redact: bool, max_body_mb: float, timeout_s: float,
              max_inflight: int, workers: int) -> None:
    """The chat-ops HTTP service: POST /v1/diagnose, POST /slack/commands, GET /healthz.

    \b
    DIAGNOSE_API_TOKEN    bearer token for /v1/diagnose (required unless --insecure-no-auth)
    SLACK_SIGNING_SECRET  enables /slack/commands (Slack's request signing secret)
    """
    try:
        from diagnose.server import serve
    except ImportError as exc:
        raise DiagnoseError(f"the server needs its extra ({exc.name} is missing): pip install 'gpu-diagnose[server]'") from None
    serve.run(serve.Settings.from_env(
        host=host, port=port, insecure_no_auth=insecure_no_auth, redact=redact,
        max_body=int(max_body_mb * 1024 * 1024), timeout_s=timeout_s, max_inflight=max_inflight, workers=workers,
    ))


@cli.command("collect")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True),
              help="Bundle path (default: diagnose-bundle-HOST-TIME.tar.gz).")
@click.option("--python", "python", default=None, show_default="the server's: a running vllm/sglang process, "
              "their entry points on PATH, a python3 with torch, else this Python",
              help="The Python of the server's environment, for its packages and collect_env.")
def collect_cmd(output: str | None, python: str | None) -> None:
    """Gather this GPU host's artifacts (NVML, nvidia-smi, dmesg, packages, env) into a bundle."""
    import socket
    import time
    from pathlib import Path

    from diagnose.collect.bundle import Collector

    path = Path(output or f"diagnose-bundle-{socket.gethostname()}-{time.strftime('%Y%m%d-%H%M%S')}.tar.gz")
    tty = sys.stderr.isatty()
    count = {"n": 0}

    def progress(label: str) -> None:
        count["n"] += 1
        if tty:
            sys.stderr.write(f"\r\x1b[Kcollecting [{count['n']}] {label[:70]}")
            sys.stderr.flush()

    if python:
        how = "--python"
    else:
        from diagnose.collect import interpreter

        python, how = interpreter.find()
    click.echo(f"packages of {python} ({how.split(' (')[0]})", err=True)
    collector = Collector(python=python, python_source=how, progress=progress)
    collector.run_all()
    collector.write(path)
    if tty:
        sys.stderr.write("\r\x1b[K")
    failed = [i for i in collector.items if i.status != "ok"]
    click.echo(f"wrote {path}: {len(collector.files)} file(s); {len(failed)} item(s) not collected", err=True)
    for item in failed:
        click.echo(f"  {item.name}: {item.reason}", err=True)
    click.echo(f"read it back with: diagnose {path}", err=True)


class _LaunchAfterDashes(click.Command):
    """Everything after `--` is the launch command, kept whole (not parsed as our options)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if "--" in args:
            at = args.index("--")
            ctx.meta["launch"] = args[at + 1:]
            args = args[:at]
        return super().parse_args(ctx, args)


@cli.command("preflight", cls=_LaunchAfterDashes)
@click.argument("inputs", nargs=-1, type=click.Path(dir_okay=True, allow_dash=True))
@click.option("--python", "python", help="The interpreter of the server's environment, asked live for its packages.")
@click.option("--model", help="The model's config.json, its folder, or a repo id in the Hugging Face cache.")
@click.option("--launch", "launch_text", help="The launch command as one string (or give it after `--`).")
@click.option("--plan", help="An install about to be run, e.g. \"pip install 'torchvision>=0.22'\".")
@click.option("--plan-report", type=click.Path(dir_okay=False, exists=True),
              help="`pip install --dry-run --report FILE` output for the install about to be run.")
@click.option("--resolve", is_flag=True, help="With --plan and --python: ask that pip for a dry-run report (network).")
@click.option("--nvml/--no-nvml", default=None, help="Read this host's GPUs live (default: with --python and no GPU input).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write here instead of stdout.")
@click.option("--rules", "extra_rules", multiple=True, type=click.Path(file_okay=False, exists=True), help="An extra directory of rules.")
@click.option("--explain", is_flag=True, help="Also say why predictions were rejected.")
@click.option("--color", type=click.Choice(["auto", "always", "never"]), default="auto", show_default=True)
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when a failure is predicted.")
@click.option("--redact/--no-redact", default=None,
              help="Mask tokens, IPs, hostnames, e-mails and user names. [default: on for slack, off otherwise]")
@click.pass_context
def preflight_cmd(ctx: click.Context, inputs: tuple[str, ...], python: str | None, model: str | None,
                  launch_text: str | None, plan: str | None, plan_report: str | None, resolve: bool,
                  nvml: bool | None, fmt: str, output: str | None, extra_rules: tuple[str, ...], explain: bool,
                  color: str, exit_zero: bool, redact: bool | None) -> None:
    """Predict the failures of a deployment before launch, from its environment alone.

    \b
    diagnose preflight pip-freeze.txt nvidia-smi.txt --model ./GLM-5/config.json
    diagnose preflight --python /srv/venv/bin/python -- python -m sglang.launch_server --tp 8 ...
    diagnose preflight bundle.tar.gz --plan "pip install 'torchvision>=0.22'"
    """
    from diagnose import api
    from diagnose.preflight.core import preflight

    launch = ctx.meta.get("launch") or launch_text
    kb = api.load_kb(extra_rules)
    diagnosis = preflight(list(inputs), kb=kb, python=python, model=model, launch=launch, plan=plan,
                          plan_report=plan_report, resolve=resolve, nvml=nvml)
    cli_run.emit(diagnosis, fmt, output, color, explain, redact, exit_zero, predicted=True)


@cli.command("verify")
@click.argument("names", nargs=-1, shell_complete=lambda ctx, param, incomplete: conv.complete_rule_ids_or_files(incomplete))
@click.option("--python", "python", help="`python` and `pip` in the commands mean this interpreter.")
@click.option("--timeout", type=click.FloatRange(min=1), default=60, show_default=True, help="Seconds per command.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write here instead of stdout.")
@click.option("--rules", "extra_rules", multiple=True, type=click.Path(file_okay=False, exists=True), help="An extra directory of rules.")
@click.option("--color", type=click.Choice(["auto", "always", "never"]), default="auto", show_default=True)
def verify_cmd(names: tuple[str, ...], python: str | None, timeout: float, fmt: str, output: str | None,
               extra_rules: tuple[str, ...], color: str) -> None:
    """Run the verify commands of RULE_IDs (or of the findings of a diagnosis of INPUTs); exit 0 only if all pass.

    \b
    diagnose verify torchvision-torch-mismatch --python /srv/venv/bin/python
    diagnose verify crash.log
    """
    from diagnose import api
    from diagnose.preflight.verify import run_verify
    from diagnose.preflight.verify_render import render_json, render_text

    kb = api.load_kb(extra_rules)
    report = run_verify(list(names), kb=kb, python=python, timeout=timeout)
    cli_run.write(render_json(report) if fmt == "json" else render_text(report, colour=cli_run.colour(color, output)), output)
    sys.exit(EXIT_CLEAN if report.passed else EXIT_FOUND)


for _cmd in (conv.help_cmd, conv.version_cmd, conv.schema_cmd, cset.config_cmd):  # cli_conventions.py, cli_settings.py
    cli.add_command(_cmd)
# rules (cli_rules.py), slack / feedback (slack/cli.py), fleet (fleet/cli.py), export (export/cli.py): LAZY_COMMANDS


def main() -> None:
    """The click entry point (cli_fast.main runs the plain invocations without click, the rest here): user
    errors are one line on stderr and exit code 2, never a traceback (cli_errors.guarded)."""
    from diagnose.cli_errors import guarded

    guarded(_click_main)


def _click_main() -> None:
    try:
        cli.main(standalone_mode=False, prog_name="diagnose", default_map=cset.Defaults())  # config files, env
    except click.exceptions.NoArgsIsHelpError as exc:
        click.echo(exc.ctx.get_help() if exc.ctx else str(exc))
        sys.exit(EXIT_USAGE)
    except click.UsageError as exc:
        click.echo(f"diagnose: error: {exc.format_message()}", err=True)
        sys.exit(EXIT_USAGE)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.Abort:
        sys.exit(130)
