"""The text output as a person reads it at 3 a.m.: prose fits the terminal, commands stay whole on one line,
the cause and its evidence come before the plan, and the seed documents' file names are not shown."""

from __future__ import annotations

import re

from conftest import FIXTURES

from diagnose import api
from diagnose.model import walk
from diagnose.render import text

SGL_KERNEL = FIXTURES / "torch-extension-abi-mismatch--repro-sgl-kernel-0321-torch2141"  # a plan and 4 sources


def _diagnosis(kb):  # type: ignore[no-untyped-def]
    d = api.diagnose([str(SGL_KERNEL)], kb=kb)
    assert d.plan is not None and d.findings[0].verified_by
    return d


def test_prose_is_wrapped_to_the_width_and_every_command_stays_one_whole_line(kb):
    d = _diagnosis(kb)
    out = text.render(d, width=60).splitlines()
    commands = {s["run"] for f in walk(d.findings) for s in f.fix + f.verify if s.get("run")}
    commands |= {s["run"] for s in d.plan.steps}
    shown = {line.strip()[2:] for line in out if line.strip().startswith("$ ")}
    assert commands <= shown  # each command whole, as the JSON has it
    long_commands = [c for c in commands if len(c) > 60]
    assert long_commands  # the fixture has commands wider than the terminal: they were not wrapped
    log_line = re.compile(rf"\s*{re.escape(str(SGL_KERNEL))}/\S+:\d+ ")  # a line of the inputs, as it was
    prose = [line for line in out if not line.strip().startswith("$ ") and not log_line.match(line)
             and not re.match(r"\s*https?://\S+$", line)]
    too_wide = [line for line in prose if len(line) > 60 and " " in line.strip()]
    assert too_wide == []


def test_the_cause_and_its_evidence_come_before_the_plan_and_the_plan_before_the_steps(kb):
    out = text.render(_diagnosis(kb), width=100)
    cause, evidence, plan, fix = (out.index(s) for s in ("1. torch-extension-abi-mismatch", "evidence:", "Plan (", "fix, step"))
    assert cause < evidence < plan < fix


def test_verify_expectations_sit_on_their_own_line_under_the_command(kb):
    d = _diagnosis(kb)
    lines = text.render(d, width=100).splitlines()
    start = lines.index("   verify:")
    for v in d.findings[0].verify:
        at = next(i for i, line in enumerate(lines) if i > start and line.strip() == f"$ {v['run']}")
        assert lines[at + 1].strip().startswith("expect: exit code 0")


def test_where_the_fix_worked_is_counted_and_listed_only_under_explain_without_seed_file_names(kb):
    d = _diagnosis(kb)
    seeds = [v for v in d.findings[0].verified_by if v.startswith("seed ")]
    assert seeds  # the rule cites a seed document by its internal file name
    plain = text.render(d, width=100)
    assert f"{len(d.findings[0].verified_by)} source(s) where this fix worked" in plain
    explained = text.render(d, width=100, explain=True)
    assert "the deployment report this rule was written from" in explained
    for out in (plain, explained):
        assert not re.search(r"\b\d{3}_[0-9a-f]{16}\.txt\b", out), "a seed's file name reached the reader"
