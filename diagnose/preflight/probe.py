"""Ask another interpreter (`--python`, the server's venv) what it has installed, without importing it.

The probe is a small stdlib-only script run by that interpreter: `importlib.metadata` lists the
distributions, their versions and declared requirements (`Requires-Dist`); torch's CUDA runtime is
read from the text of `torch/version.py` and the model types transformers knows from the text of
its auto-config modules, so no package of the environment is ever imported.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from typing import Any

from diagnose.errors import DiagnoseError

TIMEOUT = 60

SCRIPT = r"""
import json, os, platform, re, shutil, sys
try:
    from importlib import metadata
except ImportError:
    import importlib_metadata as metadata

def canon(name):
    return re.sub(r"[-_.]+", "-", name).lower()

def read(dist, rel):
    try:
        path = dist.locate_file(rel)
        with open(str(path), encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except (OSError, ValueError):
        return None

seen = {}
for dist in metadata.distributions():
    name = dist.metadata["Name"]
    if not name or canon(name) in seen:
        continue
    seen[canon(name)] = {"name": name, "version": dist.version, "requires": list(dist.requires or [])}
    if canon(name) == "torch":
        text = read(dist, "torch/version.py") or ""
        m = re.search(r"^cuda\s*(?::[^=\n]*)?=\s*['\"]([\d.]+)['\"]", text, re.M)
        seen["torch"]["cuda"] = m.group(1) if m else None
    if canon(name) == "transformers":
        keys = set()
        for rel in ("transformers/models/auto/configuration_auto.py", "transformers/models/auto/auto_mappings.py"):
            keys.update(re.findall(r"\(\s*['\"]([\w-]+)['\"]\s*,\s*['\"]\w+Config['\"]\s*\)", read(dist, rel) or ""))
        seen["transformers"]["model_types"] = sorted(keys)

bin_dir = os.path.dirname(os.path.abspath(sys.executable))
env = {
    "implementation_name": sys.implementation.name,
    "implementation_version": platform.python_version(),
    "os_name": os.name,
    "platform_machine": platform.machine(),
    "platform_release": platform.release(),
    "platform_system": platform.system(),
    "platform_version": platform.version(),
    "python_full_version": platform.python_version(),
    "platform_python_implementation": platform.python_implementation(),
    "python_version": ".".join(platform.python_version_tuple()[:2]),
    "sys_platform": sys.platform,
}
print(json.dumps({
    "executable": sys.executable,
    "python": platform.python_version(),
    "bin_dir": bin_dir,
    "ninja_on_path": shutil.which("ninja"),
    "ninja_in_env": shutil.which("ninja", path=bin_dir),
    "markers": env,
    "distributions": list(seen.values()),
}))
"""


@dataclass
class Distribution:
    name: str  # canonical (PEP 503)
    version: str
    requires: list[str] = field(default_factory=list)


@dataclass
class ProbeResult:
    """What the interpreter at `python` has: distributions by canonical name, and a few file facts."""

    python: str
    executable: str
    version: str
    bin_dir: str
    distributions: dict[str, Distribution]
    markers: dict[str, str]
    torch_cuda: str | None = None
    transformers_model_types: list[str] | None = None
    ninja_on_path: str | None = None
    ninja_in_env: str | None = None

    @property
    def packages(self) -> dict[str, str]:
        return {name: d.version for name, d in self.distributions.items()}


def probe(python: str, timeout: float = TIMEOUT) -> ProbeResult:
    """Run the probe script with `python`; DiagnoseError (exit 2) when it cannot run."""
    exe = resolve(python)
    try:
        proc = subprocess.run(
            [exe, "-c", SCRIPT], capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL, cwd="/"
        )
    except FileNotFoundError:
        raise DiagnoseError(f"--python {python}: no such interpreter") from None
    except PermissionError:
        raise DiagnoseError(f"--python {python}: not executable") from None
    except subprocess.TimeoutExpired:
        raise DiagnoseError(f"--python {python}: listing its packages took over {timeout:.0f}s") from None
    except OSError as exc:
        raise DiagnoseError(f"--python {python}: {exc.strerror or exc}") from None
    if proc.returncode != 0:
        last = (proc.stderr.decode(errors="replace").strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
        raise DiagnoseError(f"--python {python}: could not list its packages: {last}")
    try:
        data = json.loads(proc.stdout.decode(errors="replace").strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise DiagnoseError(f"--python {python}: the package listing was not JSON") from None
    return parse(python, data)


def resolve(python: str) -> str:
    """An absolute path for `python` (a path, or a name looked up on PATH) so the probe runs from /."""
    import os
    import shutil

    if os.sep in python:
        return os.path.abspath(python)
    return shutil.which(python) or python


def parse(python: str, data: dict[str, Any]) -> ProbeResult:
    from diagnose.artifacts.pip import canonical

    dists: dict[str, Distribution] = {}
    torch_cuda = None
    model_types = None
    for raw in data.get("distributions", []):
        name = canonical(str(raw["name"]))
        dists[name] = Distribution(name, str(raw["version"]), [str(r) for r in raw.get("requires") or []])
        if name == "torch":
            torch_cuda = raw.get("cuda")
        if name == "transformers" and raw.get("model_types"):
            model_types = list(raw["model_types"])
    return ProbeResult(
        python=python,
        executable=str(data.get("executable") or python),
        version=str(data.get("python") or ""),
        bin_dir=str(data.get("bin_dir") or ""),
        distributions=dists,
        markers={str(k): str(v) for k, v in (data.get("markers") or {}).items()},
        torch_cuda=torch_cuda,
        transformers_model_types=model_types,
        ninja_on_path=data.get("ninja_on_path"),
        ninja_in_env=data.get("ninja_in_env"),
    )
