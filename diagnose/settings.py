"""Settings the way ruff finds its own: defaults < the user file < the project file < the environment < flags.

The project file is the nearest `diagnose.toml`, or `pyproject.toml` with a `[tool.diagnose]` table,
walking up from the working directory (`DIAGNOSE_CONFIG` names one instead). The user file is
`config.toml` in the platform's config directory (`$XDG_CONFIG_HOME/diagnose`, default
`~/.config/diagnose`; macOS `~/Library/Application Support/diagnose`, Windows `%APPDATA%\\diagnose`).
Each key is taken from the highest layer that sets it, and `Settings.source()` says which that was.
Paths in a file are relative to that file's directory. A bad file is one `DiagnoseError` line.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from diagnose import settings_keys as keys
from diagnose.errors import DiagnoseError

CONFIG_ENV = "DIAGNOSE_CONFIG"


@dataclass
class Settings:
    """The run settings: each key's value, where it came from, and the files read."""

    values: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)  # key -> "default", a file, an env var or a flag
    files: list[Path] = field(default_factory=list)  # the files read, lowest layer first

    def get(self, key: str) -> Any:
        return self.values.get(key, keys.KEYS[key].default)

    def source(self, key: str) -> str:
        return self.sources.get(key, "default")

    def apply(self, layer: Mapping[str, Any], source: str) -> None:
        for key, value in layer.items():
            self.values[key], self.sources[key] = value, source


def user_config_dir(environ: Mapping[str, str] = os.environ) -> Path:
    home = Path(os.path.expanduser("~"))
    if environ.get("XDG_CONFIG_HOME"):
        return Path(environ["XDG_CONFIG_HOME"]) / "diagnose"
    if sys.platform == "win32":
        return Path(environ.get("APPDATA") or home / "AppData" / "Roaming") / "diagnose"
    if sys.platform == "darwin":
        return home / "Library" / "Application Support" / "diagnose"
    return home / ".config" / "diagnose"


def _parse_toml(path: Path) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise DiagnoseError(f"{path}: not valid TOML ({exc})") from None
    except OSError as exc:
        raise DiagnoseError(f"{path}: cannot read the config file: {exc.strerror or exc}") from None


def _table(path: Path) -> dict[str, Any] | None:
    """The diagnose settings in `path` (a diagnose.toml's top level, a pyproject's [tool.diagnose]), or None."""
    if path.name == "pyproject.toml":
        try:
            if b"tool.diagnose" not in path.read_bytes():
                return None  # most projects' pyproject has no [tool.diagnose]: no TOML parse (tomllib's import is slow)
        except OSError:
            pass  # _parse_toml says it
    data = _parse_toml(path)
    if path.name != "pyproject.toml":
        return data
    tool = data.get("tool", {})
    table = tool.get("diagnose") if isinstance(tool, dict) else None
    if table is not None and not isinstance(table, dict):
        raise DiagnoseError(f"{path}: [tool.diagnose] must be a table")
    return table


def project_file(start: Path) -> tuple[Path, dict[str, Any]] | None:
    """The nearest diagnose.toml, or pyproject.toml with [tool.diagnose], in `start` or above it."""
    for folder in (start, *start.parents):
        for name in ("diagnose.toml", "pyproject.toml"):
            path = folder / name
            if path.is_file():
                table = _table(path)
                if table is not None:
                    return path, table
    return None


def _where(path: Path) -> str:
    return f"{path} [tool.diagnose]" if path.name == "pyproject.toml" else str(path)


def load(cwd: Path | None = None, environ: Mapping[str, str] = os.environ) -> Settings:
    """The effective settings (without flags: the CLI applies those, and they win)."""
    settings = Settings()
    user = user_config_dir(environ) / "config.toml"
    if user.is_file():
        settings.apply(keys.check_file(_parse_toml(user), user, _where(user)), _where(user))
        settings.files.append(user)
    named = environ.get(CONFIG_ENV, "").strip()
    if named:
        path = Path(named)
        if not path.is_file():
            raise DiagnoseError(f"{CONFIG_ENV}={named}: no such config file")
        found: tuple[Path, dict[str, Any]] | None = (path, _table(path) or {})
    else:
        found = project_file((cwd or Path.cwd()).resolve())
    if found:
        path, table = found
        settings.apply(keys.check_file(table, path, _where(path)), _where(path))
        settings.files.append(path)
    settings.apply(keys.from_environment(environ), "environment")
    for key, env in ((k, spec.env) for k, spec in keys.KEYS.items()):
        if settings.sources.get(key) == "environment":
            settings.sources[key] = env
    return settings


_CACHE: dict[tuple[str, tuple[tuple[str, str], ...]], Settings] = {}


def current() -> Settings:
    """`load()` for this process's working directory and environment, read once per (cwd, env)."""
    names = {CONFIG_ENV, "XDG_CONFIG_HOME", "APPDATA", *(s.env for s in keys.KEYS.values())}
    key = (os.getcwd(), tuple(sorted((n, os.environ[n]) for n in names if n in os.environ)))
    if key not in _CACHE:
        _CACHE[key] = load()
    return _CACHE[key]
