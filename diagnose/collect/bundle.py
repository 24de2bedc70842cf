"""`diagnose collect`: gather a GPU host's artifacts into one bundle that `diagnose` reads back.

Every item is attempted with a time limit; what could not be read (no GPU, no NVML, no dmesg
permission, no such command) is recorded in manifest.json with the reason, never dropped.
"""

from __future__ import annotations

import io
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from diagnose import __version__

COMMAND_TIMEOUT = 60
ENV_PREFIXES = ("CUDA_", "NCCL_", "NVIDIA_", "TORCH_", "PYTORCH_", "HF_", "TRANSFORMERS_", "VLLM_", "SGLANG_",
                "SGL_", "FLASHINFER_", "TRITON_", "OMP_NUM_THREADS", "LD_LIBRARY_PATH", "PATH", "MAX_JOBS")
SECRET_WORDS = ("TOKEN", "KEY", "SECRET", "PASSWORD", "CREDENTIAL", "AUTH")
NVIDIA_SMI = [
    ("nvidia-smi.txt", ["nvidia-smi"]),
    ("nvidia-smi-q.txt", ["nvidia-smi", "-q"]),
    ("nvidia-smi-q-x.xml", ["nvidia-smi", "-q", "-x"]),
    ("nvidia-smi-query.csv", ["nvidia-smi", "--query-gpu=index,name,pci.bus_id,driver_version,compute_cap,memory.total,uuid", "--format=csv"]),
    ("nvidia-smi-topo-m.txt", ["nvidia-smi", "topo", "-m"]),
    ("nvidia-smi-topo-p2p-r.txt", ["nvidia-smi", "topo", "-p2p", "r"]),
    ("nvidia-smi-nvlink-s.txt", ["nvidia-smi", "nvlink", "-s"]),
]


@dataclass
class Item:
    name: str
    source: str
    status: str = "ok"  # ok | failed | skipped
    reason: str | None = None
    exit_code: int | None = None
    seconds: float = 0.0


@dataclass
class Collector:
    python: str = sys.executable
    python_source: str = "--python"  # how `python` was chosen (collect/interpreter.py)
    progress: Callable[[str], None] | None = None
    items: list[Item] = field(default_factory=list)
    files: dict[str, bytes] = field(default_factory=dict)

    def _step(self, label: str) -> None:
        if self.progress:
            self.progress(label)

    def command(self, name: str, argv: list[str], timeout: int = COMMAND_TIMEOUT) -> None:
        self._step(" ".join(argv))
        item = Item(name, " ".join(argv))
        start = time.monotonic()
        if shutil.which(argv[0]) is None and not os.path.isabs(argv[0]):
            item.status, item.reason = "skipped", f"{argv[0]} is not on PATH"
        else:
            try:
                proc = subprocess.run(argv, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
                item.exit_code = proc.returncode
                output = proc.stdout + (b"\n" + proc.stderr if proc.stderr else b"")
                if proc.returncode != 0:
                    first = (proc.stderr or proc.stdout).decode(errors="replace").strip().splitlines()
                    item.status, item.reason = "failed", (first[0] if first else f"exit code {proc.returncode}")[:300]
                if output.strip():
                    self.files[name] = output
            except subprocess.TimeoutExpired:
                item.status, item.reason = "failed", f"timed out after {timeout}s"
            except OSError as exc:
                item.status, item.reason = "failed", exc.strerror or str(exc)
        item.seconds = round(time.monotonic() - start, 3)
        self.items.append(item)

    def text(self, name: str, source: str, read: Callable[[], str]) -> None:
        self._step(source)
        item = Item(name, source)
        try:
            self.files[name] = read().encode()
        except OSError as exc:
            item.status, item.reason = "failed", exc.strerror or str(exc)
        self.items.append(item)

    def nvml(self) -> None:
        from diagnose.collect import nvml

        self._step("NVML")
        start = time.monotonic()
        data = nvml.snapshot()
        item = Item("nvml.json", "nvidia-ml-py", seconds=round(time.monotonic() - start, 3))
        if not data["gpus"]:
            item.status = "failed"
            item.reason = (data["errors"] or ["no GPU found"])[0]
        elif data["errors"]:
            item.reason = f"{len(data['errors'])} query(ies) failed; see errors in nvml.json"
        self.files["nvml.json"] = json.dumps(data, indent=2).encode()
        self.items.append(item)

    def run_all(self) -> None:
        self.nvml()
        for name, argv in NVIDIA_SMI:
            self.command(name, argv)
        self.command("dmesg.txt", ["dmesg"])
        if self.items[-1].status != "ok":
            self.command("journalctl-k.txt", ["journalctl", "-k", "--no-pager", "-n", "5000"])
        self.command("uname.txt", ["uname", "-a"])
        self.text("proc-driver-nvidia-version.txt", "/proc/driver/nvidia/version",
                  lambda: Path("/proc/driver/nvidia/version").read_text())
        self.text("nvidia-uvm-params.txt", "/sys/module/nvidia_uvm/parameters", _uvm_params)
        self.command("pip-list.json", [self.python, "-m", "pip", "list", "--format=json"])
        if self.items[-1].status != "ok" and shutil.which("uv"):
            self.command("pip-list.json", ["uv", "pip", "list", "--format=json", "--python", self.python])
        self.command("collect-env.txt", [self.python, "-m", "torch.utils.collect_env"], timeout=120)
        self.text("env.txt", "environment variables", _environment)

    def manifest(self) -> dict[str, Any]:
        return {
            "diagnose_collect": "manifest",
            "diagnose_version": __version__,
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "python": self.python,
            "python_source": self.python_source,
            "platform": platform.platform(),
            "items": [asdict(i) for i in self.items],
        }

    def write(self, path: Path) -> None:
        base = path.name.removesuffix(".tar.gz").removesuffix(".tgz")
        with tarfile.open(path, "w:gz") as tar:
            files = {"manifest.json": json.dumps(self.manifest(), indent=2).encode(), **self.files}
            for name, data in files.items():
                info = tarfile.TarInfo(f"{base}/{name}")
                info.size, info.mtime, info.mode = len(data), int(time.time()), 0o644
                tar.addfile(info, io.BytesIO(data))


def _uvm_params() -> str:
    root = Path("/sys/module/nvidia_uvm/parameters")
    if not root.is_dir():
        raise OSError(2, "nvidia_uvm is not loaded (no /sys/module/nvidia_uvm/parameters)")
    lines = []
    for p in sorted(root.iterdir()):
        try:
            lines.append(f"{p}:{p.read_text().strip()}")
        except OSError as exc:
            lines.append(f"{p}: <unreadable: {exc.strerror}>")
    return "\n".join(lines) + "\n"


def _environment() -> str:
    lines = []
    for key in sorted(os.environ):
        if key.startswith(ENV_PREFIXES) or key in ENV_PREFIXES:
            value = os.environ[key]
            if any(word in key for word in SECRET_WORDS):
                value = "<set, value not collected>"
            lines.append(f"{key}={value}")
    return "\n".join(lines) + "\n"
