"""The rule model: strict, so a typo in a rule is an error at load with its file and line.

docs/rule.schema.json is generated from these classes (`diagnose rules schema`).
"""

from __future__ import annotations

from typing import Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, model_validator

Severity = Literal["info", "low", "medium", "high", "critical"]
Effect = Literal["require", "require-if-known", "corroborate", "contradict", "evidence"]
Category = Literal[
    "driver", "hardware", "python-env", "build", "kernels", "nccl", "memory", "model", "server"
]
ArtifactKind = Literal[
    "server-log",
    "traceback",
    "dmesg",
    "nvidia-smi",
    "nvidia-smi-q",
    "nvidia-smi-topo",
    "nvidia-smi-csv",
    "pip-freeze",
    "pip-list-json",
    "collect-env",
    "install-log",
    "model-config",
    "bundle-manifest",
]
RULE_ID = r"^[a-z0-9]+(-[a-z0-9]+)*$"


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class KnownIn(Strict):
    """A signal's named group must be a key of a compat table's rows."""

    table: str
    group: str
    column: str = "model_type"


class Signal(Strict):
    """Evidence in one line: a regex, or a fuzzy message for truncated / reworded lines."""

    id: str = Field(pattern=RULE_ID)
    regex: Optional[str] = None
    fuzzy: Optional[str] = Field(default=None, min_length=12)
    cuda_error: Optional[list[str]] = Field(
        default=None,
        min_length=1,
        description="CUDA errors by enum name (cudaErrorIllegalAddress or CUDA_ERROR_ILLEGAL_ADDRESS): the KB "
        "compiles their names, messages and numbers (rules/catalog/cuda-errors.yaml) into this signal's regex",
    )
    threshold: int = Field(default=90, ge=60, le=100)
    weight: float = Field(gt=0, le=1)
    artifact: Optional[list[ArtifactKind]] = None
    known_in: Optional[KnownIn] = Field(
        default=None,
        description="count the line only when a named group's value is a key the compat table knows "
        "(an entity from knowledge: a model_type the model-type table has, in any wording around it)",
    )
    effect: Optional[Literal["contradict", "support"]] = Field(
        default=None,
        description="contradict: a line that shows the cause is not this one (a pip command with "
        "--no-build-isolation, for build isolation): it lowers the confidence by its weight and is not evidence. "
        "support: a line that is not a failure by itself (a `docker run` command without `--gpus`) and adds its "
        "weight only when another of the rule's signals matched",
    )
    scope: Optional[Literal["cut-traceback", "cut-last-frame"]] = Field(
        default=None,
        description="cut-traceback: count the line only inside a traceback the log ends before its exception "
        "line (an excerpt cut short); the frames still point at the likely cause. cut-last-frame: the same, and "
        "only when no deeper frame follows it (a frame that calls into the step that failed, such as a "
        "KV-cache set-up that first runs the model, names the step only when the traceback stops there)",
    )

    @model_validator(mode="after")
    def _one_matcher(self) -> Signal:
        if sum(x is not None for x in (self.regex, self.fuzzy, self.cuda_error)) != 1:
            raise ValueError("a signal has exactly one of `regex`, `fuzzy` or `cuda_error`")
        return self


class ModuleParam(Strict):
    module: str
    name: str
    value: str


class Compare(Strict):
    """A version a matched signal names (a group) against a fact: GLIBC_2.32 needed vs glibc 2.17
    installed; libcudart.so.12 loaded vs torch built for CUDA 13; rank 1 failing where the launcher started one
    process per node."""

    group: str
    fact: Literal["glibc_version", "torch_cuda", "driver_version", "cuda_driver_version", "procs_per_node"]
    relation: Literal["newer", "major-differs", "at-least"]  # at-least: the line's number >= the fact's


class MemoryElsewhere(Strict):
    """An out-of-memory line's own numbers (groups of the matched signal, each a size with its unit,
    `10.76 GiB`, `26.12 MiB`): the share of the GPU's total memory that is neither free nor held by the
    failing process, i.e. held by other processes, is above `above`."""

    total: str
    free: str
    held: str
    above: float = Field(gt=0, lt=1)


class Condition(Strict):
    """One question about the Facts; exactly one subject key."""

    package: Optional[str] = None
    installed: Optional[bool] = None
    version: Optional[str] = None
    compat: Optional[str] = None
    state: Optional[Literal["mismatched", "matched"]] = None
    compute_capability: Optional[str] = None
    gpu_name: Optional[str] = None
    driver_version: Optional[str] = None
    cuda_driver_version: Optional[str] = None
    torch_cuda: Optional[str] = None
    toolkit_cuda: Optional[Literal["mismatched", "matched"]] = None  # the CUDA toolkit's major vs torch's CUDA major
    toolkit_release: Optional[str] = None  # the CUDA toolkit (nvcc) release satisfies the spec
    kernel_release: Optional[str] = None
    os: Optional[Literal["windows", "macos"]] = None  # the operating system a log shows (a C:\\ path, python.exe, win_amd64; collect_env's macOS)
    kernel_module: Optional[Literal["open", "proprietary"]] = None
    module_param: Optional[ModuleParam] = None
    xid: Optional[list[int]] = None
    gpu_link: Optional[str] = None
    p2p: Optional[Literal["ok", "not-ok"]] = None
    pcie_link: Optional[Literal["degraded", "full"]] = None
    gpu_count: Optional[str] = None
    compare: Optional[Compare] = None
    memory_elsewhere: Optional[MemoryElsewhere] = None
    effect: Effect
    weight: Optional[float] = Field(default=None, gt=0, le=1)
    note: Optional[str] = None

    @model_validator(mode="after")
    def _one_subject(self) -> Condition:
        subjects = [name for name in SUBJECTS if getattr(self, name) is not None]
        if len(subjects) != 1:
            raise ValueError(f"a condition has exactly one subject of {', '.join(SUBJECTS)}")
        if self.package is not None and (self.installed is None) == (self.version is None):
            raise ValueError("a `package` condition has exactly one of `installed` or `version`")
        if self.package is None and (self.installed is not None or self.version is not None):
            raise ValueError("`installed` and `version` go with `package`")
        if (self.compat is None) != (self.state is None):
            raise ValueError("`compat` and `state` go together")
        if self.effect == "evidence" and self.weight is None:
            raise ValueError("an `evidence` condition needs a `weight`")
        return self

    @property
    def subject(self) -> str:
        return next(name for name in SUBJECTS if getattr(self, name) is not None)


SUBJECTS = (
    "package",
    "compat",
    "compute_capability",
    "gpu_name",
    "driver_version",
    "cuda_driver_version",
    "torch_cuda",
    "toolkit_cuda",
    "toolkit_release",
    "kernel_release",
    "os",
    "kernel_module",
    "module_param",
    "xid",
    "gpu_link",
    "p2p",
    "pcie_link",
    "gpu_count",
    "compare",
    "memory_elsewhere",
)


class FixStep(Strict):
    step: str = Field(min_length=8)
    run: Optional[str] = None
    caution: Optional[str] = None


class Expectation(Strict):
    exit_code: Optional[int] = None
    stdout_regex: Optional[str] = None


class VerifyStep(Strict):
    run: str = Field(min_length=3)
    expect: Expectation = Expectation(exit_code=0)
    note: Optional[str] = None


class SeedSource(Strict):
    seed: str
    note: Optional[str] = None


class UrlSource(Strict):
    url: str = Field(pattern=r"^https?://")
    note: Optional[str] = None


class ReproductionSource(Strict):
    reproduction: str
    note: Optional[str] = None


VerifiedBy = Union[SeedSource, UrlSource, ReproductionSource]


class Examples(Strict):
    match: list[str] = Field(min_length=1)
    no_match: list[str] = Field(min_length=1)


class Rule(Strict):
    id: str = Field(pattern=RULE_ID)
    title: str = Field(min_length=8)
    category: Category
    severity: Severity
    summary: str = Field(min_length=8)
    description: str = Field(min_length=20)
    signals: list[Signal] = Field(default_factory=list)
    conditions: list[Condition] = Field(default_factory=list)
    explains: list[str] = Field(default_factory=list)
    generic: bool = Field(
        default=False,
        description="a generic symptom (no GPU visible, an NCCL error, a device-side assert): its lines alone "
        "never establish one of the specific causes that explain it",
    )
    fixed_in: dict[str, str] = Field(default_factory=dict)
    fix: list[FixStep] = Field(min_length=1)
    verify: list[VerifyStep] = Field(min_length=1)
    verified_by: list[VerifiedBy] = Field(min_length=1)
    references: list[str] = Field(default_factory=list)
    examples: Examples

    @model_validator(mode="after")
    def _has_evidence(self) -> Rule:
        if not self.signals and not any(c.effect == "evidence" for c in self.conditions):
            raise ValueError("a rule needs at least one signal or one `evidence` condition")
        ids = [s.id for s in self.signals]
        if len(ids) != len(set(ids)):
            raise ValueError("signal ids must be unique within a rule")
        return self
