"""Remediation runs: break a real environment, diagnose the failure, apply the printed fix, prove it took.

For each cause that can be reproduced without a GPU, in a throwaway venv built from real packages:

1. build the broken environment (`setup`), run the failing program and keep its output;
2. `diagnose --format json` on that output plus the venv's `pip freeze`: the expected cause must be first;
3. apply the remedy as printed: the plan's commands when there is a plan, else the first fix step that
   installs something and has no value left to fill in (`python` / `pip` mean the venv's);
4. `diagnose verify <cause> --python <venv python>` and the program again: both must pass.

    python benchmarks/remediation.py            # every case; a table of pass / fail per step
    python benchmarks/remediation.py numpy      # the cases whose name contains "numpy"

Each case says what it needs (network to PyPI for its packages; torch from the machine's wheel
cache). A case that cannot run here is reported as skipped, with why. Nothing outside /tmp is touched.
"""

from __future__ import annotations

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

DIAGNOSE = [sys.executable, "-m", "diagnose"]
TINY_LLAMA = (
    "from transformers import LlamaConfig, LlamaForCausalLM;"
    "LlamaForCausalLM(LlamaConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1,"
    " num_attention_heads=2, num_key_value_heads=2, vocab_size=64)).save_pretrained('tiny')"
)


@dataclass
class Case:
    name: str
    cause: str
    setup: list[str]  # shell commands run in the venv (PATH starts with its bin/)
    program: str  # fails before the fix, succeeds after
    venv_args: list[str] = field(default_factory=list)
    needs_torch: bool = False
    hide: str | None = None  # a program to keep off PATH (a system ninja would hide the failure)


CASES = [
    Case("numpy-2-under-pandas-1.5", "numpy-abi-mismatch",
         ["pip install -q pandas==1.5.3 'numpy<2'", "pip install -q numpy==2.1.3"],
         "python -c 'import pandas; print(pandas.__version__)'"),
    Case("venv-without-pip", "venv-missing-pip", [], "python -m pip --version", venv_args=["--without-pip"]),
    Case("device-map-without-accelerate", "accelerate-missing",
         ["pip install -q torch==2.13.0+cpu transformers==4.51.3", f'python -c "{TINY_LLAMA}"'],
         "python -c \"from transformers import AutoModelForCausalLM; "
         "AutoModelForCausalLM.from_pretrained('tiny', device_map='cpu'); print('loaded')\"",
         needs_torch=True),
    Case("jit-extension-without-ninja", "ninja-missing-jit",
         ["pip install -q torch==2.13.0+cpu", "pip uninstall -q -y ninja || true"],
         "python -c \"from torch.utils.cpp_extension import load_inline; "
         "m = load_inline('probe', 'int one() { return 1; }', functions=['one'], verbose=False); print(m.one())\"",
         needs_torch=True, hide="ninja"),
]


@dataclass
class Outcome:
    case: str
    steps: dict[str, str] = field(default_factory=dict)  # step -> pass / fail / skipped: why
    applied: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return bool(self.steps) and all(v == "pass" for v in self.steps.values())


def sh(command: str, venv: Path, cwd: Path, timeout: int = 900, hide: str | None = None) -> subprocess.CompletedProcess[str]:
    dirs = [_without(d, hide, cwd) if hide and (Path(d) / hide).exists() else d for d in os.environ["PATH"].split(":")]
    env = {**os.environ, "PATH": ":".join([str(venv / "bin"), *dirs]), "VIRTUAL_ENV": str(venv),
           "PIP_DISABLE_PIP_VERSION_CHECK": "1", "HF_HUB_OFFLINE": "1",
           # JIT builds in this run's own folder: a lock left by an earlier, killed run must not block this one
           "TORCH_EXTENSIONS_DIR": str(cwd / "torch_extensions")}
    return subprocess.run(command, shell=True, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def _without(directory: str, hidden: str, cwd: Path) -> str:
    """A stand-in for a PATH directory: links to everything in it but `hidden` (c++ stays, ninja goes)."""
    shadow = cwd / f"path-without-{hidden}" / directory.strip("/").replace("/", "_")
    if not shadow.is_dir():
        shadow.mkdir(parents=True)
        for entry in Path(directory).iterdir():
            if entry.name != hidden:
                (shadow / entry.name).symlink_to(entry)
    return str(shadow)


def remedy_commands(diagnosis: dict) -> list[str]:  # type: ignore[type-arg]
    """What a person pastes: the plan, else the first install step with nothing left to fill in."""
    if diagnosis.get("plan"):
        return [s["run"] for s in diagnosis["plan"]["steps"][:1]]
    for step in diagnosis["findings"][0]["fix"]:
        run = step.get("run", "")
        if run and not step.get("unresolved") and re.search(r"\bpip3? install\b|ensurepip", run):
            return [run.split("   #")[0].strip()]
    return []


def run_case(case: Case, root: Path) -> Outcome:
    out = Outcome(case.name)
    start = time.monotonic()
    if case.needs_torch and not any(Path(d).glob("torch-*.whl") for d in ("/opt/wheels",) if Path(d).is_dir()):
        out.steps["setup"] = "skipped: no torch wheel in the machine's wheel cache (/opt/wheels)"
        return out
    venv, work = root / "venv", root / "work"
    work.mkdir(parents=True)
    subprocess.run([sys.executable, "-m", "venv", *case.venv_args, str(venv)], check=True)
    for command in case.setup:
        proc = sh(command, venv, work, hide=case.hide)
        if proc.returncode != 0:
            out.steps["setup"] = f"fail: {command}: {proc.stderr.strip().splitlines()[-1:]}"
            return out
    out.steps["setup"] = "pass"
    print(f"... {case.name}: set up in {time.monotonic() - start:.0f}s", file=sys.stderr, flush=True)
    failing = sh(case.program, venv, work, hide=case.hide)
    (work / "failure.log").write_text(failing.stdout + failing.stderr)
    out.steps["fails before the fix"] = "pass" if failing.returncode != 0 else "fail: the program did not fail"
    freeze = sh("python -m pip freeze 2>/dev/null || true", venv, work).stdout
    inputs = [str(work / "failure.log")]
    if freeze.strip():
        (work / "pip-freeze.txt").write_text(freeze)
        inputs.append(str(work / "pip-freeze.txt"))
    proc = subprocess.run([*DIAGNOSE, "--format", "json", "--exit-zero", *inputs], capture_output=True, text=True)
    diagnosis = json.loads(proc.stdout)
    first = diagnosis["findings"][0]["rule_id"] if diagnosis["findings"] else "(nothing)"
    out.steps["named first"] = "pass" if first == case.cause else f"fail: {first}"
    commands = remedy_commands(diagnosis) if diagnosis["findings"] else []
    if not commands:
        out.steps["fix applied"] = "fail: no fix command without a value left to fill in"
        return out
    for command in commands:
        out.applied.append(command)
        applied = sh(command, venv, work, hide=case.hide)
        if applied.returncode != 0:
            out.steps["fix applied"] = f"fail: {command}: {applied.stderr.strip().splitlines()[-1:]}"
            return out
    out.steps["fix applied"] = "pass"
    verify = subprocess.run([*DIAGNOSE, "verify", case.cause, "--python", str(venv / "bin" / "python"), "--format", "json"],
                            capture_output=True, text=True, cwd=work)
    report = json.loads(verify.stdout)
    ran = [r for r in report["results"] if r["status"] != "not-run"]
    failed = [r["command"] for r in ran if r["status"] == "fail"]
    out.steps["verify"] = "pass" if ran and not failed else f"fail: {failed or 'nothing ran'}"
    again = sh(case.program, venv, work, hide=case.hide)
    out.steps["works after the fix"] = "pass" if again.returncode == 0 else f"fail: {again.stderr.strip()[-200:]}"
    out.seconds = round(time.monotonic() - start, 1)
    return out


def main(argv: list[str]) -> int:
    chosen = [c for c in CASES if not argv or any(a in c.name or a in c.cause for a in argv)]
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
