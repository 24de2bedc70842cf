"""The plain `diagnose FILE` / pipe path without click (cli_fast.py) must be the click command in every
byte a user sees, and must hand everything else to click."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import click
import pytest

from diagnose import cli, cli_fast

ROOT = Path(__file__).resolve().parents[1]
CASES = sorted(p for p in (ROOT / "fixtures").iterdir() if p.is_dir())


def _run(entry: str, args: list[str], stdin: bytes | None = None, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    code = f"import sys; sys.argv[0] = 'diagnose'; from {entry} import main; main()"
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-c", code, *args], input=stdin, capture_output=True, env=env,
                          cwd=cwd, timeout=120)


def test_command_names_are_the_click_groups():
    ctx = click.Context(cli.cli)
    assert frozenset(cli.cli.list_commands(ctx)) == cli_fast.COMMANDS


@pytest.mark.parametrize("case", CASES[::25], ids=lambda p: p.name)
@pytest.mark.parametrize("fmt", [[], ["--format", "json"], ["--format=markdown", "-q"]], ids=["text", "json", "md"])
def test_same_output_and_exit_code_as_click(case: Path, fmt: list[str]):
    files = sorted(str(p) for p in case.iterdir() if p.name != "expected.yaml")
    fast, slow = _run("diagnose.cli_fast", [*fmt, *files]), _run("diagnose.cli", ["run", *fmt, *files])
    assert (fast.returncode, fast.stdout, fast.stderr) == (slow.returncode, slow.stdout, slow.stderr)


def test_stdin_is_the_same_as_click():
    log = next(c / "traceback.log" for c in CASES if (c / "traceback.log").exists())
    data = log.read_bytes()
    fast, slow = _run("diagnose.cli_fast", ["--exit-zero"], stdin=data), _run("diagnose.cli", ["--exit-zero"], stdin=data)
    assert fast.returncode == slow.returncode == 0
    assert fast.stdout == slow.stdout and b"root cause" in fast.stdout


@pytest.mark.parametrize("argv", [
    ["rules", "list"], ["--top", "1", "x.log"], ["--version"], ["-h"], ["missing-file.log"], ["--format", "yaml", "x.log"],
    ["--format"], ["preflite"],
])
def test_everything_else_goes_to_click(argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    (tmp_path / "x.log").write_text("hello\n")
    monkeypatch.chdir(tmp_path)
    assert cli_fast.plan(argv) is None


def test_a_plain_run_is_planned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    (tmp_path / "x.log").write_text("hello\n")
    monkeypatch.chdir(tmp_path)
    assert cli_fast.plan(["x.log", "--format", "json", "-q"]) == {"paths": ["x.log"], "fmt": "json", "quiet": True}


def test_run_settings_from_the_environment_go_to_click(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    (tmp_path / "x.log").write_text("hello\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DIAGNOSE_FORMAT", "json")
    from diagnose import settings

    settings._CACHE.clear()
    try:
        assert cli_fast.plan(["x.log"]) is None
        done = _run("diagnose.cli_fast", ["x.log"], cwd=tmp_path)
        assert done.stdout.lstrip().startswith(b"{")  # the setting applied (by click's default map)
    finally:
        settings._CACHE.clear()


def test_errors_are_one_line_on_both_paths(tmp_path: Path):
    bad = tmp_path / "out-dir"
    bad.mkdir()
    log = next(c / "traceback.log" for c in CASES if (c / "traceback.log").exists())
    done = _run("diagnose.cli_fast", [str(log), "--format", "json"], cwd=tmp_path)
    assert done.returncode == 1
    # writing into a directory is an OSError: one line, exit 2, on the click path (-o is click's)
    done = _run("diagnose.cli_fast", [str(log), "-o", str(bad)], cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.count(b"\n") == 1 and b"Traceback" not in done.stderr
