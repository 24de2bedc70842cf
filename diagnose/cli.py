"""Command line: options -> api -> renderer -> exit code. Nothing else lives here."""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from diagnose import cli_conventions as conv
from diagnose import cli_settings as cset
from diagnose.cli_rules import rules_cmd
from diagnose.errors import EXIT_CLEAN, EXIT_FOUND, EXIT_UNEXPLAINED, EXIT_USAGE, DiagnoseError
from diagnose.export.cli import export_cmd
from diagnose.fleet.cli import fleet_cmd
from diagnose.slack.cli import feedback_cmd, slack_cmd

FORMATS = ("text", "json", "markdown", "slack", "html", "svg")


class DefaultGroup(click.Group):
    """`diagnose [INPUT ...]` runs the diagnosis; `diagnose rules ...` etc. are subcommands."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if ctx.resilient_parsing and not args:  # shell completion: complete the commands themselves
            return super().parse_args(ctx, args)
        if not args or (args[0] not in self.commands and args[0] not in ("--help", "-h", "--version")):
            if not ctx.resilient_parsing:
                conv.refuse_typo(args, self.commands)  # `diagnose preflite`: a mistyped command, not a file
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
    from diagnose import api

    if ctx.meta.get("show_settings"):  # the config files' and environment's settings, the flags given winning
        click.echo("\n".join(cset.settings_lines(ctx)))
        return
    paths = list(inputs)
    if not paths:
        if sys.stdin.isatty():
            raise click.UsageError("no input: give a file or directory, or pipe a log into diagnose")
        paths = ["-"]
    kb = api.load_kb(extra_rules, use_cache=not no_cache)
    from diagnose.cli_progress import for_terminal

    progress = for_terminal(quiet)  # bytes, rate, time left: on a terminal only, cleared even on Ctrl-C
    try:
        diagnosis = api.diagnose(paths, kb=kb, progress=progress)
    finally:
        if progress is not None:
            progress.clear()
    if not quiet:
        conv.warn_skipped(diagnosis)  # an input that could not be read: on stderr as well as in the report
    if template and ctx.get_parameter_source("fmt") == click.core.ParameterSource.COMMANDLINE and fmt != "markdown":
        raise click.UsageError(f"--template writes the post-mortem; it does not combine with --format {fmt}")
    _emit(diagnosis, "template:" + template if template else fmt, output, color, explain, redact, exit_zero, top=top)


def _emit(diagnosis: Any, fmt: str, output: str | None, color: str, explain: bool, redact: bool | None,
          exit_zero: bool, top: int | None = None, predicted: bool = False) -> None:
    """Render a diagnosis (or a preflight) in `fmt`, write it, and exit with the promised code."""
    from diagnose.render import RENDERERS

    opts: dict[str, Any] = {}
    if fmt == "text":
        opts = {"colour": _colour(color, output), "explain": explain, "top": top, "predicted": predicted}
    elif top:
        diagnosis.findings = diagnosis.findings[:top]
    if not explain:
        diagnosis.drop_explanations()
    if redact or (redact is None and fmt == "slack"):
        from diagnose.redact import redact_diagnosis

        diagnosis = redact_diagnosis(diagnosis)
    if fmt.startswith("template:"):  # --template FILE: a team's own post-mortem form
        from diagnose.render import template

        _write(template.render(diagnosis, fmt.partition(":")[2]), output)
    else:
        _write(RENDERERS[fmt](diagnosis, **opts), output)
    sys.exit(EXIT_CLEAN if exit_zero else exit_code(diagnosis, predicted))


def exit_code(diagnosis: Any, predicted: bool = False) -> int:
    """1 a cause found (predicted); 3 none, but errors no rule explains (a preflight: checks it was asked
    for could not run); 0 clean. A CI gate can trust 0."""
    if diagnosis.findings:
        return EXIT_FOUND
    if predicted:
        unchecked = [s for s in diagnosis.skipped if s.source.startswith(("preflight:", "model "))]
        return EXIT_UNEXPLAINED if unchecked else EXIT_CLEAN
    return EXIT_UNEXPLAINED if diagnosis.unmatched_errors else EXIT_CLEAN


def _colour(choice: str, output: str | None) -> bool:
    """--color auto: on a terminal, not into --output; NO_COLOR, TERM=dumb, FORCE_COLOR / CLICOLOR_FORCE."""
    return conv.colour(choice, output)


def _write(text: str, output: str | None) -> None:
    if output:
        with open(output, "w", encoding="utf-8") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)
        sys.stdout.flush()


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
    _emit(diagnosis, fmt, output, color, explain, redact, exit_zero, predicted=True)


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
    _write(render_json(report) if fmt == "json" else render_text(report, colour=_colour(color, output)), output)
    sys.exit(EXIT_CLEAN if report.passed else EXIT_FOUND)


cli.add_command(rules_cmd)  # the `rules` group lives in cli_rules.py
cli.add_command(slack_cmd)  # `diagnose slack` and `diagnose feedback` live in slack/cli.py (no Bolt import)
cli.add_command(feedback_cmd)
for _cmd in (conv.help_cmd, conv.version_cmd, conv.schema_cmd, cset.config_cmd):  # cli_conventions.py, cli_settings.py
    cli.add_command(_cmd)
cli.add_command(fleet_cmd)  # fleet/cli.py and export/cli.py import Ray / pySigma only when they run
cli.add_command(export_cmd)


def main() -> None:
    """Entry point: user errors are one line on stderr and exit code 2, never a traceback."""
    try:
        cli.main(standalone_mode=False, prog_name="diagnose", default_map=cset.Defaults())  # config files, env
    except DiagnoseError as exc:
        click.echo(f"diagnose: error: {exc}", err=True)
        sys.exit(exc.exit_code)
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
    except KeyboardInterrupt:
        sys.exit(130)
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(EXIT_CLEAN)
    except (MemoryError, RecursionError) as exc:  # input too deep or too big for this machine
        click.echo(f"diagnose: error: the input is too large or too deeply nested ({type(exc).__name__})", err=True)
        sys.exit(EXIT_USAGE)
    except Exception as exc:  # our bug: one line and exit 2, not a traceback that exits 1 ("found")
        if os.environ.get("DIAGNOSE_DEBUG"):
            raise
        click.echo(f"diagnose: error: internal error ({type(exc).__name__}: {str(exc)[:300]}); "
                   "DIAGNOSE_DEBUG=1 shows the traceback; please report it", err=True)
        sys.exit(EXIT_USAGE)
    except OSError as exc:  # writing --output, reading a file that vanished
        click.echo(f"diagnose: error: {exc.strerror or exc}: {getattr(exc, 'filename', '') or ''}".rstrip(": "), err=True)
        sys.exit(EXIT_USAGE)
