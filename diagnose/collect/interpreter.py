"""Which Python serves the model: the environment whose packages a bundle should list.

`diagnose` is often installed on its own (pipx, a tools venv), so its own interpreter's packages
say nothing about the server's. Without `--python`, look where the server is, in this order:
a running vLLM / SGLang / TGI / torchrun process (its /proc/PID/exe), the entry points of those
tools on PATH (the interpreter in their `#!` line), a `python3` / `python` on PATH that has torch,
and only then this interpreter, recorded as such so the reader knows the list may be foreign.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from diagnose import lazy_re

# `python -m <module>` of a server, or `python <entry point>` of one; pip/uv installs of them are not servers
SERVER_MODULE = lazy_re.compile(r"^(?:vllm(?:\.entrypoints\S*)?|sglang\.(?:launch_server|srt\S*)|text_generation_server\S*|"
                           r"tensorrt_llm\S*|lmdeploy\S*|torch\.distributed\.run)$")
SERVER_SCRIPT = frozenset({"vllm", "torchrun", "text-generation-server", "lmdeploy", "sglang", "trtllm-serve"})
INSTALLERS = frozenset({"pip", "pip3", "uv", "install", "download", "conda", "mamba"})
ENTRY_POINTS = ("vllm", "torchrun", "text-generation-server", "lmdeploy", "accelerate")
MAX_PROCESSES = 5000


def find(proc: Path = Path("/proc"), path: str | None = None) -> tuple[str, str]:
    """(interpreter, how it was found); `how` is one of running-server, path:<tool>, path-python-with-torch,
    collector."""
    running = _running_server(proc)
    if running:
        return running
    for tool in ENTRY_POINTS:
        script = shutil.which(tool, path=path)
        interpreter = _shebang(Path(script)) if script else None
        if interpreter:
            return interpreter, f"path:{tool}"
    for name in ("python3", "python"):
        exe = shutil.which(name, path=path)
        if exe and os.path.realpath(exe) != os.path.realpath(sys.executable) and _has_torch(exe):
            return exe, "path-python-with-torch"
    return sys.executable, "collector"


def _running_server(proc: Path) -> tuple[str, str] | None:
    try:
        pids = [p for p in proc.iterdir() if p.name.isdigit()][:MAX_PROCESSES]
    except OSError:
        return None
    for pid in sorted(pids, key=lambda p: int(p.name)):
        try:
            argv = (pid / "cmdline").read_bytes().split(b"\0")
            exe = os.readlink(pid / "exe")
        except OSError:
            continue
        words = [a.decode(errors="replace") for a in argv if a]
        if not words or "python" not in Path(exe).name:
            continue
        if _is_server(words):
            return exe, f"running-server (pid {pid.name}: {' '.join(words)[:120]})"
    return None


def _is_server(argv: list[str]) -> bool:
    if any(Path(w).name in INSTALLERS for w in argv[1:4]):
        return False
    if "-m" in argv[1:3]:
        module = argv[argv.index("-m") + 1] if argv.index("-m") + 1 < len(argv) else ""
        return bool(SERVER_MODULE.match(module))
    return len(argv) > 1 and Path(argv[1]).name in SERVER_SCRIPT


def _shebang(script: Path) -> str | None:
    try:
        with script.open("rb") as fh:
            first = fh.readline(512)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode(errors="replace").split()
    if not words:
        return None
    if Path(words[0]).name == "env" and len(words) > 1:
        return shutil.which(words[1])
    return words[0] if "python" in Path(words[0]).name and os.path.exists(words[0]) else None


def _has_torch(python: str) -> bool:
    """Does this interpreter have torch? (find_spec only: nothing is imported)."""
    try:
        proc = subprocess.run(
            [python, "-c", "import importlib.util,sys; sys.exit(importlib.util.find_spec('torch') is None)"],
            capture_output=True, timeout=20, stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0
