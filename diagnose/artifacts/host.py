"""One-line host facts: kernel log (NVRM Xid, module load), /proc/driver/nvidia/version,
`uname -a`, /sys/module parameters, `collect_env` / `sglang.check_env` key lines.

>>> x = parse_xid("[ 8341.513252] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU has fallen off the bus.")
>>> x.xid, x.pci, x.pid, x.process, x.text, x.time
(79, '0000:3b:00', 1234, 'python3', 'GPU has fallen off the bus.', '8341.513252')
"""

from __future__ import annotations

import regex

from diagnose.artifacts.pip import canonical, torch_cuda_tag
from diagnose.model import Facts, Xid

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
    "CUDA used to build PyTorch": "torch_cuda",
    "Nvidia driver version": "driver",
    "NVIDIA Driver Version": "driver",
    "Driver Version": "driver",
    "CUDA Driver Version": "cuda_driver",
    "CUDA Driver": "cuda_driver",
}


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
    elif '"model_type"' in line:
        if m := regex.search(r'"model_type"\s*:\s*"([\w.-]+)"', line):
            facts = Facts(model_types=[m[1]])
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
    return None
