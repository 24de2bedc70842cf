"""An install about to be run (`--plan "pip install ..."` or `--plan-report` from
`pip install --dry-run --report`): does it replace torch, and which installed extensions would break?

With a report the changes are what pip resolved. With only the command, the compat tables say what a
resolver would most likely pull (the newest release matching the request, and the torch it pairs
with); that is an estimate, and the evidence says so. `--resolve` asks the --python environment's pip
for a dry-run report instead (it needs the network and may build sdists to read their metadata).
"""

from __future__ import annotations

import json
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from diagnose.errors import DiagnoseError
from diagnose.kb import compat
from diagnose.preflight.environment import Environment

RESOLVE_TIMEOUT = 180
VALUE_OPTIONS = {"-i", "--index-url", "--extra-index-url", "-f", "--find-links", "-c", "--constraint", "-r",
                 "--requirement", "--python", "-p", "--target", "-t", "--prefix", "--root", "--platform",
                 "--python-version", "--only-binary", "--no-binary", "--report", "--trusted-host"}
INDEX_OPTIONS = ("-i", "--index-url", "--extra-index-url", "-f", "--find-links", "--trusted-host", "--pre")


@dataclass
class InstallPlan:
    source: str  # shown in evidence
    changes: dict[str, tuple[str | None, str]] = field(default_factory=dict)  # name -> (installed, after)
    requires: dict[str, list[str]] = field(default_factory=dict)  # Requires-Dist of what would be installed
    estimated: bool = False
    notes: list[str] = field(default_factory=list)


def read_report(path: str, env: Environment) -> InstallPlan:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise DiagnoseError(f"--plan-report {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise DiagnoseError(f"--plan-report {path}: not JSON: {exc}") from None
    return plan_from_report(data, path, env)


def plan_from_report(data: Any, source: str, env: Environment) -> InstallPlan:
    from diagnose.artifacts.pip import canonical

    if not isinstance(data, dict) or not isinstance(data.get("install"), list):
        raise DiagnoseError(f"{source}: not a pip installation report (`pip install --dry-run --report FILE`)")
    from diagnose.preflight.requirements import judged

    plan = InstallPlan(source)
    for item in data["install"]:
        meta = item.get("metadata") if isinstance(item, dict) else None
        if not isinstance(meta, dict) or not meta.get("name") or not meta.get("version"):
            continue
        name = canonical(str(meta["name"]))
        old = env.facts.packages.get(name)
        if old is None or not compat.same_version(old, str(meta["version"])):
            plan.changes[name] = (old, str(meta["version"]))
        plan.requires[name] = judged(meta.get("requires_dist"), f"{name} {meta['version']}", plan.notes)
    return plan


def estimate(command: str, env: Environment, kb: Any) -> InstallPlan:
    """What `pip install ...` / `uv pip install ...` would most likely change, from the compat tables."""
    from packaging.requirements import InvalidRequirement

    from diagnose.artifacts.pip import canonical
    from diagnose.preflight.requirements import parse, short

    args, opts = _install_args(command)
    plan = InstallPlan("--plan", estimated=True)
    upgrade = bool({"-U", "--upgrade", "--force-reinstall"} & set(opts))
    pins = _constraint_pins(opts)
    requested = {}
    for arg in args:
        try:
            req = parse(arg)
        except InvalidRequirement as exc:
            why = "a path or URL" if "/" in arg or arg.endswith((".whl", ".tar.gz", ".zip")) else str(exc)
            plan.notes.append(f"{short(arg)}: not a requirement the tables can judge ({why})")
            continue
        requested[canonical(req.name)] = req
    pins.update({n: r for n, r in requested.items() if n == "torch"})
    for name, req in requested.items():
        installed = env.facts.packages.get(name)
        if installed and not upgrade and _matches(req, installed):
            continue
        target, torch_needed = _newest(name, req, kb)
        if target:
            plan.changes[name] = (installed, target)
        elif name != "torch":
            plan.notes.append(f"{req}: no compat table says which release or torch it would bring")
        torch = env.facts.packages.get("torch")
        if name == "torch" and torch and not _matches(req, torch):
            plan.changes["torch"] = (torch, f"a release matching {req.specifier}")
        elif torch_needed and torch and "torch" not in pins and "--no-deps" not in opts:
            if compat.minor(torch_needed) != compat.minor(torch):
                plan.changes["torch"] = (torch, torch_needed)
    return plan


def resolve(command: str, python: str) -> InstallPlan:
    """`PYTHON -m pip install --dry-run --report -` for the requirements and index options of `command`."""
    args, opts = _install_args(command)
    keep = [o for o in opts if o.split("=")[0] in INDEX_OPTIONS]
    argv = [python, "-m", "pip", "install", "--dry-run", "--quiet", "--report", "-", *keep, *args]
    try:
        proc = subprocess.run(argv, capture_output=True, timeout=RESOLVE_TIMEOUT, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise DiagnoseError(f"--resolve: {exc}") from None
    if proc.returncode != 0:
        last = (proc.stderr.decode(errors="replace").strip().splitlines() or ["no output"])[-1]
        raise DiagnoseError(f"--resolve: pip's dry run failed: {last}")
    try:
        return json.loads(proc.stdout)  # type: ignore[no-any-return]
    except ValueError:
        raise DiagnoseError("--resolve: pip printed no installation report (pip >= 22.2 is needed)") from None


def _install_args(command: str) -> tuple[list[str], list[str]]:
    """(requirements, options) of a `pip install` / `uv pip install` / `python -m pip install` command."""
    try:
        tokens = shlex.split(command)
    except ValueError as exc:
        raise DiagnoseError(f"--plan: {exc}") from None
    if "install" not in tokens:
        raise DiagnoseError("--plan: give an install command, e.g. --plan \"pip install 'torchvision>=0.22'\"")
    rest = tokens[tokens.index("install") + 1:]
    args, opts = [], []
    i = 0
    while i < len(rest):
        token = rest[i]
        if token.startswith("-"):
            opts.append(token)
            if token in VALUE_OPTIONS and i + 1 < len(rest):
                opts.append(rest[i + 1])
                i += 1
        else:
            args.append(token)
        i += 1
    return args, opts


def _constraint_pins(opts: list[str]) -> dict[str, Any]:
    """Requirements pinned by -c / -r files the command names (read when they exist here)."""
    from packaging.requirements import InvalidRequirement

    from diagnose.artifacts.pip import canonical
    from diagnose.preflight.requirements import parse

    pins: dict[str, Any] = {}
    for i, opt in enumerate(opts[:-1]):
        if opt in ("-c", "--constraint", "-r", "--requirement"):
            try:
                lines = Path(opts[i + 1]).read_text(encoding="utf-8").splitlines()
            except OSError:
                continue
            for line in lines:
                try:
                    req = parse(line.split("#")[0].strip())
                except InvalidRequirement:
                    continue
                pins[canonical(req.name)] = req
    return pins


def _matches(req: Any, version: str) -> bool:
    """Does the installed `version` satisfy `req` (a local label like +cu128 may be pinned or not)?
    A version packaging cannot compare is taken as satisfied: nothing is predicted from it."""
    from diagnose.preflight.requirements import contains

    return not req.specifier or contains(req.specifier, version) is not False


def _newest(name: str, req: Any, kb: Any) -> tuple[str | None, str | None]:
    """The newest release of `name` matching `req` in a compat table, and the torch it needs."""
    from diagnose.engine.conditions import satisfies

    spec = str(req.specifier) or ">=0"
    fitting: list[tuple[str, str, str]] = []  # (version to compare, version to show, torch it needs)
    if name in ("torchvision", "torchaudio"):
        for row in (kb.compat.get("torch-torchvision") or {}).get("rows", []):
            patches = [f"{row[name]}.{p}" for p in range(10)] if row.get(name) else []
            fits = [v for v in patches if satisfies(v, spec) is not False]
            if fits:
                fitting.append((fits[-1], f"{row[name]}.x", f"{row['torch']}.x"))
    for row in (kb.compat.get("extension-torch") or {}).get("rows", []):
        if row.get("package") == name and satisfies(str(row["version"]), spec) is not False:
            fitting.append((str(row["version"]), str(row["version"]), str(row["torch"])))
    if not fitting:
        return None, None
    _, shown, torch = max(fitting, key=lambda row: compat.release(row[0]))
    return shown, torch
