"""The conventions people expect of a CLI, through the real `python -m diagnose`."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import jsonschema
from conftest import FIXTURES, ROOT, run_cli

from diagnose import __version__

SEED = str(FIXTURES / "torch-extension-abi-mismatch--seed-002" / "verify.log")
H200X2 = FIXTURES / "healthy" / "host-h200x2-snapshot"
NO_COLOUR_ENV = {"NO_COLOR": "", "FORCE_COLOR": "", "CLICOLOR_FORCE": "", "CLICOLOR": "", "TERM": "xterm"}


def _out(*args: str, env: dict[str, str] | None = None) -> str:
    return run_cli(*args, env={**NO_COLOUR_ENV, **(env or {})}).stdout.decode()


def test_help_shows_the_main_commands_options_exit_codes_and_environment():
    shown = _out("--help")
    for option in ("--format [text|json|markdown|slack|html|svg]", "--output", "--top", "--rules", "--explain",
                   "--redact / --no-redact", "--exit-zero", "--version"):
        assert option in shown, option
    codes = shown.split("Exit codes:")[1]
    for code, meaning in (("0", "nothing found"), ("1", "a root cause found"), ("2", "usage"), ("3", "no rule explains")):
        assert f"  {code}  " in codes and meaning in codes
    assert "NO_COLOR" in shown and "DIAGNOSE_CACHE_DIR" in shown
    assert _out("help") == shown and _out("-h") == shown


def test_help_word_takes_a_command_and_refuses_an_unknown_one():
    assert _out("help", "preflight") == _out("preflight", "--help")
    assert _out("help", "rules", "docs").startswith("Usage: diagnose rules docs")
    wrong = run_cli("help", "nosuch")
    assert wrong.returncode == 2 and "no such command 'nosuch'" in wrong.stderr.decode()


def test_a_mistyped_command_is_named_as_one_not_as_a_missing_file():
    typo = run_cli("preflite")
    assert typo.returncode == 2
    assert typo.stderr.decode().strip() == "diagnose: error: no such command 'preflite', did you mean preflight?"
    assert "did you mean rules?" in run_cli("rule", "list").stderr.decode()
    missing = run_cli("crash.log")  # a file name, not a word like a command: the file is what is missing
    assert missing.returncode == 2 and "no such file" in missing.stderr.decode()


def test_a_file_named_like_a_command_typo_is_still_read(tmp_path: Path):
    shutil.copy(SEED, tmp_path / "preflite")
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    done = subprocess.run([sys.executable, "-m", "diagnose", "preflite"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "torch-extension-abi-mismatch" in done.stdout


def test_version_says_the_kb_python_and_the_fast_path():
    lines = _out("--version").splitlines()
    assert lines[0] == f"diagnose {__version__} (gpu-diagnose)"
    kb_version = json.loads(_out("--format", "json", SEED))["kb_version"]
    assert lines[1].startswith(f"knowledge base {kb_version} (") and lines[1].endswith(" rules)")
    assert lines[2].startswith(f"Python {sys.version.split()[0]} ")
    expect = "on" if importlib.util.find_spec("hyperscan") else "off"
    assert lines[3].startswith(f"fast path: {expect}")
    assert _out("--version", env={"DIAGNOSE_NO_HYPERSCAN": "1"}).splitlines()[3].startswith("fast path: off")
    assert _out("version") == "\n".join(lines) + "\n"


def test_schema_command_prints_the_contract_and_the_output_names_its_maker_and_kind():
    schema = json.loads(_out("schema"))
    assert schema == json.loads((ROOT / "docs" / "diagnosis.schema.json").read_text())
    found = json.loads(_out("--format", "json", SEED))
    jsonschema.validate(found, schema)
    assert found["diagnose_version"] == __version__ and found["kind"] == "diagnosis"
    predicted = json.loads(_out("preflight", "--format", "json", str(H200X2 / "pip-freeze.txt"), str(H200X2 / "nvidia-smi.txt")))
    jsonschema.validate(predicted, schema)
    assert predicted["kind"] == "preflight" and predicted["diagnose_version"] == __version__


def test_the_wheel_ships_the_schema_and_diagnose_schema_reads_it_there(tmp_path: Path):
    src = tmp_path / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for part in ("diagnose", "rules", "docs"):
        shutil.copytree(ROOT / part, src / part, ignore=ignore)
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path / "dist"), str(src)],
                           capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = (tmp_path / "dist").glob("gpu_diagnose-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        assert "diagnose/_docs/diagnosis.schema.json" in names
        assert any(n.endswith("licenses/LICENSE") or n.endswith(".dist-info/LICENSE") for n in names)
        zf.extractall(tmp_path / "site")
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}
    shown = subprocess.run([sys.executable, "-m", "diagnose", "schema"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout) == json.loads((ROOT / "docs" / "diagnosis.schema.json").read_text())


def _has_colour(*args: str, env: dict[str, str]) -> bool:
    return "\x1b[" in _out(*args, SEED, env=env)


def test_colour_follows_force_color_clicolor_force_and_no_color():
    assert not _has_colour(env={})  # a pipe: no colour
    assert _has_colour(env={"FORCE_COLOR": "1"})
    assert _has_colour(env={"CLICOLOR_FORCE": "1"})
    assert not _has_colour(env={"FORCE_COLOR": "0"})
    assert not _has_colour(env={"FORCE_COLOR": "1", "NO_COLOR": "1"})
    assert not _has_colour("--color", "never", env={"FORCE_COLOR": "1"})
    assert _has_colour("--color", "always", env={"NO_COLOR": "1"})


def _on_a_terminal(env: dict[str, str]) -> str:
    """stdout on a pseudo-terminal, as a person's shell gives it."""
    import pty

    master, slave = pty.openpty()
    full = {**os.environ, **NO_COLOUR_ENV, **env}
    proc = subprocess.Popen([sys.executable, "-m", "diagnose", SEED], stdout=slave, stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL, env=full, cwd=ROOT)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=60)
    os.close(master)
    return b"".join(chunks).decode(errors="replace")


def test_a_terminal_gets_colour_unless_term_is_dumb_or_no_color():
    assert "\x1b[" in _on_a_terminal({})
    assert "\x1b[" not in _on_a_terminal({"TERM": "dumb"})
    assert "\x1b[" not in _on_a_terminal({"NO_COLOR": "1"})
    assert "torch-extension-abi-mismatch" in _on_a_terminal({"TERM": "dumb"})


def _complete(words: str) -> list[str]:
    """What bash completion offers for the last word of `words` (click's bash_complete protocol)."""
    parts = words.split(" ")
    env = {"COMP_WORDS": words, "COMP_CWORD": str(len(parts) - 1), "_DIAGNOSE_COMPLETE": "bash_complete"}
    return run_cli(env=env).stdout.decode().split()


def test_shell_completion_offers_commands_formats_and_rule_ids():
    assert "plain,preflight" in _complete("diagnose pre") and "file,pre" in _complete("diagnose pre")
    assert {"plain,rules", "plain,serve", "plain,version"} <= set(_complete("diagnose "))
    assert _complete("diagnose --format ") == ["plain,text", "plain,json", "plain,markdown", "plain,slack", "plain,html", "plain,svg"]
    assert _complete("diagnose rules show xid-fallen") == ["plain,xid-fallen-off-bus"]
    assert "plain,cuda-oom" in _complete("diagnose rules show cuda-")
    source = run_cli(env={"_DIAGNOSE_COMPLETE": "bash_source"})
    assert source.returncode == 0 and "_diagnose_completion" in source.stdout.decode()


def test_an_input_that_could_not_be_read_is_a_warning_on_stderr_and_in_the_report(tmp_path: Path):
    (tmp_path / "core.bin").write_bytes(bytes(range(256)) * 16)
    shutil.copy(SEED, tmp_path / "verify.log")
    done = run_cli("--format", "json", str(tmp_path), env=NO_COLOUR_ENV)
    assert done.returncode == 1
    assert done.stderr.decode().splitlines() == [f"diagnose: warning: {tmp_path / 'core.bin'}: binary data, not text"]
    assert [s["source"] for s in json.loads(done.stdout)["skipped"]] == [str(tmp_path / "core.bin")]
    assert run_cli(SEED).stderr == b""  # nothing skipped: nothing on stderr


def test_verify_completes_rule_ids_and_input_files():
    assert _complete("diagnose verify xid-fallen") == ["plain,xid-fallen-off-bus", "file,xid-fallen"]
    assert "plain,cuda-oom" in _complete("diagnose verify torchvision-torch-mismatch cuda-")  # every id, not the first only
