import torch
import deep_gemm

sf = torch.ones((4, 128, 8), device="cuda", dtype=torch.float32)
deep_gemm.transform_sf_into_required_layout(
    sf,
    128,
    256,
    (1, 1, 32),
    num_groups=4,
    is_sfa=False,
)
