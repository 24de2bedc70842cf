"""Remediation runs: break a real environment, diagnose the failure, apply the printed fix, prove it took.

For each cause in remediation_cases.py, in a throwaway venv built from real packages:

1. build the broken environment (`setup`), run the failing program and keep its output;
2. `diagnose --format json` on that output plus the venv's `pip freeze` (and any log the setup wrote):
   the expected cause must be first;
3. apply the remedy as printed: the plan's first command when there is a plan, else the first fix step
   that installs something and has no value left to fill in (`python` / `pip` mean the venv's); for a
   fix that is a changed call, the printed step that makes the change, then the program so changed;
4. `diagnose verify <cause> <the inputs> --python <venv python>` and the program again: both must pass.

    python benchmarks/remediation.py            # every case; a table of pass / fail per step
    python benchmarks/remediation.py numpy      # the cases whose name or cause contains "numpy"
    python benchmarks/remediation.py --gpu      # the GPU cases (on a GPU host; venvs see its torch)

Packages come from PyPI and the machine's wheel folders (torch 2.13.0+cpu from /opt/wheels). A case
that cannot run here is reported as skipped, with why. Nothing outside /tmp is touched.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from remediation_cases import CASES, Case  # noqa: E402

DIAGNOSE = [sys.executable, "-m", "diagnose"]
RESULTS = Path(os.environ.get("REMEDY_RESULTS", tempfile.gettempdir())) / "remedy-results"


@dataclass
class Outcome:
    case: str
    steps: dict[str, str] = field(default_factory=dict)  # step -> pass / fail / skipped: why
    applied: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return bool(self.steps) and all(v == "pass" for v in self.steps.values())


def _env(venv: Path, cwd: Path, hide: str | None = None) -> dict[str, str]:
    dirs = [_without(d, hide, cwd) if hide and (Path(d) / hide).exists() else d for d in os.environ["PATH"].split(":")]
    return {**os.environ, "PATH": ":".join([str(venv / "bin"), *dirs]), "VIRTUAL_ENV": str(venv),
            "PIP_DISABLE_PIP_VERSION_CHECK": "1", "HF_HUB_OFFLINE": "1",
            # JIT builds in this run's own folder: a lock left by an earlier, killed run must not block this one
            "TORCH_EXTENSIONS_DIR": str(cwd / "torch_extensions")}


def sh(command: str, venv: Path, cwd: Path, timeout: int = 1800, hide: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, shell=True, cwd=cwd, env=_env(venv, cwd, hide), capture_output=True, text=True,
                          timeout=timeout)


def _without(directory: str, hidden: str, cwd: Path) -> str:
    """A stand-in for a PATH directory: links to everything in it but `hidden` (c++ stays, ninja goes)."""
    shadow = cwd / f"path-without-{hidden}" / directory.strip("/").replace("/", "_")
    if not shadow.is_dir():
        shadow.mkdir(parents=True)
        for entry in Path(directory).iterdir():
            if entry.name != hidden:
                (shadow / entry.name).symlink_to(entry)
    return str(shadow)


def remedy_commands(diagnosis: dict, case: Case) -> tuple[list[str], bool]:  # type: ignore[type-arg]
    """What a person pastes: the plan, else the first install step with nothing left to fill in. For a
    changed call: whether a printed step names the change (`fix_says`), and its command when it has
    nothing left to fill in."""
    fix = diagnosis["findings"][0]["fix"]
    steps = [s for s in fix if s.get("run") and not s.get("unresolved")]
    if case.fix_says:
        says = [s for s in fix if case.fix_says in s.get("run", "") + s.get("step", "")]
        runnable = [s["run"].split("   #")[0].strip() for s in says if s in steps]
        return runnable[:1], bool(says)
    if diagnosis.get("plan"):
        return [s["run"] for s in diagnosis["plan"]["steps"][:1]], True
    for step in steps:
        if re.search(r"\bpip3? install\b|ensurepip", step["run"]):
            return [step["run"].split("   #")[0].strip()], True
    return [], False


def _setup(case: Case, venv: Path, work: Path, out: Outcome) -> bool:
    if not case.gpu:  # the GPU host's own environment holds its CUDA torch; nothing can be installed there
        subprocess.run([sys.executable, "-m", "venv", *case.venv_args, str(venv)], check=True)
    for name, text in case.files.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(text)
    for command in case.setup:
        proc = sh(command, venv, work, hide=case.hide)
        if proc.returncode != 0:
            out.steps["setup"] = f"fail: {command}: {proc.stderr.strip().splitlines()[-1:]}"
            return False
    out.steps["setup"] = "pass"
    return True


def _diagnose(case: Case, venv: Path, work: Path, failing: subprocess.CompletedProcess[str]) -> dict:  # type: ignore[type-arg]
    (work / "failure.log").write_text(failing.stdout + failing.stderr)
    inputs = [str(work / "failure.log"), *(str(work / name) for name in case.inputs)]
    freeze = sh("python -m pip freeze 2>/dev/null || true", venv, work).stdout
    if freeze.strip():
        (work / "pip-freeze.txt").write_text(freeze)
        inputs.append(str(work / "pip-freeze.txt"))
    proc = subprocess.run([*DIAGNOSE, "--format", "json", "--exit-zero", *inputs], capture_output=True, text=True)
    kept = RESULTS / case.name  # what the failing program printed and what diagnose said, kept after the venv goes
    kept.mkdir(parents=True, exist_ok=True)
    for path in inputs:
        shutil.copy(path, kept / Path(path).name)
    (kept / "diagnosis.json").write_text(proc.stdout)
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def run_case(case: Case, root: Path) -> Outcome:
    out = Outcome(case.name)
    start = time.monotonic()
    if case.needs_torch and not any(Path(d).glob("torch-*.whl") for d in ("/opt/wheels",) if Path(d).is_dir()):
        out.steps["setup"] = "skipped: no torch wheel in the machine's wheel cache (/opt/wheels)"
        return out
    venv, work = (Path(sys.prefix) if case.gpu else root / "venv"), root / "work"
    work.mkdir(parents=True)
    holder = None
    try:
        if not _setup(case, venv, work, out):
            return out
        print(f"... {case.name}: set up in {time.monotonic() - start:.0f}s", file=sys.stderr, flush=True)
        if case.background:
            holder = subprocess.Popen(case.background, shell=True, cwd=work, start_new_session=True,
                                      env=_env(venv, work), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            (work / "holder.pid").write_text(str(holder.pid))
            time.sleep(3)
        failing = sh(case.program, venv, work, hide=case.hide)
        out.steps["fails before the fix"] = "fail: the program did not fail" if failing.returncode in case.works else "pass"
        diagnosis = _diagnose(case, venv, work, failing)
        first = diagnosis["findings"][0]["rule_id"] if diagnosis["findings"] else "(nothing)"
        out.steps["named first"] = "pass" if first == case.cause else f"fail: {first}"
        commands, says = remedy_commands(diagnosis, case) if diagnosis["findings"] else ([], False)
        if not says:
            out.steps["fix applied"] = (f"fail: no printed step says {case.fix_says!r}" if case.fix_says
                                        else "fail: no fix command without a value left to fill in")
            return out
        printed = ""
        for command in commands:
            out.applied.append(command)
            applied = sh(command, venv, work, hide=case.hide)
            printed += applied.stdout + applied.stderr
            (RESULTS / case.name / "applied.log").write_text(printed)
            if applied.returncode != 0:
                out.steps["fix applied"] = f"fail: {command}: {(applied.stderr or applied.stdout).strip().splitlines()[-1:]}"
                return out
        out.steps["fix applied"] = "pass"
        if case.locates:
            out.steps["the printed step locates the fault"] = ("pass" if re.search(case.locates, printed)
                                                                else f"fail: no {case.locates!r} in its output")
        python = sys.executable if case.gpu else str(venv / "bin" / "python")
        verify = subprocess.run([*DIAGNOSE, "verify", case.cause, "--python", python,
                                 "--format", "json", *_verify_inputs(work)], capture_output=True, text=True, cwd=work,
                                env={**os.environ, "PATH": f"{venv / 'bin'}:{os.environ['PATH']}"})
        (RESULTS / case.name / "verify.json").write_text(verify.stdout)
        report = json.loads(verify.stdout)
        ran = [r for r in report["results"] if r["status"] != "not-run" and r["rule_id"] == case.cause]
        failed = [r["command"] for r in ran if r["status"] == "fail"]
        out.steps["verify"] = "pass" if ran and not failed else f"fail: {failed or 'nothing ran'}"
        if case.locates:  # the fault is the program's own: nothing printed can make it work
            return out
        again = sh(case.after or case.program, venv, work, hide=case.hide)
        out.steps["works after the fix"] = ("pass" if again.returncode in case.works
                                            else f"fail: {(again.stderr or again.stdout).strip()[-200:]}")
        return out
    finally:
        if holder is not None:  # its whole process group: the shell may be gone and its server not
            with contextlib.suppress(ProcessLookupError):
                os.killpg(holder.pid, 15)
        out.seconds = round(time.monotonic() - start, 1)


def _verify_inputs(work: Path) -> list[str]:
    """verify renders its commands from the same inputs as the diagnosis (the port, the model, the venv)."""
    return [str(p) for p in (work / "failure.log", work / "pip-freeze.txt", work / "install.log") if p.is_file()]


def main(argv: list[str]) -> int:
    gpu = "--gpu" in argv
    names = [a for a in argv if not a.startswith("--")]
    chosen = [c for c in CASES if c.gpu == gpu and (not names or any(a in c.name or a in c.cause for a in names))]
    outcomes = []
    for case in chosen:
        root = Path(tempfile.mkdtemp(prefix=f"remedy-{case.cause}-"))
        try:
            o = run_case(case, root)
        finally:
            shutil.rmtree(root, ignore_errors=True)
        outcomes.append((case, o))
        verdict = "PASS" if o.passed else "FAIL"
        print(f"{verdict}  {case.cause:<28} {case.name}  ({o.seconds}s)", flush=True)
        for step, result in o.steps.items():
            print(f"      {step:<22} {result}", flush=True)
        for command in o.applied:
            print(f"      applied: {command}", flush=True)
    print(f"{sum(o.passed for _, o in outcomes)} passed, {sum(not o.passed for _, o in outcomes)} failed")
    return 0 if all(o.passed for _, o in outcomes) else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
