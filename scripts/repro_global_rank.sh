#!/usr/bin/env bash
# Reproduce global-rank-as-device-index on ONE GPU host: two torchrun "nodes" of one process each (node_rank 0 and 1)
# rendezvous on localhost, as a two-node job does. Each rank selects its GPU first with the global RANK (the bug:
# rank 1 asks for cuda:1 on a node with one GPU), then, in a second run, with LOCAL_RANK (the fix). The process group
# is gloo so that both ranks may share the one GPU. Output: $OUT/global-rank.log and $OUT/local-rank.log.
# usage: OUT=/some/dir scripts/repro_global_rank.sh
# Run on the lent H100 on 2026-12-07 (torch 2.11.0+cu130): fixtures/global-rank-as-device-index--repro-torchrun-2-nodes.
set -u
out=${OUT:-/tmp/repro-global-rank}; mkdir -p "$out"
prog=$(mktemp --suffix=.py)
cat > "$prog" <<'PY'
import datetime, os, sys
import torch
import torch.distributed as dist
rank, local_rank = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
index = rank if sys.argv[1] == "global" else local_rank
print(f"RANK={rank} LOCAL_RANK={local_rank} GROUP_RANK={os.environ.get('GROUP_RANK')} "
      f"device_count={torch.cuda.device_count()} set_device({index})", flush=True)
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
torch.cuda.set_device(index)
x = torch.ones(4, device="cuda") * (rank + 1)
cpu = x.cpu()
dist.all_reduce(cpu)
print(f"RANK={rank} current_device={torch.cuda.current_device()} all_reduce={cpu.tolist()}", flush=True)
dist.destroy_process_group()
PY
{ nvidia-smi -L; python3 -c "import torch; print('torch', torch.__version__)"; uname -r; } > "$out/env.txt" 2>&1
for mode in global local; do
  port=$((29600 + RANDOM % 300))
  for nr in 0 1; do
    cmd="torchrun --nnodes=2 --nproc_per_node=1 --node_rank=$nr --master_addr=127.0.0.1 --master_port=$port $prog $mode"
    echo "+ $cmd"  # the launch each "node" ran, as a job script's `set -x` shows it
    timeout 150 $cmd &
  done > "$out/$mode-rank.log" 2>&1
  wait
done
rm -f "$prog"
