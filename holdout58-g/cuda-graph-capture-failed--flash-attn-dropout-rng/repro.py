import torch
from flash_attn.flash_attn_interface import flash_attn_unpadded_func

seq_len, batch_size, nheads, embed = 2048, 2, 12, 64
dtype = torch.float16
pdrop = 0.1

q, k, v = [torch.randn(seq_len*batch_size, nheads, embed, dtype=dtype, device="cuda") for _ in range(3)]
cu_seqlens = torch.arange(
    0,
    (batch_size + 1) * seq_len,
    step=seq_len,
    dtype=torch.int32,
    device=q.device)

output = None

def run_flash_attn():
    output = flash_attn_unpadded_func(q, k, v, cu_seqlens, cu_seqlens, seq_len, seq_len, pdrop)

# Pre graph capture warmup in a separate stream.
s = torch.cuda.Stream()
with torch.cuda.stream(s):
    for _ in range(3):
        run_flash_attn()
torch.cuda.current_stream().wait_stream(s)

# Capture.
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    run_flash_attn()

# Run graph.
g.replay()
