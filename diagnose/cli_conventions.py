"""What people expect of a command line: `--version` that says enough, `help` and `version` as words,
a mistyped command named as one, the main command's options and the exit codes in `--help`, and the
colour conventions (NO_COLOR, FORCE_COLOR / CLICOLOR_FORCE, TERM=dumb). cli.py wires these in."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any

import click

from diagnose import __version__

EXIT_CODES = [
    ("0", "nothing found (or --exit-zero)"),
    ("1", "a root cause found; for preflight, a failure predicted; for verify, a check failed"),
    ("2", "a usage or input error (one line on stderr)"),
    ("3", "no known cause, but error lines no rule explains (also when the only finding is a guess by wording); "
          "for preflight, a check it was asked for could not run"),
]
ENVIRONMENT = [
    ("NO_COLOR", "no colour (https://no-color.org); also TERM=dumb"),
    ("FORCE_COLOR, CLICOLOR_FORCE", "colour even when not on a terminal"),
    ("DIAGNOSE_RULES_DIR", "the knowledge base to use instead of the shipped one"),
    ("DIAGNOSE_CACHE_DIR", "where the compiled KB is cached (default: the platform's cache directory)"),
    ("DIAGNOSE_REDACT_DOMAINS, DIAGNOSE_REDACT_PATTERNS", "a team's own names to mask with --redact"),
    ("DIAGNOSE_EXTRA_RULES, DIAGNOSE_FORMAT, DIAGNOSE_PYTHON", "a team's rules dirs, the default --format, --python"),
    ("DIAGNOSE_CONFIG", "the config file to use (default: diagnose.toml or pyproject.toml [tool.diagnose] "
                        "from here up, over ~/.config/diagnose/config.toml); `diagnose config` shows them"),
    ("DIAGNOSE_DEBUG", "show the traceback of an internal error"),
]


def version_text() -> str:
    import platform

    from diagnose.artifacts.prefilter import hyperscan_module

    try:
        from diagnose import api

        kb = api.load_kb()
        kb_line = f"knowledge base {kb.version} ({len(kb.rules)} rules)"
    except Exception as exc:  # a broken rules dir must not hide the version
        kb_line = f"knowledge base: not loaded ({str(exc)[:200]})"
    hs = hyperscan_module()
    if hs is not None:
        fast = f"fast path: on (hyperscan {getattr(hs, '__version__', '')})".replace(" )", ")")
    elif os.environ.get("DIAGNOSE_NO_HYPERSCAN"):
        fast = "fast path: off (DIAGNOSE_NO_HYPERSCAN is set; the regex path, slower on large logs)"
    else:
        fast = "fast path: off (hyperscan is not installed; the regex path, slower on large logs)"
    python = f"Python {platform.python_version()} ({platform.python_implementation()}, {sys.executable})"
    return "\n".join([f"diagnose {__version__} (gpu-diagnose)", kb_line, python, fast])


def _print_version(ctx: click.Context, _param: Any, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(version_text())
        ctx.exit(0)


version_option = click.option(
    "--version", is_flag=True, expose_value=False, is_eager=True, callback=_print_version,
    help="Show the version, the knowledge base's, Python's and whether the fast path is on.",
)


def refuse_typo(args: list[str], commands: Mapping[str, Any]) -> None:
    """A first word that is no file but nearly a command name: say so, rather than 'no such file'."""
    if not args or args[0].startswith("-") or "/" in args[0] or "." in args[0] or os.path.exists(args[0]):
        return
    import difflib

    near = difflib.get_close_matches(args[0], [c for c in commands if c != "run"], n=1, cutoff=0.7)
    if near:
        raise click.UsageError(f"no such command {args[0]!r}, did you mean {near[0]}?")


def format_epilog(group: click.Group, ctx: click.Context, formatter: click.HelpFormatter) -> None:
    """`diagnose --help`: the options of `diagnose [INPUT ...]`, the exit codes, the environment."""
    run = group.commands.get("run")
    if run is not None:
        sub = click.Context(run, info_name=ctx.info_name, parent=ctx)
        options = [p for p in run.get_params(sub) if isinstance(p, click.Option)]
        rows = [r for r in (p.get_help_record(sub) for p in options) if r and r[0] != "-h, --help"]
        with formatter.section("Options of diagnose [INPUT ...]"):
            formatter.write_dl(rows)
    with formatter.section("Exit codes"):
        formatter.write_dl(EXIT_CODES)
    with formatter.section("Environment"):
        formatter.write_dl(ENVIRONMENT)
    formatter.write_paragraph()
    formatter.write_text("`diagnose help COMMAND` or `diagnose COMMAND --help` for a command's own options.")


@click.command("help")
@click.argument("command", nargs=-1)
@click.pass_context
def help_cmd(ctx: click.Context, command: tuple[str, ...]) -> None:
    """Show the help of diagnose, or of COMMAND."""
    parent = ctx.parent or ctx
    target: click.Command = parent.command
    tctx = parent
    for name in command:
        sub = target.get_command(tctx, name) if isinstance(target, click.Group) else None
        if sub is None:
            raise click.UsageError(f"no such command {name!r}; `diagnose help` lists them")
        tctx = click.Context(sub, info_name=name, parent=tctx)
        target = sub
    click.echo(tctx.get_help())


@click.command("version")
def version_cmd() -> None:
    """Show the version, the knowledge base's, Python's and whether the fast path is on."""
    click.echo(version_text())


@click.command("schema")
def schema_cmd() -> None:
    """Print the JSON Schema of `--format json` (the contract for bots and scripts)."""
    from diagnose.contract import schema_text

    click.echo(schema_text(), nl=False)


def complete_rule_ids(incomplete: str) -> list[str]:
    """Shell completion of a rule id (`diagnose rules show xid-<TAB>`), from the cached KB."""
    try:
        from diagnose import api

        return sorted(r for r in api.load_kb().rules if r.startswith(incomplete))
    except Exception:  # completion must never print a traceback into the shell
        return []


def complete_rule_ids_or_files(incomplete: str) -> list[Any]:
    """`diagnose verify <TAB>`: a rule id, or an input file to diagnose first."""
    from click.shell_completion import CompletionItem

    return [*(CompletionItem(r) for r in complete_rule_ids(incomplete)), CompletionItem(incomplete, type="file")]


def warn_skipped(diagnosis: Any) -> None:
    """Each input (or part of one) that could not be used, one `diagnose: warning:` line on stderr."""
    for skipped in diagnosis.skipped:
        click.echo(f"diagnose: warning: {skipped.source}: {skipped.reason}", err=True)
