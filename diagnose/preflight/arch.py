"""Which CUDA toolkit can build code for a GPU architecture: a torch built with an older CUDA has
no kernels for a newer GPU ("no kernel image is available for execution on the device").

The first CUDA release that targets each architecture, from NVIDIA's CUDA toolkit release notes
(https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/): sm_80 11.0, sm_86 11.1, sm_87 11.4,
sm_89 and sm_90 11.8, sm_100 / sm_101 / sm_120 12.8, sm_103 / sm_121 12.9, sm_110 13.0 (Thor,
called sm_101 before). CUDA 13.0 dropped Maxwell, Pascal and Volta (sm_50 - sm_72), so a torch
built with CUDA 13 has no kernels for them. Seen in public: torch built for CUDA 12.6 and older
lists "sm_50 ... sm_90" and an RTX 5090 (sm_120) gets "no kernel image" until a cu128 build is
installed (https://github.com/Hellod035/LeggedLab/issues/26).

A necessary condition only: a torch wheel may leave out an architecture its CUDA supports, so a
GPU that passes here can still lack kernels (the check under-reports, never over-reports).

>>> missing_kernels("12.0", "12.6")
'compute capability 12.0 needs a torch built with CUDA >= 12.8; this torch was built with CUDA 12.6'
>>> missing_kernels("9.0", "12.8") is None, missing_kernels("7.0", "13.0") is not None
(True, True)
"""

from __future__ import annotations

from diagnose.kb.compat import release

FIRST_CUDA = {
    "12.1": "12.9", "12.0": "12.8", "11.0": "13.0", "10.3": "12.9", "10.1": "12.8", "10.0": "12.8",
    "9.0": "11.8", "8.9": "11.8", "8.7": "11.4", "8.6": "11.1", "8.0": "11.0", "7.5": "10.0",
}
LAST_CUDA_MAJOR = {"7.2": 12, "7.0": 12, "6.2": 12, "6.1": 12, "6.0": 12, "5.3": 12, "5.2": 12, "5.0": 12}


def missing_kernels(compute_capability: str, torch_cuda: str) -> str | None:
    """Why a torch built with CUDA `torch_cuda` has no kernels for `compute_capability`, or None."""
    cuda = release(torch_cuda)
    first = FIRST_CUDA.get(compute_capability)
    if first and cuda and cuda[:2] < release(first)[:2]:
        return (f"compute capability {compute_capability} needs a torch built with CUDA >= {first}; "
                f"this torch was built with CUDA {torch_cuda}")
    last = LAST_CUDA_MAJOR.get(compute_capability)
    if last and cuda and cuda[0] > last:
        return (f"CUDA {cuda[0]} dropped compute capability {compute_capability}; "
                f"this torch was built with CUDA {torch_cuda}")
    return None
