"""One-line host facts: kernel log (NVRM Xid, module load), /proc/driver/nvidia/version,
`uname -a`, /sys/module parameters, `collect_env` / `sglang.check_env` key lines.

>>> x = parse_xid("[ 8341.513252] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU has fallen off the bus.")
>>> x.xid, x.pci, x.pid, x.process, x.text, x.time
(79, '0000:3b:00', 1234, 'python3', 'GPU has fallen off the bus.', '8341.513252')
"""

from __future__ import annotations

import re as regex  # stdlib re: faster to compile at import; these are our own patterns

from diagnose import lazy_re
from diagnose.artifacts import launch, pip
from diagnose.artifacts.numbers import to_int
from diagnose.artifacts.pip import canonical, torch_cuda_tag
from diagnose.model import GPU, Facts, Xid

KERNEL_PREFIX = lazy_re.compile(
    r"^(?:\[\s*(?P<secs>\d+\.\d+)\]"  # dmesg
    r"|\[(?P<ctime>\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4})\]"  # dmesg -T
    r"|(?P<iso>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\S*) \S+ kernel:"  # journalctl -o short-iso
    r"|(?P<syslog>\w{3} [ \d]\d \d\d:\d\d:\d\d) \S+ kernel:)"  # journalctl / syslog
, module=regex)
XID = lazy_re.compile(
    r"NVRM: Xid \((?:PCI:)?(?P<pci>[0-9A-Fa-f:.]+)\): (?P<xid>\d+),\s*"
    r"(?:pid=(?P<pid>'?<?[\w-]*>?'?),\s*)?(?:name=(?P<name>[^,]*),\s*)?(?P<text>.*)$"
, module=regex)
MODULE_LOAD = lazy_re.compile(
    r"NVRM(?: version)?:\s+(?:loading )?NVIDIA UNIX (?P<open>Open )?(?:Kernel Module for )?"
    r"(?:x86_64|aarch64|ppc64le)\s+(?:Kernel Module\s+)?(?P<version>\d+\.\d+(?:\.\d+)?)"
, module=regex)
UNAME = lazy_re.compile(r"^Linux \S+ (\d+\.\d+\.\d+\S*) #", module=regex)
LINUX_VERSION = lazy_re.compile(r"Linux version (\d+\.\d+\.\d+\S*) \(", module=regex)
SYS_PARAM = lazy_re.compile(r"/sys/module/(\w+)/parameters/(\w+)\s*[:=]\s*(\S+)\s*$", module=regex)
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
    "CUDA runtime version": "toolkit",  # torch / vLLM collect_env: what `nvcc --version` says ("12.1.105")
}
# a report's setup list, bulleted or bold: "- PyTorch: 2.2.0 (installed via conda, compiled with CUDA 11.8)",
# "- System CUDA (nvcc): 12.9", "**nvcc version**: 12.1"; keys compared lower-case, without the bullet
SETUP_LINE = lazy_re.compile(r"^[\s*>•-]{0,6}\**([A-Za-z][\w .()/-]{1,40}?)\**\s*[:：=]\s*\**\s*(\S.{0,200})$",
                             module=regex)
SETUP_FACTS = {
    "pytorch": "torch", "torch": "torch", "pytorch version": "torch", "torch version": "torch",
    "system cuda (nvcc)": "toolkit", "cuda (nvcc)": "toolkit", "nvcc": "toolkit", "nvcc version": "toolkit",
    "cuda toolkit": "toolkit", "cuda toolkit version": "toolkit", "system cuda": "toolkit",
    "system cuda version": "toolkit", "local cuda": "toolkit", "local cuda version": "toolkit",
    "installed cuda": "toolkit", "installed cuda version": "toolkit", "cuda toolkit (nvcc)": "toolkit",
}
SETUP_CUE = lazy_re.compile(r"(?i)torch|nvcc|cuda", module=regex)
# lines only Windows prints: a drive path with backslashes (a traceback's File "C:\\...", "of binary:
# U:\\Miniconda3\\envs\\x\\python.exe"), a win_amd64 / win32 wheel or platform tag, collect_env's "OS: Microsoft
# Windows 11", python's "Platform: Windows-10-...", torchrun's "Redirects are currently not supported in Windows or
# MacOs" (printed there only), and a report's "on Windows" / "(On Windows machine)" / "built it in Windows"
WINDOWS = lazy_re.compile(
    r"(?<![\w/])[A-Za-z]:\\(?:[^\\\s\"'<>|:]{1,80}\\){1,30}|\bwin_amd64\b|\bwin32\b|\bOS: Microsoft Windows\b|"
    r"\bPlatform: Windows-\d|Redirects are currently not supported in Windows|"
    r"(?i:\b(?:on|under|using|running) (?:a |my )?windows(?: 1[01]| server| machine| pc| host| laptop)?\b)"
    # "I have built it in Windows", "train in Windows enviroment": capitalised, and not WSL (Linux)
    r"|\b(?:in|with) Windows(?: 1[01]| environment| enviroment| machine| PC| system)?\b(?! Subsystem)"
, module=regex)
# macOS, where no CUDA build of torch (or CUDA engine wheel) exists: collect_env's `OS: macOS 14.5 (x86_64)` and
# `Python platform: macOS-14.5-x86_64-i386-64bit`, `uname -a`'s "Darwin Kernel Version", a macosx wheel tag
MACOS = lazy_re.compile(
    r"\bOS: macOS \d|\bplatform: macOS-\d+\.\d+|\bDarwin Kernel Version \d|\bmacosx_\d+_\d+_(?:x86_64|arm64|universal2)\b",
    module=regex)
NVCC_RELEASE = lazy_re.compile(r"Cuda compilation tools, release (\d+\.\d+)", module=regex)
# a report's environment line naming the GPU: "GPU：2080Ti", "- GPUs: 4 x NVIDIA H20", "**NVIDIA GPU**:RTX 4060 Laptop"
STATED_GPU = lazy_re.compile(
    r"^\W{0,6}(?:NVIDIA\s+)?(?:GPUs?|GPU\s+(?:model|type|name|hardware)s?|Graphics(?:\s+card)?|显卡(?:型号)?|GPU型号)"
    r"\W{0,4}?\s*[:：]\s*\**\s*(?P<value>[^|:：]{2,80}?)[\s*]*$", regex.IGNORECASE)
# the same without a colon, where the GPU model comes straight after the word: "gpu V100 32G 显存。" (a setup list in
# THUDM/GLM-4#510), "GPU: " forms aside; never "GPU 0 has a total capacity" (a number is not a model)
GPU_MODEL = r"(?:A10G|[ABHLTVP]\d{1,3}|GB\d{2,3}|B[23]00|A\d{4})"  # A100, H200, T4, V100, GB200, B200, A6000
STATED_GPU_BARE = lazy_re.compile(
    r"^\W{0,6}(?:NVIDIA\s+)?GPUs?\s+(?P<value>(?:\d\s*[x×*]\s*)?(?:NVIDIA\s+|Tesla\s+|GeForce\s+)?"
    r"(?:" + GPU_MODEL + r"|[RG]TX\s?\d{3,4}\w*)(?![\w.])[^|:：=]{0,30}?)[\s*。.,，]*$",
    regex.IGNORECASE)
# a short line that is nothing but a GPU model (and its memory): "RTX3090 24G", "A100 80GB", "2 x RTX 4090" (flood#35)
STATED_GPU_ALONE = lazy_re.compile(
    r"^\W{0,4}(?P<value>(?:\d\s{0,3}[x×*]\s{0,3})?(?:NVIDIA\s+)?(?:GeForce\s+|Tesla\s+|Quadro\s+)?"
    r"(?:[RG]TX\s?\d{3,4}(?:\s?(?:Ti|SUPER|Super))?|" + GPU_MODEL + r")(?:[ \t]{0,3}\d{1,3}[ \t]?G(?:B|iB)?)?)"
    r"[ \t*。.,，]*$",  # the block prefilter selects these lines with the same pattern (prefilter.STRUCTURE)
    regex.IGNORECASE)
LOOKS_LIKE_GPU = lazy_re.compile(
    r"(?i)nvidia|geforce|\b[rg]tx|tesla|quadro|titan|jetson|(?<![\w.])" + GPU_MODEL + r"(?![\w.])"
    r"|(?<![\w.])(?:[2-5]0[5-9]0|1[0-6][5-8]0)\s*(?:ti|super)?(?![\w.])")
STATED_GPU_HEADINGS = {"gpu", "gpus", "gpu model", "gpu models", "gpu type", "gpu name", "graphics card", "nvidia gpu",
                       "gpu hardware"}
# a device list that gives each GPU's compute capability: llama.cpp / ggml "  Device 0: NVIDIA GeForce GTX 765M, compute
# capability 3.0, VMM: yes", Ollama's "CUDA Compute Capability detected: 5.2" (0.1.x) and its "inference compute" line
# ("... compute=8.6 driver=12.4 name="NVIDIA GeForce RTX 3090" ...")
GGML_DEVICE = lazy_re.compile(r"^\s*Device (\d{1,2}): ([^,\n]{2,80}), compute capability (\d{1,2}\.\d)\b")
OLLAMA_CC = lazy_re.compile(r"\bCompute Capability detected: (\d{1,2}\.\d)\b")
OLLAMA_COMPUTE = lazy_re.compile(r'\binference compute\b.*?\bcompute=(\d{1,2}\.\d)\b(?:.*?\bname="?([^"\n]{2,80})"?)?')
# a report's sentence naming its GPU: "I have a gtx 950M (maybe it's too old)", "I'm using an RTX 3090", and where the
# error was met: "but I got this error on A10g / AWS EC2" (catie-aq/flashT5#6)
STATED_GPU_PROSE = lazy_re.compile(
    r"(?:\bI(?:'m| am)? (?:(?:have|own|use|using|got|run|running)\s+(?:an?\s+|the\s+|two\s+|\d+\s?x?\s?)?|"
    r"(?:got|get|getting|hit|hitting|see|saw|seeing|ran into|run into)\b[^\n.;]{0,40}?"
    r"\bon (?:an?\s+|my\s+|the\s+|\d+\s?x\s?)?)"
    # "my GPU is an A6000", "我的电脑是A6000 48G" (InternLM/lmdeploy#2451: my computer is ...)
    r"|\bmy (?:gpus?|graphics card|card|machine|computer|server|pc|rig|box) (?:is|has) (?:an?\s+|the\s+|\d+\s?x\s?)?"
    # "When running FlexPrefill on an RTX 4090, we encountered ..." (ByteDance-Seed/FlexPrefill#8)
    r"|\b(?:running|serving|deploying|training|testing|tested)\b[^\n.;]{0,40}?\bon (?:an?\s+|my\s+|the\s+|\d+\s?x\s?)"
    r"|我的(?:电脑|显卡|机器|服务器|主机|GPU)(?:是|为|用的是))"
    r"(?P<value>(?:NVIDIA\s+)?(?:GeForce\s+|Tesla\s+|Quadro\s+)?(?:[RG]TX\s?\d{3,4}(?:\s?(?:Ti|SUPER|Super|M))?|"
    + GPU_MODEL + r"))(?![\w.])", regex.IGNORECASE)
# a line STATED_GPU_PROSE can match has one of its lead-ins; "I " and not "I" so that "INFO" lines are not cues
STATED_GPU_PROSE_CUES = ("I ", "I'm ", "my ", "My ", "我的", "ing ", "tested ")
# a distributed launch's processes per node: torchrun / torch.distributed.launch "--nproc_per_node=8" ("--nproc-per-node 8"),
# DeepSpeed "--num_gpus 8", torchrun's environment "LOCAL_WORLD_SIZE=8"
PROCS_PER_NODE = lazy_re.compile(r"--(?:nproc[_-]per[_-]node|num[_-]gpus)[= ]+(\d{1,3})\b|\bLOCAL_WORLD_SIZE[=:]\s*(\d{1,3})\b")
GLIBC_IN_PLATFORM = lazy_re.compile(r"-with-glibc(\d+\.\d+)\b|\bldd \(.{0,60}\) (\d+\.\d+)\s*$", module=regex)


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
        xid=to_int(m["xid"]) or 0,
        text=m["text"].strip(),
        pci=m["pci"].lower(),
        pid=to_int(pid),
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
    elif "Cuda compilation tools" in line and (m := NVCC_RELEASE.search(line)):
        facts = Facts(toolkit_cuda=m[1])
    elif "ompute" in line and (found := _device_capability(line)):
        facts = found
    elif ("--n" in line or "LOCAL_WORLD_SIZE" in line) and (m := PROCS_PER_NODE.search(line)):
        facts = Facts(procs_per_node=m[1] or m[2])
    elif ("GPU" in line or "gpu" in line or "显卡" in line or "Graphics" in line) and (
            (m := STATED_GPU.match(line)) or (len(line) < 60 and (m := STATED_GPU_BARE.match(line)))) or (
            len(line) < 40 and line[:1] in GPU_ALONE_START and (m := STATED_GPU_ALONE.match(line))):
        facts = stated_gpu(m["value"])
    elif line[:1].isupper() and "=" in line and (m := ENV_LINE.match(line)):
        facts = Facts(env={m[1]: m[2]})
    elif '"model_type"' in line:
        if m := MODEL_TYPE.search(line):
            facts = Facts(model_types=[m[1]])
    if facts is None and any(cue in line for cue in STATED_GPU_PROSE_CUES) and (m := STATED_GPU_PROSE.search(line)):
        facts = stated_gpu(m["value"])
    if facts is None and len(line) < 260 and SETUP_CUE.search(line) and (m := SETUP_LINE.match(line)):
        if what := SETUP_FACTS.get(m[1].strip().lower()):
            facts = _setup_fact(what, m[2].strip(" *`"))
    if facts is None and ("glibc" in line or "ldd (" in line) and (m := GLIBC_IN_PLATFORM.search(line)):
        facts = Facts(glibc_version=m[1] or m[2])
    if facts is None and ("indows" in line or ":\\" in line or "win_amd64" in line or "win32" in line) and WINDOWS.search(line):
        facts = Facts(os="windows")
    if facts is None and ("macOS" in line or "macosx_" in line or "Darwin" in line) and MACOS.search(line):
        facts = Facts(os="macos")
    if facts is None and launch.has_cue(line):
        facts = launch.launch_facts(line)
    return facts


MODEL_TYPE = lazy_re.compile(r'"model_type"\s*:\s*"([\w.-]+)"', module=regex)


def fact_line_patterns() -> list[str]:
    """Each pattern line_facts reads a fact with, as the block prefilter selects lines by (prefilter.STRUCTURE).

    A large log is read through the prefilter, and a line it does not select gives no fact: the GPU a report names,
    the driver, the model path were lost from a log over 64 KiB that gave them at 60 KiB. The list is made from the
    patterns themselves (those `match` uses anchored at the line start), so a pattern added to line_facts must be
    added here and nowhere else; tests/test_fast_path.py compares the facts of both ways of reading every fixture."""
    patterns = [(XID, False), (MODULE_LOAD, False), (UNAME, True), (LINUX_VERSION, False), (SYS_PARAM, False),
                (NVCC_RELEASE, False), (GGML_DEVICE, True), (OLLAMA_CC, False), (OLLAMA_COMPUTE, False),
                (PROCS_PER_NODE, False), (STATED_GPU, True), (STATED_GPU_BARE, True), (STATED_GPU_ALONE, True),
                (ENV_LINE, True), (MODEL_TYPE, False), (STATED_GPU_PROSE, False), (GLIBC_IN_PLATFORM, False),
                (WINDOWS, False), (MACOS, False), *launch.FACT_PATTERNS]
    out = [_line_form(*p.text_and_flags(), anchored) for p, anchored in patterns]
    keys = "|".join(regex.escape(k) for k in sorted(COLLECT_ENV, key=len, reverse=True))
    out.append(rf"^\s*(?:{keys})\s*:")  # collect_env's `key: value` lines outside its block
    setup = "|".join(regex.escape(k) for k in sorted(SETUP_FACTS, key=len, reverse=True))
    out.append(rf"(?i)^[\s*>•-]{{0,6}}\**(?:{setup})\**\s*[:：=]")  # SETUP_LINE, for the keys SETUP_FACTS reads
    return out


def _line_form(text: str, flags: int, anchored: bool) -> str:
    """`text` as one pattern string: its flags written inline, anchored at the line start where `match` uses it."""
    lead = regex.match(r"\(\?[aiLmsux]+\)", text)
    inline, body = (lead.group(0), text[lead.end():]) if lead else ("", text)
    if flags & regex.IGNORECASE and "i" not in inline:
        inline = "(?i)" + inline
    if anchored and not body.startswith("^"):
        body = f"^(?:{body})"
    return inline + body


def _device_capability(line: str) -> Facts | None:
    """A GPU and its compute capability as a llama.cpp / Ollama device list prints them."""
    if m := GGML_DEVICE.match(line):
        return Facts(gpus=[GPU(index=int(m[1]), name=m[2].strip(), compute_capability=m[3])])
    if m := OLLAMA_COMPUTE.search(line):
        return Facts(gpus=[GPU(name=m[2], compute_capability=m[1])])
    if m := OLLAMA_CC.search(line):
        return Facts(gpus=[GPU(compute_capability=m[1])])
    return None


GPU_ALONE_START = frozenset("0123456789ABGHLNPQRTVabghlnpqrtv-*• ")  # how a STATED_GPU_ALONE line can start


def stated_gpu(value: str) -> Facts | None:
    """The GPU model a report names, if the value looks like one (not "16", "N/A" or "Nvidia (CUDA)")."""
    value = value.strip(" *`")
    if not LOOKS_LIKE_GPU.search(value) or value.lower().startswith(("n/a", "none", "no ", "cpu")):
        return None
    return Facts(stated_gpus={value: {}})


SETUP_TORCH = lazy_re.compile(r"v?(\d+\.\d+(?:\.\d+)?(?:(?:a|b|rc|\.dev|\.post)\d+)?(?:\+[\w.]+)?)(?![\w.])", module=regex)
SETUP_CUDA = lazy_re.compile(r"(?i)\bCUDA\s*v?(\d{2}\.\d)\b", module=regex)
SETUP_TOOLKIT = lazy_re.compile(r"^(?:release\s*|v|V)?(\d{2}\.\d)(?:\.\d+)?\b", module=regex)


def _setup_fact(what: str, value: str) -> Facts | None:
    """A fact from a report's setup list: torch's version (and the CUDA it was built with, where the line says), or
    the CUDA toolkit's release."""
    if what == "toolkit":
        m = SETUP_TOOLKIT.match(value)
        return Facts(toolkit_cuda=m[1]) if m else None
    m = SETUP_TORCH.match(value)
    if not m:
        return None
    facts = Facts(packages={canonical("torch"): m[1]}, stated_only={canonical("torch")})
    built = torch_cuda_tag(m[1])
    if built is None and (c := SETUP_CUDA.search(value, m.end())):
        built = c[1]
    facts.torch_cuda = built
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
    if what == "toolkit":
        return _setup_fact("toolkit", value)
    return None


ENV_REPORT_START = lazy_re.compile(
    r"^(?:Collecting environment information|PyTorch version\s*:|Python: \d+\.\d+|Python version\s*:\s*\d)"
, module=regex)
ENV_KEY = lazy_re.compile(r"[A-Za-z][\w .()/-]*", module=regex)  # `key : value`, split at the first ':' (linear, see env_key_value)
ENV_GPU = lazy_re.compile(r"^GPU ([\d,]+)(?: Compute Capability)?:\s*(.+)$", module=regex)
PACKAGE_VERSION = lazy_re.compile(r"^\d+(?:\.\d+)+(?:[.+-]?\w)*$", module=regex)  # one \w per step: no nested quantifier
MAX_VERSION = 80  # characters of a version string; longer values are not versions (and the match stays cheap)
NOT_PACKAGES = {"python", "python version", "cuda runtime version", "gcc version", "clang version", "cmake version",
                "libc version", "os", "nvcc", "hip runtime version", "miopen runtime version"}


# check_env names some packages by their import name: the distribution names pip uses
IMPORT_NAMES = {"flashinfer": "flashinfer-python", "multipart": "python-multipart", "zmq": "pyzmq"}


def env_key_value(line: str) -> tuple[str, str] | None:
    """`Key name : value` -> (key, value), or None; the key is what precedes the first ':'."""
    key, sep, value = line.partition(":")
    key, value = key.rstrip(), value.strip()
    return (key, value) if sep and value and ENV_KEY.fullmatch(key) else None


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
                                              or to_int(m[1]) is not None):
            indexes = [n for i in m[1].split(",") if (n := to_int(i)) is not None]
            target = gpu_ccs if "Compute Capability" in stripped else gpu_names
            for i in indexes:
                target[i] = m[2].strip()
            continue
        pair = env_key_value(stripped)
        if not pair:
            continue
        key, value = pair
        in_gpu_list = key == "GPU models and configuration"
        if in_gpu_list and (g := ENV_GPU.match(value)):
            if (first := to_int(g[1].split(",")[0])) is not None:
                gpu_names[first] = g[2]
        if key in COLLECT_ENV:
            found = _collect_env_fact(COLLECT_ENV[key], value)
            if found is None and COLLECT_ENV[key] == "cuda_driver":
                found = _collect_env_fact("driver", value)  # sglang's check_env prints the driver here
            if found:
                facts.merge(found)
        elif key in ("vLLM Version", "vLLM"):
            if v := regex.match(r"\d[\w.+-]*", value):
                facts.packages.setdefault("vllm", v[0])
        elif key.lower() not in NOT_PACKAGES and " " not in key and len(value) <= MAX_VERSION and PACKAGE_VERSION.match(value):
            name = canonical(key)
            facts.packages.setdefault(IMPORT_NAMES.get(name, name), value)
    for i in sorted(set(gpu_names) | set(gpu_ccs)):
        facts.gpus.append(GPU(index=i, name=gpu_names.get(i), compute_capability=gpu_ccs.get(i)))
    if facts.packages.get("torch") and not facts.torch_cuda:
        facts.torch_cuda = torch_cuda_tag(facts.packages["torch"])
    return facts


ENV_LINE = lazy_re.compile(
    r"^(?:export )?((?:CUDA|NCCL|NVIDIA|TORCH|PYTORCH|HF|TRANSFORMERS|VLLM|SGLANG|SGL|FLASHINFER|TRITON)_[A-Z0-9_]+"
    r"|LD_LIBRARY_PATH|MAX_JOBS|OMP_NUM_THREADS)=(.*)$"
, module=regex)


def parse_json_doc(text: str) -> tuple[Facts, list[str]] | None:
    """A JSON document in the inputs: a collect bundle's nvml.json or manifest.json, or a
    model's config.json. Returns facts and notes (what a collect could not read, and why).
    A field of the wrong type is left out and said in a note, never a traceback."""
    import json

    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    kind = data.get("diagnose_collect")
    if kind == "nvml":
        notes: list[str] = []
        facts = _nvml_facts(data, notes)
        return facts, [f"NVML: {e}" for e in _list(data, "errors", notes)[:10]] + notes
    if kind == "manifest":
        notes = []
        for i in _list(data, "items", notes):
            if isinstance(i, dict) and i.get("status") != "ok":
                what = f"{_str(i.get('name')) or '?'} ({_str(i.get('source')) or '?'})"
                notes.append(f"collect could not read {what}: {_str(i.get('reason')) or _str(i.get('status')) or '?'}")
        facts = Facts()
        if isinstance(data.get("platform"), str) and (m := GLIBC_IN_PLATFORM.search(data["platform"])):
            facts.glibc_version = m[1]
        if data.get("python_source") == "collector":
            # packages of diagnose's own interpreter, not necessarily the server's: "." is this bundle
            facts.foreign_sources.append(".")
            notes.append(f"the packages in this bundle are of the collector's own interpreter ({_str(data.get('python'))}), "
                         "which may not be the server's: run `diagnose collect --python <the server's python>`")
        return facts, notes
    if "model_type" in data:
        model_type = _str(data["model_type"])
        return Facts(model_types=[model_type] if model_type else []), []
    return None


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _bool(value: object) -> bool | None:
    return value if isinstance(value, bool) else None


def _list(data: dict, key: str, notes: list[str]) -> list:  # type: ignore[type-arg]
    value = data.get(key, [])
    if isinstance(value, list):
        return value
    notes.append(f"{key}: expected a list, found {type(value).__name__}; left out")
    return []


def _nvml_facts(data: dict, notes: list[str]) -> Facts:  # type: ignore[type-arg]
    facts = Facts(driver_version=_str(data.get("driver_version")), cuda_driver_version=_str(data.get("cuda_driver_version")))
    for g in _list(data, "gpus", notes):
        if not isinstance(g, dict):
            notes.append(f"gpus: an entry is {type(g).__name__}, not an object; left out")
            continue
        rows = g.get("remapped_rows")
        bus = _str(g.get("bus_id"))
        facts.gpus.append(
            GPU(
                index=_int(g.get("index")),
                name=_str(g.get("name")),
                bus_id=_canonical_bus(bus) if bus else None,
                compute_capability=_str(g.get("compute_capability")),
                memory_total_mib=_int(g.get("memory_total_mib")),
                uuid=_str(g.get("uuid")),
                ecc_uncorrected=_int(g.get("ecc_uncorrected_volatile")),
                remapped_rows_pending=_bool(rows.get("pending")) if isinstance(rows, dict) else None,
                source="nvml",
            )
        )
    for p in _list(data, "pairs", notes):
        if not isinstance(p, dict) or _int(p.get("a")) is None or _int(p.get("b")) is None:
            notes.append("pairs: an entry without integer GPU indexes a and b; left out")
            continue
        a, b = f"GPU{p['a']}", f"GPU{p['b']}"
        link = "NV#" if p.get("p2p_nvlink") == "OK" else _str(p.get("topology"))
        if link:
            facts.topology.setdefault(a, {})[b] = link
            facts.topology.setdefault(b, {})[a] = link
        if read := _str(p.get("p2p_read")):
            facts.p2p.setdefault(a, {})[b] = read
            facts.p2p.setdefault(b, {})[a] = read
    return facts


def _canonical_bus(bus_id: str) -> str:
    domain, _, rest = bus_id.partition(":")
    try:
        return f"{int(domain, 16):04x}:{rest.lower()}"
    except ValueError:
        return bus_id.lower()


LOG_TIME = lazy_re.compile(
    r"(?P<iso>\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?)"  # 2025-02-19 04:01:02
    r"|\b[IWEF](?P<glog>\d{4} \d\d:\d\d:\d\d\.\d+)"  # torch c10d / glog: E1129 19:50:56.183415
    r"|^(?:INFO|WARNING|ERROR|DEBUG|CRITICAL) (?P<vllm>\d\d-\d\d \d\d:\d\d:\d\d)"  # vLLM: INFO 02-19 04:01:02
, module=regex)


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
    if h.strip(" *:") in STATED_GPU_HEADINGS:
        return stated_gpu(value)
    if "driver version" in h or "kernel modules version" in h:
        m = regex.search(r"\b(\d{3}\.\d+(?:\.\d+)?)\b", value)
        if not m:
            return None
        facts = Facts(driver_version=m[1])
        if "open gpu kernel modules" in h:
            facts.kernel_module = "open"
        return facts
    return None
