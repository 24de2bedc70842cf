"""Command line: options -> api -> renderer -> exit code. Nothing else lives here."""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from diagnose import __version__
from diagnose.errors import EXIT_CLEAN, EXIT_FOUND, EXIT_USAGE, DiagnoseError

FORMATS = ("text", "json")


class DefaultGroup(click.Group):
    """`diagnose [INPUT ...]` runs the diagnosis; `diagnose rules ...` etc. are subcommands."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args or (args[0] not in self.commands and args[0] not in ("--help", "-h", "--version")):
            args = ["run", *args]
        return super().parse_args(ctx, args)


@click.group(cls=DefaultGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="diagnose")
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
def run_cmd(inputs: tuple[str, ...], fmt: str, output: str | None, top: int | None, extra_rules: tuple[str, ...],
            explain: bool, color: str, no_cache: bool, exit_zero: bool) -> None:
    """Diagnose INPUT files, directories and bundles ('-' or a pipe is stdin)."""
    from diagnose import api
    from diagnose.render import RENDERERS

    paths = list(inputs)
    if not paths:
        if sys.stdin.isatty():
            raise click.UsageError("no input: give a file or directory, or pipe a log into diagnose")
        paths = ["-"]
    kb = api.load_kb(extra_rules, use_cache=not no_cache)
    diagnosis = api.diagnose(paths, kb=kb)
    opts: dict[str, Any] = {}
    if fmt == "text":
        to_tty = output is None and sys.stdout.isatty()
        opts = {
            "colour": color == "always" or (color == "auto" and to_tty and not os.environ.get("NO_COLOR")),
            "explain": explain,
            "top": top,
        }
    elif top:
        diagnosis.findings = diagnosis.findings[:top]
    if not explain:
        diagnosis.rejected = []
    text = RENDERERS[fmt](diagnosis, **opts)
    _write(text, output)
    code = EXIT_FOUND if diagnosis.findings and not exit_zero else EXIT_CLEAN
    sys.exit(code)


def _write(text: str, output: str | None) -> None:
    if output:
        with open(output, "w", encoding="utf-8") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)
        sys.stdout.flush()


@cli.group("rules")
def rules_cmd() -> None:
    """The knowledge base's own tools: list, show, lint, test, docs, schema."""


@rules_cmd.command("list")
@click.option("--rules", "extra_rules", multiple=True, type=click.Path(file_okay=False, exists=True))
def rules_list(extra_rules: tuple[str, ...]) -> None:
    """Every rule: id, category, severity, title."""
    from diagnose import api

    kb = api.load_kb(extra_rules)
    width = max((len(r) for r in kb.rules), default=10)
    for rule in sorted(kb.rules.values(), key=lambda r: (r.category, r.id)):
        click.echo(f"{rule.id:<{width}}  {rule.category:<10}  {rule.severity:<8}  {rule.title}")
    click.echo(f"{len(kb.rules)} rules, kb {kb.version}")


@rules_cmd.command("show")
@click.argument("rule_id")
def rules_show(rule_id: str) -> None:
    """Print one rule's file."""
    from pathlib import Path

    from diagnose import api

    kb = api.load_kb()
    rule = kb.rules.get(rule_id)
    if rule is None:
        from rapidfuzz import process

        near = process.extractOne(rule_id, list(kb.rules))
        hint = f"; did you mean {near[0]}?" if near and near[1] > 60 else ""
        raise DiagnoseError(f"no rule {rule_id!r}{hint}")
    click.echo(Path(rule.path).read_text(encoding="utf-8"), nl=False)


def main() -> None:
    """Entry point: user errors are one line on stderr and exit code 2, never a traceback."""
    try:
        cli.main(standalone_mode=False, prog_name="diagnose")
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
    except OSError as exc:  # writing --output, reading a file that vanished
        click.echo(f"diagnose: error: {exc.strerror or exc}: {getattr(exc, 'filename', '') or ''}".rstrip(": "), err=True)
        sys.exit(EXIT_USAGE)
