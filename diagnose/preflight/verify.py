"""`diagnose verify`: run the KB's own verify commands for some rules and say whether the fix took.

Only the rules' commands run, never text from the inputs: a command that needs a value from a
diagnosis (`{groups.repo}`, `<model dir>`) is reported as not run, with why, and so is one that is
not read-only, one that needs sudo, and one whose program is not here (no nvidia-smi, no GPU tools).
With --python, `python`/`python3` and `pip` in a command mean that interpreter and its pip.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from diagnose import lazy_re
from diagnose.errors import DiagnoseError
from diagnose.model import SCHEMA_VERSION, Skipped
from diagnose.remedy.values import SHELL_WORD  # a value that cannot change what the shell runs

TIMEOUT = 60
KEEP_LINES = 15
KEEP_CHARS = 2000
ANGLE = lazy_re.compile(r"<[A-Za-z][\w .-]*>")
PROGRAM_SEPARATORS = {"|", "||", "&&", ";", "&", "(", ")"}


@dataclass
class StepResult:
    rule_id: str
    run: str  # the command as the rule writes it
    command: str  # as it ran (or would have run)
    status: str  # pass | fail | not-run
    reason: str = ""
    exit_code: int | None = None
    stdout: str = ""
    stderr: str = ""
    seconds: float = 0.0
    expect: dict[str, Any] = field(default_factory=dict)
    note: str | None = None


@dataclass
class VerifyReport:
    kb_version: str
    rules: list[str]
    results: list[StepResult] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    python: str | None = None  # the interpreter `python` / `pip` meant, and how it was chosen
    python_how: str = ""
    warnings: list[str] = field(default_factory=list)
    schema_version: str = SCHEMA_VERSION

    @property
    def passed(self) -> bool:
        """True only when something ran and every command passed."""
        return bool(self.results) and all(r.status == "pass" for r in self.results)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["passed"] = self.passed
        return data


def run_verify(names: list[str], *, kb: Any = None, python: str | None = None,
               timeout: float = TIMEOUT) -> VerifyReport:
    """`names` are rule ids and input paths (whose diagnosis gives the rule ids)."""
    from diagnose import api

    kb = kb or api.load_kb()
    rule_ids, inputs = _split(names, kb)
    rendered: dict[str, list[dict[str, Any]]] = {}
    report = VerifyReport(kb.version, [])
    if inputs:
        diagnosis = api.diagnose(inputs, kb=kb)
        report.skipped.extend(diagnosis.skipped)
        found = [f.rule_id for f in diagnosis.findings]
        rendered = {f.rule_id: f.verify for f in diagnosis.findings}
        if not found:
            report.skipped.append(Skipped(", ".join(inputs), "the diagnosis names no known failure: nothing of it to verify"))
        rule_ids += [r for r in found if r not in rule_ids]
    report.rules = rule_ids
    interpreter = _interpreter(python) if python else None
    _say_which_environment(report, interpreter)
    for rule_id in rule_ids:
        subjects = _subjects(kb.rules[rule_id])
        filled = rendered.get(rule_id, [])
        for i, step in enumerate(kb.rules[rule_id].verify):
            result = run_step(rule_id, _filled(step, filled[i] if i < len(filled) else None), interpreter, timeout)
            _prerequisite_absent(result, subjects, interpreter or report.python or "python")
            report.results.append(result)
    return report


def _say_which_environment(report: VerifyReport, interpreter: str | None) -> None:
    """Which python the checks ran with, and a warning when it may not be the server's."""
    if interpreter:
        report.python, report.python_how = interpreter, "--python"
        return
    on_path = shutil.which("python") or shutil.which("python3")
    report.python, report.python_how = on_path, "the first python on PATH"
    from diagnose.collect import interpreter as serving

    found, how = serving.find()
    if how != "collector" and on_path and os.path.realpath(found) != os.path.realpath(on_path):
        report.warnings.append(f"the checks ran with {on_path} (first on PATH), but the server looks like it runs "
                               f"{found} ({how.split(' (')[0]}): rerun with --python {found}")


INSTALLS = lazy_re.compile(r"\b(?:pip3?|uv pip)\s+install\b([^|;&#]*)")
NO_MODULE = lazy_re.compile(r"No module named '([\w.]+)'")


def _subjects(rule: Any) -> set[str]:
    """The modules a rule's fix installs (and the ones its id names): a verify command that fails
    because another module is absent could not check the fix."""
    words = set(re.findall(r"[a-z][a-z0-9_]+", rule.id.replace("-", "_"))) | set(rule.id.split("-"))
    for step in rule.fix:
        for m in INSTALLS.finditer(step.get("run") or ""):
            words |= {w.lower().replace("-", "_") for w in re.findall(r"[A-Za-z][\w.-]*", m[1]) if not w.startswith("-")}
    return words


def _prerequisite_absent(result: StepResult, subjects: set[str], python: str) -> None:
    if result.status != "fail":
        return
    m = NO_MODULE.search(result.stderr)
    if m and m[1].split(".")[0].lower() not in subjects:
        result.status = "not-run"
        result.reason = (f"prerequisite absent: {m[1]} is not installed in {python}, so this check cannot tell "
                         "whether the fix took")


def _split(names: list[str], kb: Any) -> tuple[list[str], list[str]]:
    rule_ids: list[str] = []
    inputs: list[str] = []
    for name in names:
        if name in kb.rules:
            if name not in rule_ids:
                rule_ids.append(name)
        elif name == "-" or os.path.exists(name):
            inputs.append(name)
        else:
            from rapidfuzz import process

            near = process.extractOne(name, list(kb.rules))
            hint = f"; did you mean {near[0]}?" if near and near[1] > 60 else ""
            raise DiagnoseError(f"{name}: neither a rule id nor a file{hint}")
    if not names:
        raise DiagnoseError("nothing to verify: give rule ids (diagnose rules list) or the inputs of a diagnosis")
    return rule_ids, inputs


def _interpreter(python: str) -> str:
    found = python if os.sep in python else shutil.which(python)
    if not found or not os.access(found, os.X_OK):
        raise DiagnoseError(f"--python {python}: no such interpreter")
    return os.path.abspath(found)




def _filled(step: dict[str, Any], rendered: dict[str, Any] | None) -> dict[str, Any]:
    """The step as the diagnosis rendered it from the inputs (the port, the model, the venv), when every
    value it filled in is a plain shell word: a log is untrusted text, and verify runs what it fills."""
    from diagnose.kb.compiled import PLACEHOLDER

    if not rendered or rendered.get("run") == step["run"]:
        return step
    parts = PLACEHOLDER.split(step["run"])  # literal, name, literal, name, ...
    shape = "".join(re.escape(p) if i % 2 == 0 else "(.*?)" for i, p in enumerate(parts))
    m = re.fullmatch(shape, rendered["run"], re.S)
    if m is None or not all(SHELL_WORD.fullmatch(v) for v in m.groups()):
        return step
    return {**step, "run": rendered["run"]}


def run_step(rule_id: str, step: dict[str, Any], python: str | None, timeout: float) -> StepResult:
    from diagnose.kb.compiled import PLACEHOLDER
    from diagnose.kb.lint import WRITES

    run = step["run"]
    command = _with_python(run, python) if python else run
    result = StepResult(rule_id, run, command, "not-run", expect=dict(step.get("expect") or {}), note=step.get("note"))
    blank = PLACEHOLDER.search(run) or ANGLE.search(run)
    if blank:
        result.reason = (f"needs {blank[0]}, a value the inputs do not give (or not as a plain word): run it by "
                         "hand with the value")
    elif WRITES.search(run):
        result.reason = "not a read-only command; verify runs only read-only ones"
    elif re.search(r"(?:^|[;&|]\s*)sudo\b", run):
        result.reason = "needs root (sudo): run it yourself"
    elif missing := _missing_program(command):
        result.reason = missing
    else:
        _execute(result, timeout)
    return result


def _with_python(command: str, python: str) -> str:
    """`python ...`/`python3 ...`/`pip ...` at a command position mean the --python interpreter."""
    quoted = shlex.quote(python)
    command = re.sub(r"(^|[|;&(]\s*)python3?(?=\s)", lambda m: m[1] + quoted, command)
    return re.sub(r"(^|[|;&(]\s*)pip3?(?=\s)", lambda m: f"{m[1]}{quoted} -m pip", command)


def _programs(command: str) -> list[str]:
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    programs: list[str] = []
    expect_program = True
    try:
        for token in lexer:
            if token in PROGRAM_SEPARATORS:
                expect_program = True
            elif expect_program and not re.match(r"^[A-Za-z_]\w*=", token):
                programs.append(token)
                expect_program = False
    except ValueError:
        return []
    return programs


def _missing_program(command: str) -> str | None:
    for program in _programs(command):
        if "/" in program:
            if not (os.path.isfile(program) and os.access(program, os.X_OK)):
                return f"{program} is not here"
        elif shutil.which(program) is None and program not in ("cd", "echo", "test", "[", "export"):
            hint = " (no NVIDIA driver tools on this machine?)" if program.startswith("nvidia-") else ""
            return f"{program} is not on PATH{hint}"
    return None


def _execute(result: StepResult, timeout: float) -> None:
    import regex

    start = time.monotonic()
    try:
        proc = subprocess.run(result.command, shell=True, capture_output=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        result.status, result.reason = "fail", f"timed out after {timeout:g}s"
        result.seconds = round(time.monotonic() - start, 2)
        return
    result.seconds = round(time.monotonic() - start, 2)
    result.exit_code = proc.returncode
    stdout = proc.stdout.decode(errors="replace")
    result.stdout, result.stderr = _trim(stdout), _trim(proc.stderr.decode(errors="replace"))
    problems = []
    want = result.expect.get("exit_code")
    if want is not None and proc.returncode != want:
        problems.append(f"exit code {proc.returncode}, expected {want}")
    pattern = result.expect.get("stdout_regex")
    if pattern:
        try:
            hit = regex.search(pattern, stdout, timeout=2)
        except TimeoutError:
            hit = None
        if not hit:
            problems.append(f"output does not match {pattern!r}")
    result.status = "fail" if problems else "pass"
    result.reason = "; ".join(problems)


def _trim(text: str) -> str:
    lines = text.rstrip().splitlines()
    if len(lines) > KEEP_LINES:
        lines = [f"[... {len(lines) - KEEP_LINES} line(s) above]"] + lines[-KEEP_LINES:]
    out = "\n".join(lines)
    return out if len(out) <= KEEP_CHARS else "[...]" + out[-KEEP_CHARS:]
