"""Predictions from an install plan: torch replaced (pip-resolver-replaced-torch) and every installed
extension that would then be built for another torch, plus requirement conflicts the install creates.
"""

from __future__ import annotations

from typing import Any

from diagnose.kb import compat
from diagnose.preflight.env_checks import TORCH_EXTENSIONS
from diagnose.preflight.environment import Environment
from diagnose.preflight.plan import InstallPlan
from diagnose.preflight.predict import Predictions


def check(plan: InstallPlan, env: Environment, kb: Any, out: Predictions) -> None:
    for note in plan.notes:
        out.skip("plan", note)
    torch = plan.changes.get("torch")
    hedge = "would most likely" if plan.estimated else "would"
    if torch and torch[0]:
        old, new = torch
        why = " (estimated from the compat tables: the newest matching release and the torch it pairs with; " \
              "give --plan-report or --resolve for what pip would really do)" if plan.estimated else ""
        pulled = [f"{n} {a} -> {b}" if a else f"{n} {b}" for n, (a, b) in sorted(plan.changes.items()) if n != "torch"]
        text = f"the install {hedge} replace torch {old} with {new}" + (
            f", pulled by {', '.join(pulled)}" if pulled else "") + why
        out.add("pip-resolver-replaced-torch", 0.6 if plan.estimated else 0.9, text, plan.source, "plan:torch",
                groups={"old_torch": str(old)})
        for line in breakage(plan, env, kb, new):
            out.add("pip-resolver-replaced-torch", 0.0, f"would break: {line}", plan.source, "plan:breaks")
    if not plan.estimated:
        new_conflicts(plan, env, out)


def breakage(plan: InstallPlan, env: Environment, kb: Any, new_torch: str) -> list[str]:
    """Installed extensions the install leaves alone that are built for (or pin) another torch."""
    packages = env.facts.packages
    old_torch = packages.get("torch", "?")
    target = compat.release(new_torch)
    if not target:
        return [f"{n} {v} (built against torch {old_torch})" for n, v in sorted(packages.items())
                if n in TORCH_EXTENSIONS and n not in plan.changes]
    broken: dict[str, str] = {}
    for row in (kb.compat.get("extension-torch") or {}).get("rows", []):
        name, built_for = str(row.get("package")), str(row.get("torch"))
        installed = packages.get(name)
        if installed and name not in plan.changes and compat.same_version(installed, str(row.get("version"))) \
                and compat.release(built_for)[:len(target)] != target:
            broken[name] = f"{name} {installed} (built for torch {built_for})"
    for row in (kb.compat.get("torch-torchvision") or {}).get("rows", []):
        if compat.minor(str(row.get("torch"))) != target[:2]:
            continue
        for companion in ("torchvision", "torchaudio"):
            installed = packages.get(companion)
            if installed and companion not in plan.changes and row.get(companion) \
                    and compat.minor(installed) != compat.minor(str(row[companion])):
                broken[companion] = f"{companion} {installed} (torch {new_torch} pairs with {row[companion]}.x)"
    if env.probe is not None:
        from diagnose.preflight.requirements import conflicts

        after = _after(plan, env)
        for c in conflicts(after, env.probe.markers):
            if c.name == "torch" and c.requirer not in plan.changes and c.installed:
                broken.setdefault(c.requirer, f"{c.requirer} {c.requirer_version} (requires {c.requirement})")
    for name in TORCH_EXTENSIONS:
        if name in packages and name not in plan.changes and name not in broken:
            broken[name] = f"{name} {packages[name]} (compiled against torch {old_torch}; likely)"
    return [broken[n] for n in sorted(broken)]


def new_conflicts(plan: InstallPlan, env: Environment, out: Predictions) -> None:
    """Declared requirements the installed set would break after the install (not torch: said above)."""
    from diagnose.preflight.probe import Distribution
    from diagnose.preflight.requirements import conflicts

    before_dists = env.probe.distributions if env.probe is not None else {
        n: Distribution(n, v) for n, v in env.facts.packages.items()}
    markers = env.probe.markers if env.probe is not None else {}
    before = {str(c) for c in conflicts(before_dists, markers)}
    for c in conflicts(_after(plan, env), markers):
        if str(c) not in before and c.name != "torch":
            out.add("pip-dependency-conflict", 0.5, f"after the install: {c}", plan.source, "plan:requires-dist",
                    groups={"package": c.requirer, "requirement": c.requirement})


def _after(plan: InstallPlan, env: Environment) -> dict[str, Any]:
    from diagnose.preflight.probe import Distribution

    dists = dict(env.probe.distributions) if env.probe is not None else {
        n: Distribution(n, v) for n, v in env.facts.packages.items()}
    for name, (_, version) in plan.changes.items():
        if compat.release(version):
            requires = plan.requires.get(name, dists[name].requires if name in dists else [])
            dists[name] = Distribution(name, version, requires)
    return dists
