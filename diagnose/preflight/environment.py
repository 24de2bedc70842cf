"""Everything preflight knows before launch, gathered once: the Python environment, the host, the
model and the launch command, as Facts plus where each fact was read (for evidence).

Inputs go through the same artifact reading as a crash diagnosis (`api.diagnose`), so a pip freeze,
a pip list JSON, nvidia-smi output in any form and a `diagnose collect` bundle all work; what the KB
finds in them by itself (a `+cpu` torch line, a CNS P2P matrix) is kept as findings too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from diagnose import lazy_re
from diagnose.model import Diagnosis, Evidence, Facts, Finding, InputSummary, Skipped

if TYPE_CHECKING:
    from diagnose.kb.compiled import KnowledgeBase
    from diagnose.preflight.launch import LaunchCommand
    from diagnose.preflight.model_config import ModelInfo
    from diagnose.preflight.probe import ProbeResult

PACKAGE_KINDS = ("pip-freeze", "pip-list-json", "collect-env", "install-log")
HOST_KINDS = ("nvidia-smi", "nvidia-smi-q", "nvidia-smi-csv", "nvidia-smi-topo", "collect-env", "bundle-manifest")
MAX_LOCATE = 8 << 20


@dataclass
class Environment:
    facts: Facts = field(default_factory=Facts)
    inputs: list[InputSummary] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    found: list[Finding] = field(default_factory=list)  # what the KB finds in the inputs themselves
    unmatched: list[Evidence] = field(default_factory=list)
    probe: ProbeResult | None = None
    model: ModelInfo | None = None
    launch: LaunchCommand | None = None
    host_source: str | None = None
    attached_gpus: int = 0  # "Attached GPUs : 8" of nvidia-smi -q, when its GPU sections were cut short
    _package_files: list[str] = field(default_factory=list)

    def package_source(self, name: str) -> tuple[str, int]:
        """Where the installed version of `name` was read: (source, line) - line 0 when not a line."""
        if self.probe is not None and name in self.probe.distributions:
            return f"--python {self.probe.python}", 0
        for source in self._package_files:
            line = _find_package_line(source, name)
            if line:
                return source, line
        return (self._package_files[0], 0) if self._package_files else ("inputs", 0)

    @property
    def host(self) -> str:
        return self.host_source or "the host"


def gather(inputs: list[str], kb: KnowledgeBase, python: str | None = None, model: str | None = None,
           launch: LaunchCommand | None = None, nvml: bool | None = None) -> Environment:
    from diagnose.preflight import model_config, probe

    env = Environment(launch=launch)
    if python:
        env.probe = probe.probe(python)
        env.facts.merge(_probe_facts(env.probe))
        env.inputs.append(InputSummary(f"--python {python}", "python-env", len(env.probe.distributions)))
    if inputs:
        _read_inputs(env, inputs, kb)
    if nvml or (nvml is None and python and not env.facts.gpus):
        _read_nvml(env, kb)
    if model:
        env.model = model_config.read_model(model)
    elif launch is not None and launch.model:
        env.model = model_config.read_model(launch.model, required=False)
        if env.model is None:
            env.skipped.append(Skipped(f"model {launch.model}", "no config.json found for the launch's model "
                                       "(not a local folder, not in the Hugging Face cache); model checks not run"))
    if env.model is not None:
        env.inputs.append(InputSummary(env.model.source, "model-config", 1))
        if env.model.model_type and env.model.model_type not in env.facts.model_types:
            env.facts.model_types.insert(0, env.model.model_type)
    if launch is not None:
        env.inputs.append(InputSummary("launch command", "launch-command", 1))
    _complete(env.facts, kb)
    return env


def _probe_facts(result: ProbeResult) -> Facts:
    from diagnose.artifacts.pip import torch_cuda_tag

    facts = Facts(packages=dict(result.packages))
    torch = facts.packages.get("torch")
    facts.torch_cuda = result.torch_cuda or (torch_cuda_tag(torch) if torch else None)
    return facts


def _read_inputs(env: Environment, inputs: list[str], kb: KnowledgeBase) -> None:
    from diagnose import api

    diagnosis = api.diagnose(inputs, kb=kb)
    _take(env, diagnosis)
    env._package_files = _unique(i.source for i in diagnosis.inputs if i.kind in PACKAGE_KINDS)
    host = sorted(_unique(i.source for i in diagnosis.inputs if i.kind in HOST_KINDS), key=_host_preference)
    env.host_source = env.host_source or (host[0] if host else None)
    env.attached_gpus = max([_attached_gpus(s) for s in host] + [env.attached_gpus])


def _read_nvml(env: Environment, kb: KnowledgeBase) -> None:
    import json

    from diagnose import api
    from diagnose.collect import nvml

    snapshot = nvml.snapshot()
    if not snapshot["gpus"]:
        why = (snapshot["errors"] or ["no GPU found"])[0]
        env.skipped.append(Skipped("NVML (this host)", f"no GPU read live: {why}"))
        return
    # indented, as a collect bundle writes nvml.json: the reader knows a JSON document by its lone "{"
    diagnosis = api.diagnose_texts([("NVML (this host)", json.dumps(snapshot, indent=2))], kb=kb)
    _take(env, diagnosis)
    env.host_source = "NVML (this host)"


def _take(env: Environment, diagnosis: Diagnosis) -> None:
    env.facts.merge(diagnosis.facts)
    env.inputs.extend(diagnosis.inputs)
    env.skipped.extend(diagnosis.skipped)
    env.found.extend(diagnosis.findings)
    # an "error" word in a package list or a GPU table is not a failing line: keep those of logs only
    env.unmatched.extend(e for e in diagnosis.unmatched_errors if e.kind not in PACKAGE_KINDS + HOST_KINDS)


def _complete(facts: Facts, kb: KnowledgeBase) -> None:
    from diagnose.kb import compat

    table = kb.compat.get("gpu-compute-capability")
    for gpu in facts.gpus:
        if gpu.compute_capability is None and gpu.name:
            gpu.compute_capability = compat.compute_capability(table, gpu.name)


def _host_preference(source: str) -> int:
    """nvidia-smi output first, then a bundle's nvml.json, then whatever else states host facts."""
    name = source.rsplit("/", 1)[-1].rsplit(":", 1)[-1]
    return 0 if name.startswith("nvidia-smi") else 1 if name == "nvml.json" else 2


def _unique(items) -> list[str]:  # type: ignore[no-untyped-def]
    out: list[str] = []
    for item in items:
        if item not in out:
            out.append(item)
    return out


ATTACHED = lazy_re.compile(r"^\s*(?:Attached GPUs\s*:\s*|<attached_gpus>)(\d{1,6})(?!\d)")  # no int() of 5,000 digits


def _attached_gpus(source: str) -> int:
    """The GPU count an nvidia-smi -q (text or XML) file states in its header, or 0."""
    path = Path(source)
    try:
        if not path.is_file() or path.stat().st_size > MAX_LOCATE:
            return 0
        with path.open(encoding="utf-8", errors="replace") as fh:
            for number, line in enumerate(fh):
                if m := ATTACHED.match(line):
                    return int(m[1])
                if number > 40:
                    return 0
    except OSError:
        return 0
    return 0


def _find_package_line(source: str, name: str) -> int:
    """The line of a plain-text input that names `name` (a freeze or list line), or 0."""
    path = Path(source)
    try:
        if not path.is_file() or path.stat().st_size > MAX_LOCATE:
            return 0
        with path.open("rb") as fh:
            if fh.read(2) == b"\x1f\x8b":
                return 0
    except OSError:
        return 0
    words = re.escape(name).replace(r"\-", "[-_.]")
    pattern = re.compile(rf"^\s*(?:\[\w+\]\s+)?{words}\s*(?:==|===|\s@\s|\s+\d)|\"name\":\s*\"{words}\"", re.I)
    with path.open(encoding="utf-8", errors="replace") as fh:
        for number, line in enumerate(fh, 1):
            if pattern.search(line):
                return number
    return 0
