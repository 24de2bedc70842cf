"""What a diagnosis is made of: inputs, facts, evidence, findings.

Plain records (diagnose.record): they are built on the hot path of every run, so they cost little import time.
The JSON contract for them is docs/diagnosis.schema.json (tests validate real outputs against it).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from diagnose.record import asdict, field, record

SCHEMA_VERSION = "2.0"  # 2.0: reasons as {effect, text}, verified_by as {seed | url | reproduction, note}
MAX_STATED_GPUS = 8  # GPU models named in prose: a few, never a table's worth
MAX_GPUS = 1024  # GPUs one diagnosis keeps: more than any host has


@record
class Skipped:
    """An input, or part of one, that could not be used, and why."""

    source: str
    reason: str


@record
class InputSummary:
    """One artifact found in the inputs: where, what kind, how many lines."""

    source: str
    kind: str
    lines: int
    first_line: int = 1
    notes: list[str] = field(default_factory=list)


@record
class Evidence:
    """A line that supports a finding, quoted with where it came from."""

    source: str
    line: int
    text: str
    signal: str
    kind: str = "server-log"
    time: str | None = None
    fingerprint: str | None = None  # unmatched errors: a stable id of the masked line
    template: str | None = None
    catalog: list[CatalogNote] | None = None  # unmatched errors: the catalogued Xids / CUDA errors it names


@record
class CatalogNote:
    """What a catalogue (rules/catalog/) says about an Xid or a CUDA error that the evidence names."""

    kind: str  # "xid" | "cuda-error"
    number: int
    known: bool = True  # False: the number is not in the catalogue
    name: str | None = None  # the Xid mnemonic; the cudaError_t enumerator (else the CUresult one)
    alias: str | None = None  # the CUresult enumerator of a CUDA error
    title: str | None = None  # NVIDIA's short description of the Xid; the CUDA error's message
    meaning: str | None = None
    causes: str | None = None
    action: str | None = None  # Xid: NVIDIA's immediate, then investigatory, action in words
    reset: bool | None = None  # Xid: the GPU needs a reset (or more)
    drain: bool | None = None  # Xid: take the node out of service first
    rules: list[str] = field(default_factory=list)
    source: str | None = None
    summary: str = ""  # one line for people: what the renderers print


@record
class GPU:
    """One GPU as the inputs describe it (index, name, bus id, memory, driver-reported state)."""

    index: int | None = None
    name: str | None = None
    bus_id: str | None = None
    compute_capability: str | None = None
    memory_total_mib: int | None = None
    uuid: str | None = None
    ecc_uncorrected: int | None = None
    remapped_rows_pending: bool | None = None
    # PCIe link (nvidia-smi -q): trained width and generation against their maximum, and whether the GPU
    # was busy then; idle GPUs lower both to save power, so only a busy GPU's link says anything
    pcie_width_max: int | None = None
    pcie_width_current: int | None = None
    pcie_gen_max: int | None = None
    pcie_gen_current: int | None = None
    busy: bool | None = None
    source: str | None = None

    def same_device(self, other: GPU) -> bool:
        """One physical GPU seen by two artifacts (by bus id, UUID, or index when neither has both)."""
        if self.bus_id and other.bus_id:
            return self.bus_id == other.bus_id
        if self.uuid and other.uuid:
            return self.uuid == other.uuid
        return self.index is not None and self.index == other.index

    def fill(self, other: GPU) -> None:
        for name, value in vars(other).items():
            if getattr(self, name) is None and value is not None:
                setattr(self, name, value)


@record
class Xid:
    """An NVRM Xid event from the kernel log."""

    xid: int
    text: str
    pci: str | None = None
    pid: int | None = None
    process: str | None = None
    time: str | None = None
    source: str | None = None
    line: int | None = None


@record
class Facts:
    """What the inputs say about the host and the environment; None/empty when unknown."""

    packages: dict[str, str] = field(default_factory=dict)
    # packages whose version only a report's sentence or setup list stated ("- PyTorch: 2.2.0"): a version, not a
    # listing of the environment, so they never show that another package is absent
    stated_only: set[str] = field(default_factory=set)
    gpus: list[GPU] = field(default_factory=list)
    driver_version: str | None = None
    cuda_driver_version: str | None = None
    torch_cuda: str | None = None
    toolkit_cuda: str | None = None  # the CUDA toolkit (nvcc) a build uses: `nvcc -V`, collect_env, a report's setup list
    kernel_release: str | None = None
    kernel_module: str | None = None  # "open" | "proprietary"
    glibc_version: str | None = None  # the host's (or container's) C library, from collect_env / platform
    os: str | None = None  # "windows" / "macos" where a line shows it (a C:\\ path, python.exe, win_amd64, collect_env's OS)
    model_path: str | None = None  # the model the failing program loads, as its log names it
    script: str | None = None  # the top-level script of the failing traceback
    sdist: str | None = None  # the source distribution an install log shows pip fetching (the one it builds)
    # processes a distributed launcher starts on each node (torchrun --nproc_per_node, LOCAL_WORLD_SIZE): a rank at or
    # above it is not a local index
    procs_per_node: str | None = None
    module_params: dict[str, dict[str, str]] = field(default_factory=dict)
    xids: list[Xid] = field(default_factory=list)
    topology: dict[str, dict[str, str]] = field(default_factory=dict)
    p2p: dict[str, dict[str, str]] = field(default_factory=dict)
    nvlink: dict[str, dict[str, str]] = field(default_factory=dict)
    model_types: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    # provenance: where each installed version was read (an artifact's source name), distributions a
    # log shows running from site-packages (direct evidence that they are installed), and the sources
    # whose package lists are of another environment than the server's (a collect bundle of its own
    # interpreter)
    package_sources: dict[str, str] = field(default_factory=dict)
    seen_packages: dict[str, str] = field(default_factory=dict)
    foreign_sources: list[str] = field(default_factory=list)
    # GPU models an environment description names (a bug report's `GPU: 2080Ti`, an issue form's `### GPU model`),
    # each with where it was read and, once known, its compute capability: what the reporter says the machine
    # has, not what a process saw; used only where no artifact lists the GPUs themselves
    stated_gpus: dict[str, dict[str, str]] = field(default_factory=dict)

    def merge(self, other: Facts, source: str | None = None) -> None:
        """Fold another artifact's facts into these; the first known value of a scalar wins."""
        for name, version in other.packages.items():
            if name not in self.packages:
                if source:
                    self.package_sources[name] = other.package_sources.get(name, source)
                if name in other.stated_only:
                    self.stated_only.add(name)
            elif name not in other.stated_only:
                self.stated_only.discard(name)  # a listing names it too
            self.packages.setdefault(name, version)
        for name, where in other.seen_packages.items():
            self.seen_packages.setdefault(name, where)
        self.foreign_sources.extend(s for s in other.foreign_sources if s not in self.foreign_sources)
        if other.gpus:
            self._merge_gpus(other.gpus)
        for attr in (
            "driver_version",
            "cuda_driver_version",
            "torch_cuda",
            "toolkit_cuda",
            "kernel_release",
            "kernel_module",
            "glibc_version",
            "os",
            "model_path",
            "script",
            "sdist",
            "procs_per_node",
        ):
            if getattr(self, attr) is None:
                setattr(self, attr, getattr(other, attr))
        for module, params in other.module_params.items():
            self.module_params.setdefault(module, {}).update(params)
        self.xids.extend(other.xids)
        for attr in ("topology", "p2p", "nvlink"):
            for gpu, row in getattr(other, attr).items():
                getattr(self, attr).setdefault(gpu, {}).update(row)
        self.model_types.extend(m for m in other.model_types if m not in self.model_types)
        for name, stated in other.stated_gpus.items():
            if len(self.stated_gpus) < MAX_STATED_GPUS:
                self.stated_gpus.setdefault(name, stated)
        for name, value in other.env.items():
            self.env.setdefault(name, value)

    def _merge_gpus(self, gpus: list[GPU]) -> None:
        """Each GPU joins the one it is the same device as, or is added: linear in the GPUs, since a
        GPU none of whose bus id, UUID and index is known yet cannot be the same as any (thousands of
        rows of a crafted table must not take quadratic time)."""
        ids = {("bus", g.bus_id) for g in self.gpus} | {("uuid", g.uuid) for g in self.gpus} | {
            ("index", g.index) for g in self.gpus}
        by_bus = {g.bus_id: g for g in reversed(self.gpus) if g.bus_id}
        busless = sum(1 for g in self.gpus if not g.bus_id)
        for gpu in gpus:
            keys = {("bus", gpu.bus_id), ("uuid", gpu.uuid), ("index", gpu.index)}
            same = None
            if gpu.bus_id and not busless:  # every known GPU has a bus id: only it can say
                same = by_bus.get(gpu.bus_id)
            elif any(k in ids for k in keys if k[1] is not None):
                same = next((g for g in self.gpus if g.same_device(gpu)), None)
            if same is None:
                if len(self.gpus) >= MAX_GPUS:
                    continue
                self.gpus.append(gpu)
                same = gpu
                busless += not gpu.bus_id
            else:
                busless -= not same.bus_id and bool(gpu.bus_id)
                same.fill(gpu)
            if same.bus_id:
                by_bus.setdefault(same.bus_id, same)
            ids |= {("bus", same.bus_id), ("uuid", same.uuid), ("index", same.index)}

    def is_foreign(self, source: str | None) -> bool:
        """Was this artifact's package list taken from another environment than the server's?"""
        return source is not None and any(source.startswith(prefix) for prefix in self.foreign_sources)

    def gpus_only_stated(self) -> bool:
        """No artifact names or rates a GPU, but a report names one: the GPU facts are the report's words."""
        return bool(self.stated_gpus) and not any(g.name or g.compute_capability for g in self.gpus)

    def compute_capabilities(self) -> list[str]:
        """The GPUs' compute capabilities; where no artifact lists a GPU, those of the GPUs a report names."""
        if self.gpus_only_stated():
            return [s["compute_capability"] for s in self.stated_gpus.values() if s.get("compute_capability")]
        return [g.compute_capability for g in self.gpus if g.compute_capability]

    def gpu_names(self) -> list[str]:
        """The GPUs' names; where no artifact lists a GPU, the ones a report names."""
        return list(self.stated_gpus) if self.gpus_only_stated() else [g.name for g in self.gpus if g.name]


@record
class Finding:
    """One root cause (or a symptom folded under one) with its evidence and remedy."""

    rule_id: str
    title: str
    category: str
    severity: str
    confidence: float
    summary: str
    evidence: list[Evidence]
    reasons: list[str] = field(default_factory=list)
    checks: list[str] = field(default_factory=list)  # --explain: each signal and condition, held or not
    symptoms: list[Finding] = field(default_factory=list)
    fix: list[dict[str, str]] = field(default_factory=list)
    verify: list[dict[str, Any]] = field(default_factory=list)
    verified_by: list[str] = field(default_factory=list)
    references: list[str] = field(default_factory=list)
    rank: int = 0
    first_position: tuple[int, int] = (0, 0)
    catalog: list[CatalogNote] = field(default_factory=list)  # the catalogued Xids / CUDA errors it names
    basis: str = "log"  # where its evidence came from: log, prose, cut (frames of a cut traceback), guess


GUESS_SIGNAL = "nearest-known-wording"  # evidence of a finding offered by similarity, not by a signature (engine/nearest.py)


def is_guess(finding: Finding) -> bool:
    """A finding offered because the unexplained errors are worded nearest to its cause, not matched by a signature."""
    return bool(finding.evidence) and all(e.signal == GUESS_SIGNAL for e in finding.evidence)


def walk(findings: list[Finding]) -> Iterator[Finding]:
    """Every finding and, depth first, the symptoms folded under it."""
    for finding in findings:
        yield finding
        yield from walk(finding.symptoms)


@record
class RuleVerdict:
    """Why a rule that showed some evidence was not reported (for --explain)."""

    rule_id: str
    confidence: float
    reason: str
    matched: list[str] = field(default_factory=list)


@record
class Plan:
    """One remediation for several findings: pins that satisfy all of them, each saying whom it serves."""

    pins: dict[str, str] = field(default_factory=dict)  # distribution -> version (or `0.24.*`)
    why: dict[str, str] = field(default_factory=dict)  # distribution -> the fact behind its pin
    serves: dict[str, list[str]] = field(default_factory=dict)  # distribution -> rule ids
    steps: list[dict[str, str]] = field(default_factory=list)  # {run, why}, in order
    conflicts: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@record
class Diagnosis:
    """The whole answer for a set of inputs: what was read, the ranked findings, the facts and what was skipped."""

    kb_version: str
    inputs: list[InputSummary] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    facts: Facts = field(default_factory=Facts)
    findings: list[Finding] = field(default_factory=list)
    unmatched_errors: list[Evidence] = field(default_factory=list)
    rejected: list[RuleVerdict] = field(default_factory=list)
    # strong evidence a fact set aside (shown by default, not only with --explain)
    set_aside: list[RuleVerdict] = field(default_factory=list)
    plan: Plan | None = None  # one remediation across the findings (diagnose/remedy/plan.py)
    schema_version: str = SCHEMA_VERSION
    kind: str = "diagnosis"  # or "preflight": a prediction from the environment (preflight/core.py)

    def drop_explanations(self) -> None:
        """Without --explain: no rejected rules, no per-finding checks."""
        self.rejected = []
        for finding in walk(self.findings):
            finding.checks = []

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["facts"]["stated_only"] = sorted(data["facts"]["stated_only"])
        for finding in data["findings"]:
            _clean_finding(finding)
        _drop_empty_catalog(data["unmatched_errors"])
        return data


def _drop_empty_catalog(items: list[dict[str, Any]]) -> None:
    """`catalog` is optional in the JSON contract: present only where a catalogue had something to say."""
    for item in items:
        if not item.get("catalog"):
            item.pop("catalog", None)


def _clean_finding(finding: dict[str, Any]) -> None:
    finding.pop("first_position", None)
    finding.pop("basis", None)  # internal: the calibration's input, said in words by a reason
    finding["reasons"] = [reason_item(r) for r in finding["reasons"]]
    finding["verified_by"] = [source_item(v) for v in finding["verified_by"]]
    _drop_empty_catalog([finding, *finding["evidence"]])
    for symptom in finding["symptoms"]:
        _clean_finding(symptom)


REASON_EFFECTS = {"+": "raises", "-": "lowers", "·": "note"}  # the sign a reason reads with


def reason_item(text: str) -> dict[str, str]:
    """A reason as JSON gives it: `+ torch 2.10.0 is installed` -> {effect: raises, text: torch 2.10.0 is installed}."""
    sign, _, rest = text.partition(" ")
    if sign in REASON_EFFECTS and rest:
        return {"effect": REASON_EFFECTS[sign], "text": rest}
    return {"effect": "note", "text": text}


def source_item(text: str) -> dict[str, str | None]:
    """Where a fix was confirmed, as JSON gives it: `seed 002_x.txt (the seed)` -> {seed: 002_x.txt, note: the seed},
    `https://github.com/... (a comment)` -> {url: https://github.com/..., note: a comment}; note None when none."""
    kind, value = "url", text
    for label in ("seed", "reproduction"):
        if text.startswith(label + " "):
            kind, value = label, text[len(label) + 1:]
    value, _, note = value.partition(" (")
    return {kind: value, "note": note.removesuffix(")") or None}
