"""`preflight(...) -> Diagnosis`: the failures a deployment is headed for, as the KB names them.

The result has the same shape (and JSON contract) as a crash diagnosis, so every renderer, bot and
script reads it unchanged: each finding is a KB rule with the compared facts as its evidence.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from diagnose.errors import DiagnoseError
from diagnose.model import Diagnosis, Finding, Skipped, walk

if TYPE_CHECKING:
    from diagnose.kb.compiled import KnowledgeBase


def preflight(
    inputs: list[str],
    *,
    kb: KnowledgeBase | None = None,
    python: str | None = None,
    model: str | None = None,
    launch: str | list[str] | None = None,
    plan: str | None = None,
    plan_report: str | None = None,
    resolve: bool = False,
    nvml: bool | None = None,
) -> Diagnosis:
    """Predict from INPUT files (pip freeze / list, nvidia-smi, bundles), a live --python, a model config,
    a launch command and an install plan. DiagnoseError (exit 2) when there is nothing to check."""
    from diagnose import api
    from diagnose.preflight import env_checks, host_checks, model_checks, predict
    from diagnose.preflight.environment import gather
    from diagnose.preflight.launch import parse_launch

    if not (inputs or python or nvml):
        raise DiagnoseError("nothing to check: give a pip freeze / pip list / collect bundle / nvidia-smi output, "
                            "or --python PATH of the server's environment")
    kb = kb or api.load_kb()
    command = parse_launch(launch) if launch else None
    env = gather(inputs, kb, python=python, model=model, launch=command, nvml=nvml)
    out = predict.Predictions(known_rules=frozenset(kb.rules))
    env_checks.check(env, kb, out)
    host_checks.check(env, kb, out)
    model_checks.check(env, kb, out)
    if plan or plan_report:
        _plan(env, kb, out, plan, plan_report, resolve, python)
    findings, rejected = predict.findings(out, env.facts, kb)
    diagnosis = Diagnosis(kb_version=kb.version, inputs=env.inputs, facts=env.facts, kind="preflight")
    diagnosis.skipped = env.skipped + out.skipped + _not_checked(env, command)
    diagnosis.findings = _merge(findings, env.found)
    diagnosis.unmatched_errors = env.unmatched
    diagnosis.rejected = rejected
    from diagnose.remedy.plan import make_plan

    diagnosis.plan = make_plan(diagnosis.findings, env.facts, kb.compat)
    return diagnosis


def _plan(env, kb, out, plan: str | None, report: str | None, resolve: bool, python: str | None) -> None:  # type: ignore[no-untyped-def]
    from diagnose.model import InputSummary
    from diagnose.preflight import plan as install_plan
    from diagnose.preflight import plan_checks

    found = None
    if report:
        found = install_plan.read_report(report, env)
    elif resolve and python:
        try:
            data = install_plan.resolve(plan or "", python)
            found = install_plan.plan_from_report(data, f"--plan (pip --dry-run with {python})", env)
        except DiagnoseError as exc:
            out.skipped.append(Skipped("--resolve", f"{exc}; estimated from the compat tables instead"))
    elif resolve:
        out.skipped.append(Skipped("--resolve", "needs --python (the environment whose pip resolves); "
                                                "estimated from the compat tables instead"))
    if found is None:
        found = install_plan.estimate(plan or "", env, kb)
    env.inputs.append(InputSummary(report or "--plan", "install-report" if report else "install-plan", 1))
    plan_checks.check(found, env, kb, out)


def _not_checked(env, command) -> list[Skipped]:  # type: ignore[no-untyped-def]
    """What the launch asks that the inputs cannot check: said, so that a clean exit means checked."""
    out = []
    facts = env.facts
    if command and command.framework and facts.packages and command.framework not in facts.packages:
        out.append(Skipped(f"preflight:{command.framework}",
                           f"the launch runs {command.framework}, which the environment checked does not have: its "
                           "checks were not run (is this the server's environment? --python PATH of its interpreter)"))
    if command and command.framework and not facts.gpus:
        out.append(Skipped("preflight:gpus", "no GPU facts (no nvidia-smi output, collect bundle or NVML): the GPU "
                                             "checks (GPUs for --tp, P2P, compute capability) were not run"))
    return out


def _merge(predicted: list[Finding], found: list[Finding]) -> list[Finding]:
    """Findings the KB made of the inputs themselves join the predictions; one finding per rule."""
    by_id = {f.rule_id: f for f in walk(predicted)}
    merged = list(predicted)
    for finding in found:
        same = by_id.get(finding.rule_id)
        if same is None:
            merged.append(finding)
            by_id[finding.rule_id] = finding
            continue
        same.evidence.extend(e for e in finding.evidence if e not in same.evidence)
        same.confidence = max(same.confidence, finding.confidence)
    merged.sort(key=lambda f: (-f.confidence, f.rule_id))
    for rank, finding in enumerate(merged, 1):
        finding.rank = rank
    return merged

