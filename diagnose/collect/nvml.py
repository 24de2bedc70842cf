"""Facts from NVML (nvidia-ml-py): driver, CUDA driver version, every GPU, and every GPU pair.

Each query that fails is recorded with NVML's own words, never raised: a host without a GPU,
without the driver, or with a GPU that does not support a query still gives a snapshot.
"""

from __future__ import annotations

from typing import Any

TOPOLOGY = {0: "X", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}
P2P_STATUS = {0: "OK", 1: "CNS", 2: "GNS", 3: "GNS", 4: "TNS", 5: "NS", 6: "U"}


def _try(errors: list[str], what: str, fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except Exception as exc:  # NVMLError and its many subclasses; also missing symbols in old drivers
        errors.append(f"{what}: {exc}")
        return None


def _text(value: Any) -> Any:
    return value.decode() if isinstance(value, bytes) else value


def snapshot() -> dict[str, Any]:
    """A JSON-ready dict: {"diagnose_collect": "nvml", "driver_version", ..., "gpus", "pairs", "errors"}."""
    errors: list[str] = []
    out: dict[str, Any] = {"diagnose_collect": "nvml", "gpus": [], "pairs": [], "errors": errors}
    try:
        import pynvml
    except ImportError as exc:
        errors.append(f"nvidia-ml-py is not importable: {exc}")
        return out
    try:
        pynvml.nvmlInit()
    except Exception as exc:
        errors.append(f"nvmlInit: {exc}")
        return out
    try:
        out["driver_version"] = _text(_try(errors, "driver version", pynvml.nvmlSystemGetDriverVersion))
        cuda = _try(errors, "CUDA driver version", pynvml.nvmlSystemGetCudaDriverVersion_v2)
        out["cuda_driver_version"] = f"{cuda // 1000}.{cuda % 1000 // 10}" if cuda else None
        count = _try(errors, "device count", pynvml.nvmlDeviceGetCount) or 0
        handles = []
        for i in range(count):
            handle = _try(errors, f"GPU {i} handle", pynvml.nvmlDeviceGetHandleByIndex, i)
            handles.append(handle)
            if handle is not None:
                out["gpus"].append(_gpu(pynvml, handle, i, errors))
        for i, a in enumerate(handles):
            for j, b in enumerate(handles):
                if j <= i or a is None or b is None:
                    continue
                out["pairs"].append(_pair(pynvml, a, b, i, j, errors))
    finally:
        _try(errors, "nvmlShutdown", pynvml.nvmlShutdown)
    return out


def _gpu(nv: Any, h: Any, i: int, errors: list[str]) -> dict[str, Any]:
    gpu: dict[str, Any] = {"index": i}
    gpu["name"] = _text(_try(errors, f"GPU {i} name", nv.nvmlDeviceGetName, h))
    gpu["uuid"] = _text(_try(errors, f"GPU {i} uuid", nv.nvmlDeviceGetUUID, h))
    pci = _try(errors, f"GPU {i} PCI info", nv.nvmlDeviceGetPciInfo, h)
    gpu["bus_id"] = _text(pci.busId) if pci is not None else None
    cc = _try(errors, f"GPU {i} compute capability", nv.nvmlDeviceGetCudaComputeCapability, h)
    gpu["compute_capability"] = f"{cc[0]}.{cc[1]}" if cc else None
    mem = _try(errors, f"GPU {i} memory", nv.nvmlDeviceGetMemoryInfo, h)
    gpu["memory_total_mib"] = mem.total // (1 << 20) if mem is not None else None
    ecc = _try(errors, f"GPU {i} ECC mode", nv.nvmlDeviceGetEccMode, h)
    gpu["ecc_enabled"] = bool(ecc[0]) if ecc else None
    if gpu["ecc_enabled"]:
        gpu["ecc_uncorrected_volatile"] = _try(
            errors, f"GPU {i} ECC errors", nv.nvmlDeviceGetTotalEccErrors, h,
            nv.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, nv.NVML_VOLATILE_ECC,
        )
    rows = _try(errors, f"GPU {i} remapped rows", nv.nvmlDeviceGetRemappedRows, h)
    if rows:
        gpu["remapped_rows"] = {"correctable": rows[0], "uncorrectable": rows[1], "pending": bool(rows[2]),
                                "failure": bool(rows[3])}
    getter = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None) or nv.nvmlDeviceGetCurrentClocksThrottleReasons
    reasons = _try(errors, f"GPU {i} clock event reasons", getter, h)
    gpu["clock_event_reasons"] = _reasons(nv, reasons) if reasons is not None else None
    return gpu


def _reasons(nv: Any, mask: int) -> list[str]:
    names = []
    for attr in dir(nv):
        if attr.startswith("nvmlClocksEventReason") or attr.startswith("nvmlClocksThrottleReason"):
            value = getattr(nv, attr)
            if isinstance(value, int) and value and value & (value - 1) == 0 and mask & value:
                names.append(attr.replace("nvmlClocksEventReason", "").replace("nvmlClocksThrottleReason", ""))
    return sorted(set(names))


def _pair(nv: Any, a: Any, b: Any, i: int, j: int, errors: list[str]) -> dict[str, Any]:
    pair: dict[str, Any] = {"a": i, "b": j}
    level = _try(errors, f"GPU {i}-{j} topology", nv.nvmlDeviceGetTopologyCommonAncestor, a, b)
    pair["topology"] = TOPOLOGY.get(level, str(level)) if level is not None else None
    # nvmlGpuP2PCapsIndex_t values. Not the module's constants: nvidia-ml-py defines
    # `NVML_P2P_CAPS_INDEX_READ = 0,` (a tuple), which ctypes refuses; seen on a real 2x H200 host.
    for name, index in (("read", 0), ("write", 1), ("nvlink", 2)):
        status = _try(errors, f"GPU {i}-{j} P2P {name}", nv.nvmlDeviceGetP2PStatus, a, b, index)
        pair[f"p2p_{name}"] = P2P_STATUS.get(status, str(status)) if status is not None else None
    return pair
