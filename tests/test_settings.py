"""Config files as a team uses them: pyproject.toml [tool.diagnose] or diagnose.toml found from a
subdirectory, the user file, environment variables and flags on top, and a bad file as one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT

LOG = FIXTURES / "torch-extension-abi-mismatch--seed-002" / "verify.log"
RULE = next((ROOT / "rules").rglob("torch-extension-abi-mismatch.yaml"))


def diagnose(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`python -m diagnose ARGS` in `cwd`, with a user config dir of the test's own and no DIAGNOSE_* settings."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("DIAGNOSE_") or k == "DIAGNOSE_RULES_DIR"}
    full = {**clean, "XDG_CONFIG_HOME": str(cwd / ".xdg"), "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run([sys.executable, "-m", "diagnose", *args], capture_output=True, text=True,
                          cwd=cwd, env=full, timeout=60)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A repository whose pyproject.toml sets diagnose's format and adds a team's rules directory."""
    team = tmp_path / "ops" / "diagnose-rules" / "python-env"
    team.mkdir(parents=True)
    (team / "acme-extension-pin.yaml").write_text(
        RULE.read_text().replace("id: torch-extension-abi-mismatch\n", "id: acme-extension-pin\n"))
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "inference"\n\n[tool.diagnose]\nformat = "json"\nextra-rules = ["ops/diagnose-rules"]\n')
    (tmp_path / "src" / "deep").mkdir(parents=True)
    return tmp_path


def test_project_file_found_from_a_subdirectory_sets_format_and_team_rules(project: Path):
    done = diagnose(project / "src" / "deep", str(LOG))
    assert done.returncode == 1, done.stderr
    found = [f["rule_id"] for f in json.loads(done.stdout)["findings"]]
    assert "acme-extension-pin" in found and "torch-extension-abi-mismatch" in found
    text = diagnose(project / "src" / "deep", "--format", "text", str(LOG))  # the flag wins
    assert text.stdout.startswith("diagnose: ") and "acme-extension-pin" in text.stdout


def test_layers_user_file_project_file_environment_flag(project: Path):
    user = project / ".xdg" / "diagnose"
    user.mkdir(parents=True)
    (user / "config.toml").write_text(f'format = "markdown"\npython = "{sys.executable}"\n')
    xdg = {"XDG_CONFIG_HOME": str(project / ".xdg")}
    shown = diagnose(project / "src", "config", env=xdg).stdout
    assert f'python = "{sys.executable}"  # {user / "config.toml"}' in shown  # only the user file sets it
    assert f'format = "json"  # {project / "pyproject.toml"} [tool.diagnose]' in shown  # the project's wins
    assert 'redact-patterns = []  # default' in shown
    env = diagnose(project, "config", env={**xdg, "DIAGNOSE_FORMAT": "slack"}).stdout
    assert 'format = "slack"  # DIAGNOSE_FORMAT' in env and f"# {user / 'config.toml'}" in env
    flag = diagnose(project, "--show-settings", "--format", "text", env={**xdg, "DIAGNOSE_FORMAT": "slack"})
    assert flag.returncode == 0 and 'format = "text"  # --format' in flag.stdout


def test_diagnose_toml_and_redaction_patterns_reach_the_output(tmp_path: Path):
    (tmp_path / "patterns.txt").write_text("# the team's library names\ncommon_ops\n")
    (tmp_path / "diagnose.toml").write_text(
        'redact-patterns = ["sgl_kernel"]\nredact-patterns-file = "patterns.txt"\nformat = "json"\n')
    out = json.loads(diagnose(tmp_path, "--redact", str(LOG)).stdout)
    evidence = out["findings"][0]["evidence"][0]["text"]
    assert "sgl_kernel" not in evidence and "common_ops" not in evidence and "<team-1>" in evidence
    plain = json.loads(diagnose(tmp_path, str(LOG)).stdout)  # no --redact: nothing masked
    assert "sgl_kernel" in plain["findings"][0]["evidence"][0]["text"]


def test_default_python_reaches_verify(tmp_path: Path):
    (tmp_path / "diagnose.toml").write_text('python = "venv/bin/python"\n')
    done = diagnose(tmp_path, "verify", "torchvision-torch-mismatch")
    assert done.returncode == 2
    assert done.stderr.strip() == f"diagnose: error: --python {tmp_path / 'venv/bin/python'}: no such interpreter"


@pytest.mark.parametrize("content, message", [
    ('formt = "json"\n', "unknown key 'formt' (did you mean 'format'?)"),
    ('format = "jsn"\n', "format: 'jsn' is not one of text, json, markdown, slack, html, svg"),
    ('extra-rules = ["nowhere"]\n', "extra-rules: {dir}/nowhere: not a directory"),
    ('redact-patterns = ["(unclosed"]\n', "redact-patterns: bad regular expression '(unclosed'"),
    ('format = [\n', "not valid TOML"),
    ('python = 3\n', "python: expected a string, got int"),
])
def test_a_bad_file_is_one_line_and_exit_2(tmp_path: Path, content: str, message: str):
    (tmp_path / "diagnose.toml").write_text(content)
    done = diagnose(tmp_path, str(LOG))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"diagnose: error: {tmp_path / 'diagnose.toml'}: ")
    assert message.format(dir=tmp_path) in done.stderr


def test_a_bad_environment_variable_is_one_line(tmp_path: Path):
    done = diagnose(tmp_path, "config", env={"DIAGNOSE_EXTRA_RULES": str(tmp_path / "gone")})
    assert done.returncode == 2
    assert done.stderr == f"diagnose: error: DIAGNOSE_EXTRA_RULES: extra-rules: {tmp_path / 'gone'}: not a directory\n"


def test_pyproject_without_a_diagnose_table_is_passed_over(tmp_path: Path):
    (tmp_path / "diagnose.toml").write_text('format = "markdown"\n')
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "pyproject.toml").write_text('[project]\nname = "pkg"\n')
    done = diagnose(tmp_path / "pkg", str(LOG))
    assert done.stdout.startswith("# ")  # the Markdown post-mortem: the diagnose.toml above was used


def test_the_format_key_takes_every_format_the_command_line_does():
    from diagnose.cli import FORMATS
    from diagnose.settings_keys import FORMATS as CONFIG_FORMATS

    assert CONFIG_FORMATS == FORMATS


def test_the_service_uses_the_project_files_team_rules_and_redaction(project: Path):
    """`diagnose serve` started in the repository: the team's rule answers, the team's pattern is masked."""
    import re
    import time

    import httpx

    with open(project / "pyproject.toml", "a") as fh:
        fh.write('redact-patterns = ["sgl_kernel"]\n')
    log = project / "serve.log"
    clean = {k: v for k, v in os.environ.items() if not k.startswith("DIAGNOSE_")}
    env = {**clean, "XDG_CONFIG_HOME": str(project / ".xdg"), "PYTHONPATH": str(ROOT), "DIAGNOSE_API_TOKEN": "t0ken"}
    with open(log, "wb") as err:
        proc = subprocess.Popen([sys.executable, "-m", "diagnose", "serve", "--port", "0", "--workers", "1"],
                                stdout=subprocess.DEVNULL, stderr=err, env=env, cwd=project)
    try:
        deadline = time.monotonic() + 60
        while not (found := re.search(r"listening on (http://\S+) ", log.read_text())):
            assert time.monotonic() < deadline and proc.poll() is None, log.read_text()
            time.sleep(0.05)
        url = found[1]
        answer = httpx.post(f"{url}/v1/diagnose", content=LOG.read_bytes(), timeout=30,
                            headers={"Authorization": "Bearer t0ken"}).json()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert "acme-extension-pin" in [f["rule_id"] for f in answer["findings"]]
    assert all("sgl_kernel" not in e["text"] for f in answer["findings"] for e in f["evidence"])  # kept by default


def test_every_environment_variable_the_code_reads_is_documented():
    import re

    docs = (ROOT / "docs" / "configuration.md").read_text()
    read = {m for p in (ROOT / "diagnose").rglob("*.py") for m in re.findall(r"DIAGNOSE_[A-Z0-9_]+", p.read_text())}
    assert read and sorted(v for v in read if f"`{v}`" not in docs) == []
