#!/usr/bin/env bash
# Second capture: `diagnose collect` on the GPU host, plus two reproductions whose first try in
# capture_gpu_host.sh was wrong (ninja hidden from PATH; a Triton kernel needing more shared
# memory than the GPU has per block).  Usage: scripts/capture_gpu_host_2.sh OUTDIR
set -u
out=${1:?usage: capture_gpu_host_2.sh OUTDIR}
mkdir -p "$out"
PY=$(command -v python3)
PYTHONPATH=$PWD timeout 300 "$PY" -m diagnose collect -o "$out/collect-bundle.tar.gz" >"$out/collect.stderr" 2>&1
echo "exit=$?" >>"$out/collect.stderr"
ninja_dir=$(dirname "$(command -v ninja)")
nopath=$(echo "$PATH" | tr ':' '\n' | grep -vx "$ninja_dir" | paste -sd:)
PATH="$nopath" timeout 120 "$PY" -c "
import torch.utils.cpp_extension as ce
ce.load_inline(name='probe_ext', cpp_sources='int f() { return 1; }', functions=['f'], verbose=True)" >"$out/fail-ninja-missing.log" 2>&1
cat >/tmp/smem.py <<'PY'
import torch, triton, triton.language as tl

@triton.jit
def k(x, y, B: tl.constexpr):
    o = tl.arange(0, B)
    a = tl.load(x + o[:, None] * B + o[None, :])
    tl.store(y + o[:, None] * B + o[None, :], tl.dot(a, a))

x = torch.randn(512, 512, device="cuda", dtype=torch.float16)
y = torch.empty_like(x)
k[(1,)](x, y, B=512)
PY
timeout 300 "$PY" /tmp/smem.py >"$out/fail-triton-smem.log" 2>&1
ls -la "$out"
