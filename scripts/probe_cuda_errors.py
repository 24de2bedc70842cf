"""Print every CUDA error this host's libraries know, as JSON: the source of the `message` column of
rules/catalog/cuda-errors.yaml.

    python scripts/probe_cuda_errors.py > cuda_errors.json      # or OUT=dir: writes dir/cuda_errors.json

For each number 0-1099 it asks libcuda (cuGetErrorName / cuGetErrorString, the driver API) and every
libcudart it finds (cudaGetErrorName / cudaGetErrorString, the runtime API). Read-only; needs no GPU
for the runtime, and the NVIDIA driver for libcuda.
"""

from __future__ import annotations

import ctypes
import glob
import json
import os
import sys

CODES = range(0, 1100)
CUDART = ["/usr/local/cuda*/lib64/libcudart.so.[0-9]*", "/usr/lib/x86_64-linux-gnu/libcudart.so.[0-9]*",
          "/usr/lib/python3*/*-packages/nvidia/cuda_runtime/lib/libcudart.so.[0-9]*",
          "/usr/local/lib/python3*/*-packages/nvidia/cuda_runtime/lib/libcudart.so.[0-9]*"]


def driver_errors() -> dict[str, object]:
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        return {"error": str(exc)}
    version = ctypes.c_int()
    cuda.cuDriverGetVersion(ctypes.byref(version))
    codes = {}
    for code in CODES:
        name, message = ctypes.c_char_p(), ctypes.c_char_p()
        if cuda.cuGetErrorName(code, ctypes.byref(name)) == 0:
            cuda.cuGetErrorString(code, ctypes.byref(message))
            codes[code] = [(name.value or b"").decode(), (message.value or b"").decode()]
    return {"library": "libcuda.so.1", "cuda_version": version.value, "codes": codes}


def runtime_errors(path: str) -> dict[str, object]:
    runtime = ctypes.CDLL(path)
    runtime.cudaGetErrorName.restype = ctypes.c_char_p
    runtime.cudaGetErrorString.restype = ctypes.c_char_p
    version = ctypes.c_int()
    runtime.cudaRuntimeGetVersion(ctypes.byref(version))
    codes = {}
    for code in CODES:
        name = runtime.cudaGetErrorName(code).decode()
        if not name.startswith("unrecognized"):
            codes[code] = [name, runtime.cudaGetErrorString(code).decode()]
    return {"library": path, "cuda_version": version.value, "codes": codes}


def main() -> None:
    paths = sorted({os.path.realpath(p) for pattern in CUDART for p in glob.glob(pattern)})
    result = {"driver": driver_errors(), "runtime": [runtime_errors(p) for p in paths]}
    text = json.dumps(result, indent=1)
    out = os.environ.get("OUT")
    if out:
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "cuda_errors.json"), "w") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text + "\n")


if __name__ == "__main__":
    main()
