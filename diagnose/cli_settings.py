"""The settings on the command line: config files and environment variables become the defaults of the
commands' options (a flag given still wins), and `diagnose config` / `--show-settings` print the
effective settings with where each came from. cli.py wires these in."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import click

# command path -> {option's parameter name: settings key}
PARAMS: dict[tuple[str, ...], dict[str, str]] = {
    ("run",): {"fmt": "format", "extra_rules": "extra-rules"},
    ("preflight",): {"fmt": "format", "extra_rules": "extra-rules", "python": "python"},
    ("verify",): {"extra_rules": "extra-rules", "python": "python"},
    ("collect",): {"python": "python"},
    ("rules", "list"): {"extra_rules": "extra-rules"},
    ("rules", "lint"): {"extra_rules": "extra-rules"},
}


class Defaults(Mapping[str, Any]):
    """A click `default_map` that reads the settings only when a command that uses them starts, so that
    `--version`, `help` and `config` itself run whatever the files hold."""

    def __init__(self, path: tuple[str, ...] = ()) -> None:
        self.path = path

    def _values(self) -> dict[str, Any]:
        params = PARAMS.get(self.path)
        if not params:
            return {}
        from diagnose.settings import current

        settings = current()
        return {p: settings.get(k) for p, k in params.items() if settings.source(k) != "default"}

    def get(self, key: str, default: Any = None) -> Any:
        sub = self.path + (key,)
        if sub in PARAMS or any(p[: len(sub)] == sub for p in PARAMS):
            return Defaults(sub)
        return self._values().get(key, default)

    def __getitem__(self, key: str) -> Any:
        value = self.get(key)
        if value is None:
            raise KeyError(key)
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(self._values())

    def __len__(self) -> int:
        return len(self._values())


def settings_lines(ctx: click.Context | None = None) -> list[str]:
    """`key = value  # source` for every key; with `ctx`, the flags given to that command win."""
    from diagnose.settings import current
    from diagnose.settings_keys import KEYS

    settings = current()
    flags: dict[str, tuple[Any, str]] = {}
    if ctx is not None:
        for param in ctx.command.params:
            key = PARAMS.get(tuple(ctx.command_path.split()[1:]) or ("run",), {}).get(param.name or "")
            if key and ctx.get_parameter_source(param.name or "") == click.core.ParameterSource.COMMANDLINE:
                flags[key] = (ctx.params[param.name or ""], (param.opts or [""])[-1])
    lines = [f"# config files read: {', '.join(map(str, settings.files)) or 'none'}"]
    for key in KEYS:
        value, source = flags.get(key) or (settings.get(key), settings.source(key))
        lines.append(f"{key} = {_toml(value)}  # {source}")
    return lines


def _toml(value: Any) -> str:
    if value is None:
        return "(not set)"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    import json

    return json.dumps(value)


@click.command("config")
def config_cmd() -> None:
    """Show the effective settings and where each came from (files, environment, defaults).

    \b
    Files: the nearest diagnose.toml or pyproject.toml [tool.diagnose] (from the working directory up,
    or DIAGNOSE_CONFIG), over the user file (~/.config/diagnose/config.toml, $XDG_CONFIG_HOME honoured).
    Environment variables win over files, flags over both. Keys and variables: docs/configuration.md.
    """
    click.echo("\n".join(settings_lines()))


def _show(ctx: click.Context, _param: Any, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        ctx.meta["show_settings"] = True


show_settings_option = click.option(
    "--show-settings", is_flag=True, expose_value=False, callback=_show,
    help="Print the effective settings (and where each came from) and exit.",
)
