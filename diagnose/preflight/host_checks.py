"""Predictions from the host against the environment and the launch: a CUDA runtime newer than the
driver, a GPU architecture torch has no kernels for, the SM120 shared-memory bug in SGLang, a tensor
parallel size larger than the GPUs, and a multi-GPU launch without P2P between the GPUs.
"""

from __future__ import annotations

from typing import Any

from diagnose.kb import compat
from diagnose.preflight.environment import Environment
from diagnose.preflight.predict import Predictions

# CUDA minor-version compatibility: any 13.x runs on a driver >= 580, 12.x on >= 525, 11.x on >= 450
# (the floors rules/compat/cuda-driver.yaml's notes quote from NVIDIA's CUDA compatibility guide)
FAMILY_FLOOR = {13: "580", 12: "525.60.13", 11: "450.80.02"}


def check(env: Environment, kb: Any, out: Predictions) -> None:
    driver_for_cuda(env, kb, out)
    kernels_for_arch(env, out)
    sm120_sglang(env, kb, out)
    tp_fits(env, out)
    p2p_for_multi_gpu(env, out)


def driver_for_cuda(env: Environment, kb: Any, out: Predictions) -> None:
    """Fires below the CUDA family's floor (where minor-version compatibility cannot help), not merely
    below the driver the toolkit shipped with."""
    facts = env.facts
    cuda, driver = facts.torch_cuda, facts.driver_version
    if not cuda or not driver:
        return
    major = compat.release(cuda)[0]
    floor = FAMILY_FLOOR.get(major)
    state, detail, values = compat.cuda_driver(kb.compat.get("cuda-driver"), facts)
    driver_cuda = compat.release(facts.cuda_driver_version or "")
    below_floor = floor is not None and compat.release(driver) < compat.release(floor)
    if below_floor or (driver_cuda and driver_cuda[0] < major):
        text = (f"torch is built with CUDA {cuda}, which needs driver >= {floor} for CUDA {major}.x; driver "
                f"{driver} is installed" + (f" (it supports CUDA {facts.cuda_driver_version})"
                                             if facts.cuda_driver_version else ""))
        out.add("driver-too-old", 0.9, text, env.host, "compat:cuda-driver",
                values={f"compat.cuda-driver.{k}": v for k, v in values.items()})
    elif state:
        out.skip("driver-too-old", f"{detail}: below the driver CUDA {cuda} shipped with, but within CUDA "
                 f"{major}.x minor-version compatibility, so torch usually runs; not predicted")


def kernels_for_arch(env: Environment, out: Predictions) -> None:
    from diagnose.preflight.arch import missing_kernels

    cuda = env.facts.torch_cuda
    if not cuda:
        return
    for cc in sorted(set(env.facts.compute_capabilities())):
        why = missing_kernels(cc, cuda)
        if why:
            names = sorted({g.name for g in env.facts.gpus if g.compute_capability == cc and g.name})
            text = f"{why} ({', '.join(names) or 'the GPU'})"
            out.add("no-kernel-image", 0.85, text, env.host, "arch:torch-cuda")


def sm120_sglang(env: Environment, kb: Any, out: Predictions) -> None:
    rule = kb.rules.get("sm120-shared-memory-nan")
    sglang = env.facts.packages.get("sglang")
    if rule is None or not sglang or (env.launch is not None and env.launch.framework not in (None, "sglang")):
        return
    from diagnose.engine.conditions import satisfies

    fixed = rule.fixed_in.get("sglang")
    sm12 = sorted({g.name or "GPU" for g in env.facts.gpus if (g.compute_capability or "").startswith("12.")})
    if not sm12 or not fixed or satisfies(sglang, f">={fixed}") is not False:
        return
    source, line = env.package_source("sglang")
    text = (f"SGLang {sglang} predates the SM120 fix (first in {fixed}) and the GPUs are compute capability 12.x "
            f"({', '.join(sm12)}, about 99 KB of shared memory per block)")
    out.add("sm120-shared-memory-nan", 0.6, text, source, "fixed-in:sglang", line)


def tp_fits(env: Environment, out: Predictions) -> None:
    launch = env.launch
    if launch is None or not env.facts.gpus:
        return
    seen = max(len(env.facts.gpus), env.attached_gpus)
    visible = launch.visible_gpus()
    usable = seen if visible is None else min(seen, visible)
    if launch.gpus_needed <= usable:
        return
    size = f"--tp {launch.tp}" + (f" x --pp {launch.pp}" if launch.pp > 1 else "")
    nodes = launch.value("--nnodes")
    if (nodes and nodes != "1") or launch.value("--distributed-executor-backend") == "ray":
        out.skip("tp-exceeds-gpu-count", f"the launch needs {launch.gpus_needed} GPUs ({size}) and spans nodes "
                 f"(--nnodes / Ray); only this host's {usable} GPU(s) are known, so it is not predicted")
        return
    limit = f"{seen} GPU(s) on {env.host}" + (
        f", {visible} left visible by CUDA_VISIBLE_DEVICES={launch.env['CUDA_VISIBLE_DEVICES']}"
        if visible is not None else "")
    out.add("tp-exceeds-gpu-count", 0.95, f"the launch needs {launch.gpus_needed} GPUs ({size}); {limit}",
            "launch command", "launch:tp")


def p2p_for_multi_gpu(env: Environment, out: Predictions) -> None:
    launch, facts = env.launch, env.facts
    if launch is None or launch.gpus_needed < 2:
        return
    bad = sorted({f"{a}-{b}: {s}" for a, row in facts.p2p.items() for b, s in row.items()
                  if s not in ("OK", "X") and a < b})
    links = {link for row in facts.topology.values() for link in row.values() if link != "X"}
    if bad:
        text = (f"the launch spreads over {launch.gpus_needed} GPUs and P2P is not available between "
                f"{len(bad)} GPU pair(s) ({', '.join(bad[:4])}{' ...' if len(bad) > 4 else ''})")
        out.add("vfio-p2p-disabled", 0.7, text, env.host, "p2p")
    elif links == {"PHB"} and not facts.p2p:
        text = (f"the launch spreads over {launch.gpus_needed} GPUs, every GPU pair is joined only through a PCIe "
                "host bridge (PHB, as in a VFIO guest) and P2P status is unknown (`nvidia-smi topo -p2p r`)")
        out.add("vfio-p2p-disabled", 0.35, text, env.host, "topology")
