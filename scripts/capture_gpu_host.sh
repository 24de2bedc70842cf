#!/usr/bin/env bash
# Capture real artifacts on a GPU host: healthy host snapshots (every nvidia-smi form, kernel
# version, driver version, packages, collect_env) and real failures reproduced on purpose
# (CUDA OOM, device-side assert, ninja missing for a JIT build, NCCL watchdog timeout, no GPU
# visible, unknown model type, port in use, Triton shared-memory limit).
# Usage: scripts/capture_gpu_host.sh OUTDIR   (each command bounded by `timeout`)
set -u
out=${1:?usage: capture_gpu_host.sh OUTDIR}
mkdir -p "$out"
PY=${PYTHON:-python3}
cap() { local name=$1; shift; timeout 120 "$@" >"$out/$name" 2>&1; echo "exit=$?" >>"$out/$name.rc"; }

cap nvidia-smi.txt nvidia-smi
cap nvidia-smi-q.txt nvidia-smi -q
cap nvidia-smi-q-x.xml nvidia-smi -q -x
cap nvidia-smi-csv.txt nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,compute_cap,memory.total,uuid --format=csv
cap nvidia-smi-csv-noheader.txt nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,compute_cap,memory.total --format=csv,noheader
cap nvidia-smi-csv-nounits.txt nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total --format=csv,noheader,nounits
cap nvidia-smi-topo-m.txt nvidia-smi topo -m
cap nvidia-smi-topo-p2p-r.txt nvidia-smi topo -p2p r
cap nvidia-smi-topo-p2p-w.txt nvidia-smi topo -p2p w
cap nvidia-smi-topo-p2p-n.txt nvidia-smi topo -p2p n
cap nvidia-smi-nvlink-s.txt nvidia-smi nvlink -s
cap proc-driver-nvidia-version.txt cat /proc/driver/nvidia/version
cap uname.txt uname -a
cap dmesg.txt dmesg
cap journalctl-k.txt journalctl -k --no-pager -n 500
cap nvidia-uvm-params.txt grep -H . /sys/module/nvidia_uvm/parameters/
cap pip-freeze.txt $PY -m pip freeze
cap pip-list.json $PY -m pip list --format=json
cap collect-env.txt $PY -m torch.utils.collect_env

# --- real failures -------------------------------------------------------------------------
cap fail-cuda-oom.log $PY -c "import torch; x = torch.empty(400 * 1024**3, dtype=torch.uint8, device='cuda')"
cap fail-device-assert.log env CUDA_LAUNCH_BLOCKING=1 $PY -c "
import torch
emb = torch.nn.Embedding(10, 4).cuda()
idx = torch.tensor([3, 12], device='cuda')
print(emb(idx).sum().item())"
cap fail-no-gpu-visible.log env CUDA_VISIBLE_DEVICES= $PY -c "import torch; torch.zeros(1).cuda()"
ninja_dir=$(dirname "$(command -v ninja 2>/dev/null || echo /nonexistent/ninja)")
cap fail-ninja-missing.log env PATH="$(echo "$PATH" | tr ':' '\n' | grep -vx "$ninja_dir" | grep -v '\.venv/bin' | paste -sd:)" \
  $PY -c "
import os, sys, torch.utils.cpp_extension as ce
sys.path = [p for p in sys.path if 'ninja' not in p]
ce.load_inline(name='probe_ext', cpp_sources='int f() { return 1; }', functions=['f'], verbose=True)"
mkdir -p /tmp/cfg && printf '{"model_type": "glm_moe_dsa_v2", "architectures": ["GlmMoeDsaV2ForCausalLM"]}\n' >/tmp/cfg/config.json
cap fail-unknown-model-type.log $PY -c "from transformers import AutoConfig; AutoConfig.from_pretrained('/tmp/cfg')"
cap fail-triton-smem.log $PY -c "
import torch, triton, triton.language as tl
@triton.jit
def k(x, y, B: tl.constexpr):
    o = tl.arange(0, B)
    a = tl.load(x + o[:, None] * B + o[None, :])
    tl.store(y + o[:, None] * B + o[None, :], tl.dot(a, a))
x = torch.randn(512, 512, device='cuda', dtype=torch.float16); y = torch.empty_like(x)
k[(1,)](x, y, B=512)"
$PY -m http.server 18765 --bind 127.0.0.1 >/dev/null 2>&1 & srv=$!; sleep 2
cap fail-port-in-use.log $PY -m http.server 18765 --bind 127.0.0.1
kill $srv 2>/dev/null
cat >/tmp/nccl_hang.py <<'PY'
import datetime, os, torch, torch.distributed as dist
dist.init_process_group("nccl", timeout=datetime.timedelta(seconds=20))
rank = dist.get_rank(); torch.cuda.set_device(rank % torch.cuda.device_count())
t = torch.ones(1024, device="cuda")
dist.all_reduce(t); torch.cuda.synchronize()
if rank == 0:
    dist.all_reduce(t); torch.cuda.synchronize()   # rank 1 never joins this one
else:
    import time; time.sleep(90)
print("rank", rank, "done")
PY
if [ "$(nvidia-smi -L 2>/dev/null | wc -l)" -ge 2 ]; then
  cap fail-nccl-timeout.log env NCCL_DEBUG=INFO TORCH_NCCL_ASYNC_ERROR_HANDLING=1 timeout 110 torchrun --nproc_per_node=2 /tmp/nccl_hang.py
  cat >/tmp/nccl_ok.py <<'PY'
import torch, torch.distributed as dist
dist.init_process_group("nccl"); r = dist.get_rank(); torch.cuda.set_device(r)
t = torch.ones(1 << 20, device="cuda") * (r + 1); dist.all_reduce(t); torch.cuda.synchronize()
print("rank", r, "sum", t[0].item()); dist.destroy_process_group()
PY
  cap healthy-nccl-allreduce.log env NCCL_DEBUG=INFO torchrun --nproc_per_node=2 /tmp/nccl_ok.py
fi
ls -la "$out"
