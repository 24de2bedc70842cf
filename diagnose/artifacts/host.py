"""One-line host facts: kernel log (NVRM Xid, module load), /proc/driver/nvidia/version,
`uname -a`, /sys/module parameters, `collect_env` / `sglang.check_env` key lines.

>>> x = parse_xid("[ 8341.513252] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU has fallen off the bus.")
>>> x.xid, x.pci, x.pid, x.process, x.text, x.time
(79, '0000:3b:00', 1234, 'python3', 'GPU has fallen off the bus.', '8341.513252')
"""

from __future__ import annotations

import re as regex  # stdlib re: faster to compile at import; these are our own patterns

from diagnose.artifacts import pip
from diagnose.artifacts.pip import canonical, torch_cuda_tag
from diagnose.model import GPU, Facts, Xid

KERNEL_PREFIX = regex.compile(
    r"^(?:\[\s*(?P<secs>\d+\.\d+)\]"  # dmesg
    r"|\[(?P<ctime>\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4})\]"  # dmesg -T
    r"|(?P<iso>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\S*) \S+ kernel:"  # journalctl -o short-iso
    r"|(?P<syslog>\w{3} [ \d]\d \d\d:\d\d:\d\d) \S+ kernel:)"  # journalctl / syslog
)
XID = regex.compile(
    r"NVRM: Xid \((?:PCI:)?(?P<pci>[0-9A-Fa-f:.]+)\): (?P<xid>\d+),\s*"
    r"(?:pid=(?P<pid>'?<?[\w-]*>?'?),\s*)?(?:name=(?P<name>[^,]*),\s*)?(?P<text>.*)$"
)
MODULE_LOAD = regex.compile(
    r"NVRM(?: version)?:\s+(?:loading )?NVIDIA UNIX (?P<open>Open )?(?:Kernel Module for )?"
    r"(?:x86_64|aarch64|ppc64le)\s+(?:Kernel Module\s+)?(?P<version>\d+\.\d+(?:\.\d+)?)"
)
UNAME = regex.compile(r"^Linux \S+ (\d+\.\d+\.\d+\S*) #")
LINUX_VERSION = regex.compile(r"Linux version (\d+\.\d+\.\d+\S*) \(")
SYS_PARAM = regex.compile(r"/sys/module/(\w+)/parameters/(\w+)\s*[:=]\s*(\S+)\s*$")
COLLECT_ENV = {
    "PyTorch version": "torch",
    "PyTorch": "torch",  # sglang.check_env
    "CUDA used to build PyTorch": "torch_cuda",
    "Nvidia driver version": "driver",
    "NVIDIA Driver Version": "driver",
    "Driver Version": "driver",
    "CUDA Driver Version": "cuda_driver",
    "CUDA Driver": "cuda_driver",
    "Libc version": "glibc",  # torch collect_env: "Libc version: glibc-2.35"
}
GLIBC_IN_PLATFORM = regex.compile(r"-with-glibc(\d+\.\d+)\b|\bldd \(.{0,60}\) (\d+\.\d+)\s*$")


def kernel_time(line: str) -> tuple[str | None, int]:
    """The kernel-log timestamp of a line (as printed) and where its message starts."""
    m = KERNEL_PREFIX.match(line)
    if not m:
        return None, 0
    return next(v for v in m.groupdict().values() if v), m.end()


def parse_xid(line: str) -> Xid | None:
    m = XID.search(line)
    if not m:
        return None
    pid = m["pid"].strip("'") if m["pid"] else None
    return Xid(
        xid=int(m["xid"]),
        text=m["text"].strip(),
        pci=m["pci"].lower(),
        pid=int(pid) if pid and pid.isdigit() else None,
        process=m["name"].strip() if m["name"] and m["name"] != "<unknown>" else None,
        time=kernel_time(line)[0],
    )


def line_facts(line: str) -> Facts | None:
    """Facts one line states on its own, or None (cheap substring checks first)."""
    facts: Facts | None = None
    if "NVRM" in line:
        if "Xid" in line and (xid := parse_xid(line)):
            facts = Facts(xids=[xid])
        elif m := MODULE_LOAD.search(line):
            facts = Facts(kernel_module="open" if m["open"] else "proprietary", driver_version=m["version"])
    elif "Linux" in line:
        if m := UNAME.match(line) or LINUX_VERSION.search(line):
            facts = Facts(kernel_release=m[1])
    elif "/sys/module/" in line:
        if m := SYS_PARAM.search(line):
            facts = Facts(module_params={m[1]: {m[2]: m[3]}})
    elif ":" in line and (key := line.split(":", 1)[0].strip()) in COLLECT_ENV:
        facts = _collect_env_fact(COLLECT_ENV[key], line.split(":", 1)[1].strip())
    elif line[:1].isupper() and "=" in line and (m := ENV_LINE.match(line)):
        facts = Facts(env={m[1]: m[2]})
    elif '"model_type"' in line:
        if m := regex.search(r'"model_type"\s*:\s*"([\w.-]+)"', line):
            facts = Facts(model_types=[m[1]])
    if facts is None and ("glibc" in line or "ldd (" in line) and (m := GLIBC_IN_PLATFORM.search(line)):
        facts = Facts(glibc_version=m[1] or m[2])
    return facts


def _collect_env_fact(what: str, value: str) -> Facts | None:
    if not value or value.lower() in ("n/a", "none", "could not collect"):
        return None
    if what == "torch":
        facts = Facts(packages={canonical("torch"): value})
        facts.torch_cuda = torch_cuda_tag(value)
        return facts
    if what == "torch_cuda":
        return Facts(torch_cuda=value) if regex.match(r"\d+\.\d+$", value) else None
    if what == "driver":
        return Facts(driver_version=value) if regex.match(r"\d+\.\d+", value) else None
    if what == "cuda_driver":
        return Facts(cuda_driver_version=value) if regex.match(r"\d+\.\d+$", value) else None
    if what == "glibc":
        m = regex.match(r"glibc-(\d+\.\d+)", value)
        return Facts(glibc_version=m[1]) if m else None
    return None


ENV_REPORT_START = regex.compile(
    r"^(?:Collecting environment information|PyTorch version\s*:|Python: \d+\.\d+|Python version\s*:\s*\d)"
)
ENV_KEY_VALUE = regex.compile(r"^([A-Za-z][\w .()/-]*?)\s*:\s*(.+?)\s*$")
ENV_GPU = regex.compile(r"^GPU ([\d,]+)(?: Compute Capability)?:\s*(.+)$")
PACKAGE_VERSION = regex.compile(r"^\d+(?:\.\d+)+(?:[.+-]?\w+)*$")
NOT_PACKAGES = {"python", "python version", "cuda runtime version", "gcc version", "clang version", "cmake version",
                "libc version", "os", "nvcc", "hip runtime version", "miopen runtime version"}


# check_env names some packages by their import name: the distribution names pip uses
IMPORT_NAMES = {"flashinfer": "flashinfer-python", "multipart": "python-multipart", "zmq": "pyzmq"}


def is_env_report_start(line: str) -> bool:
    return bool(ENV_REPORT_START.match(line))


def parse_env_report(lines: list[str]) -> Facts:
    """`python -m torch.utils.collect_env`, vLLM's collect_env.py, `python -m sglang.check_env`."""
    facts = Facts()
    in_gpu_list = False
    gpu_names: dict[int, str] = {}
    gpu_ccs: dict[int, str] = {}
    for line in lines:
        stripped = line.strip()
        if m := pip.COLLECT_ENV.match(stripped):
            facts.packages.setdefault(canonical(m[1]), m[2])
            continue
        if (m := ENV_GPU.match(stripped)) and (in_gpu_list or "," in m[1] or "Compute Capability" in stripped
                                              or m[1].isdigit()):
            indexes = [int(i) for i in m[1].split(",") if i]
            target = gpu_ccs if "Compute Capability" in stripped else gpu_names
            for i in indexes:
                target[i] = m[2].strip()
            continue
        m = ENV_KEY_VALUE.match(stripped)
        if not m:
            continue
        key, value = m[1].strip(), m[2].strip()
        in_gpu_list = key == "GPU models and configuration"
        if in_gpu_list and (g := ENV_GPU.match(value)):
            gpu_names[int(g[1].split(",")[0])] = g[2]
        if key in COLLECT_ENV:
            found = _collect_env_fact(COLLECT_ENV[key], value)
            if found is None and COLLECT_ENV[key] == "cuda_driver":
                found = _collect_env_fact("driver", value)  # sglang's check_env prints the driver here
            if found:
                facts.merge(found)
        elif key in ("vLLM Version", "vLLM"):
            if v := regex.match(r"\d[\w.+-]*", value):
                facts.packages.setdefault("vllm", v[0])
        elif key.lower() not in NOT_PACKAGES and " " not in key and PACKAGE_VERSION.match(value):
            name = canonical(key)
            facts.packages.setdefault(IMPORT_NAMES.get(name, name), value)
    for i in sorted(set(gpu_names) | set(gpu_ccs)):
        facts.gpus.append(GPU(index=i, name=gpu_names.get(i), compute_capability=gpu_ccs.get(i)))
    if facts.packages.get("torch") and not facts.torch_cuda:
        facts.torch_cuda = torch_cuda_tag(facts.packages["torch"])
    return facts


ENV_LINE = regex.compile(
    r"^(?:export )?((?:CUDA|NCCL|NVIDIA|TORCH|PYTORCH|HF|TRANSFORMERS|VLLM|SGLANG|SGL|FLASHINFER|TRITON)_[A-Z0-9_]+"
    r"|LD_LIBRARY_PATH|MAX_JOBS|OMP_NUM_THREADS)=(.*)$"
)


def parse_json_doc(text: str) -> tuple[Facts, list[str]] | None:
    """A JSON document in the inputs: a collect bundle's nvml.json or manifest.json, or a
    model's config.json. Returns facts and notes (what a collect could not read, and why)."""
    import json

    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    kind = data.get("diagnose_collect")
    if kind == "nvml":
        return _nvml_facts(data), [f"NVML: {e}" for e in data.get("errors", [])[:10]]
    if kind == "manifest":
        notes = [
            f"collect could not read {i['name']} ({i['source']}): {i.get('reason') or i['status']}"
            for i in data.get("items", [])
            if isinstance(i, dict) and i.get("status") != "ok"
        ]
        facts = Facts()
        if isinstance(data.get("platform"), str) and (m := GLIBC_IN_PLATFORM.search(data["platform"])):
            facts.glibc_version = m[1]
        if data.get("python_source") == "collector":
            # packages of diagnose's own interpreter, not necessarily the server's: "." is this bundle
            facts.foreign_sources.append(".")
            notes.append(f"the packages in this bundle are of the collector's own interpreter ({data.get('python')}), "
                         "which may not be the server's: run `diagnose collect --python <the server's python>`")
        return facts, notes
    if "model_type" in data:
        return Facts(model_types=[str(data["model_type"])]), []
    return None


def _nvml_facts(data: dict) -> Facts:  # type: ignore[type-arg]
    facts = Facts(driver_version=data.get("driver_version"), cuda_driver_version=data.get("cuda_driver_version"))
    for g in data.get("gpus", []):
        rows = g.get("remapped_rows") or {}
        bus = g.get("bus_id")
        facts.gpus.append(
            GPU(
                index=g.get("index"),
                name=g.get("name"),
                bus_id=_canonical_bus(bus) if bus else None,
                compute_capability=g.get("compute_capability"),
                memory_total_mib=g.get("memory_total_mib"),
                uuid=g.get("uuid"),
                ecc_uncorrected=g.get("ecc_uncorrected_volatile"),
                remapped_rows_pending=rows.get("pending"),
                source="nvml",
            )
        )
    for p in data.get("pairs", []):
        a, b = f"GPU{p['a']}", f"GPU{p['b']}"
        link = "NV#" if p.get("p2p_nvlink") == "OK" else p.get("topology")
        if link:
            facts.topology.setdefault(a, {})[b] = link
            facts.topology.setdefault(b, {})[a] = link
        if p.get("p2p_read"):
            facts.p2p.setdefault(a, {})[b] = p["p2p_read"]
            facts.p2p.setdefault(b, {})[a] = p["p2p_read"]
    return facts


def _canonical_bus(bus_id: str) -> str:
    domain, _, rest = bus_id.partition(":")
    try:
        return f"{int(domain, 16):04x}:{rest.lower()}"
    except ValueError:
        return bus_id.lower()


LOG_TIME = regex.compile(
    r"(?P<iso>\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?)"  # 2025-02-19 04:01:02
    r"|\b[IWEF](?P<glog>\d{4} \d\d:\d\d:\d\d\.\d+)"  # torch c10d / glog: E1129 19:50:56.183415
    r"|^(?:INFO|WARNING|ERROR|DEBUG|CRITICAL) (?P<vllm>\d\d-\d\d \d\d:\d\d:\d\d)"  # vLLM: INFO 02-19 04:01:02
)


def log_time(line: str) -> str | None:
    """The time a log line carries, as printed (kernel-log seconds included), or None."""
    kernel, _ = kernel_time(line)
    if kernel:
        return kernel
    m = LOG_TIME.search(line[:120])
    return next((v for v in m.groupdict().values() if v), None) if m else None


def issue_form_fact(heading: str, value: str) -> Facts | None:
    """Facts from the fields of GitHub issue forms (NVIDIA/open-gpu-kernel-modules, vLLM, ...):
    `### Kernel Release` / `5.14.0-570.23.1.el9_6.x86_64`, `### NVIDIA Open GPU Kernel Modules Version` /
    `570.158.01, 575.57.08`."""
    h = heading.lower()
    if "kernel release" in h or h == "kernel version":
        m = UNAME.match(value) or LINUX_VERSION.search(value)
        release = m[1] if m else value.split()[0]
        return Facts(kernel_release=release) if regex.match(r"\d+\.\d+", release) else None
    if "driver version" in h or "kernel modules version" in h:
        m = regex.search(r"\b(\d{3}\.\d+(?:\.\d+)?)\b", value)
        if not m:
            return None
        facts = Facts(driver_version=m[1])
        if "open gpu kernel modules" in h:
            facts.kernel_module = "open"
        return facts
    return None
