"""`diagnose verify`: the KB's own verify commands, run for rule ids or for a diagnosis's findings."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

from conftest import FIXTURES, run_cli

from diagnose.preflight.verify import run_step, run_verify

PIP_CONFLICT_LOG = FIXTURES / "pip-dependency-conflict--repro-pip-23.2.1" / "install.log"


def test_command_whose_program_is_missing_is_not_run(kb, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvidia-smi, no python3 here
    report = run_verify(["vfio-p2p-disabled"], kb=kb)
    assert [r.status for r in report.results] == ["not-run"] * 3
    assert report.results[0].reason.startswith("nvidia-smi is not on PATH")
    assert "python3 is not on PATH" in report.results[1].reason
    assert not report.passed


def test_a_passing_rule_exits_0(tmp_path):
    """pip check in this checkout's own venv (which has no broken requirement) is what the rule expects."""
    proc = run_cli("verify", "pip-dependency-conflict", "--python", sys.executable, "--format", "json")
    data = json.loads(proc.stdout)
    assert proc.returncode == 0, proc.stdout.decode()
    assert data["passed"] is True
    step = data["results"][0]
    assert step["status"] == "pass" and step["exit_code"] == 0
    assert step["command"] == f"{sys.executable} -m pip check" and step["run"] == "pip check"
    assert "No broken requirements found." in step["stdout"]


def test_verify_the_findings_of_a_diagnosis():
    proc = run_cli("verify", str(PIP_CONFLICT_LOG), "--python", sys.executable)
    out = proc.stdout.decode()
    assert proc.returncode == 0, out
    assert "pip-dependency-conflict" in out and "PASS" in out and "-m pip check" in out


def test_failing_command_exits_1_and_shows_its_output(kb, tmp_path):
    bare = tmp_path / "python"
    bare.symlink_to(sys.executable)
    report = run_verify(["torchvision-torch-mismatch"], kb=kb, python=str(bare))
    first = report.results[0]
    if importlib.util.find_spec("torch") is None:  # this checkout's venv has no torch
        assert first.status == "fail" and "exit code 1, expected 0" in first.reason
        assert "No module named 'torch'" in first.stderr
        assert not report.passed


def test_verify_fills_in_from_the_inputs_only_values_that_are_plain_words(kb, tmp_path):
    # the port of a bind error is a plain word: the check runs for that port
    log = tmp_path / "server.log"
    log.write_text("ERROR:    [Errno 98] error while attempting to bind on address ('127.0.0.1', 18000): "
                   "address already in use\n")
    report = run_verify([str(log)], kb=kb)
    assert "port-in-use" in report.rules
    ss = [r for r in report.results if r.rule_id == "port-in-use"]
    assert ss and ss[0].command == "ss -ltnp 'sport = :18000'", ss
    # a log is untrusted text: a value with shell syntax in it is never filled in, nor run
    hostile = tmp_path / "hostile.log"
    hostile.write_text("ValueError: Loading /tmp/m;touch${IFS}/tmp/pwned requires you to execute the configuration "
                       "file in that repo on your local machine.\n")
    report = run_verify([str(hostile)], kb=kb)
    assert "trust-remote-code" in report.rules
    templated = [r for r in report.results if "{facts.model}" in r.run]
    assert templated and all(r.status == "not-run" and "plain word" in r.reason for r in templated)
    assert all("pwned" not in r.command for r in report.results)
    angle = run_verify(["transformers-unknown-model-type"], kb=kb)
    assert [r.status for r in angle.results][1:] == ["not-run", "not-run"]  # <model_type>, <model dir>


def test_only_read_only_commands_run_and_time_is_limited():
    write = run_step("x", {"run": "rm -rf /tmp/something", "expect": {"exit_code": 0}}, None, 5)
    assert write.status == "not-run" and "read-only" in write.reason
    root = run_step("x", {"run": "sudo dmesg | grep Xid", "expect": {"exit_code": 1}}, None, 5)
    assert root.status == "not-run" and "sudo" in root.reason
    slow = run_step("x", {"run": f"{sys.executable} -c \"import time; time.sleep(5)\"", "expect": {"exit_code": 0}},
                    None, 1)
    assert slow.status == "fail" and "timed out after 1s" in slow.reason
    regex = run_step("x", {"run": "echo 'ninja ok'", "expect": {"exit_code": 0, "stdout_regex": "ninja ok"}}, None, 5)
    assert regex.status == "pass"
    mismatch = run_step("x", {"run": "echo nope", "expect": {"exit_code": 0, "stdout_regex": "^GPU 0"}}, None, 5)
    assert mismatch.status == "fail" and "does not match" in mismatch.reason


def test_python_means_the_given_interpreter(tmp_path: Path):
    step = run_step("x", {"run": "python -c \"import sys; print(sys.executable)\" | cat", "expect": {"exit_code": 0}},
                    sys.executable, 10)
    assert step.status == "pass" and step.stdout.strip() == sys.executable


def test_user_errors_are_one_line_and_exit_2():
    for args in (["verify"], ["verify", "torchvision-torch-mismatc"], ["verify", "pip-check", "--python", "/no/python"]):
        proc = run_cli(*args)
        assert proc.returncode == 2, args
        assert proc.stderr.decode().count("\n") == 1 and b"Traceback" not in proc.stderr
    assert b"did you mean torchvision-torch-mismatch" in run_cli("verify", "torchvision-torch-mismatc").stderr
