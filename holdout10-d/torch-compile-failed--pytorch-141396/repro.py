import torch

def test():
    return (torch.zeros(512, 512, device="cuda", dtype=torch.float8_e4m3fn), torch.ones(512, 512, device="cuda", dtype=torch.float8_e4m3fn))

def test_cast():
    return (torch.zeros(512, 512, device="cuda").to(dtype=torch.float8_e4m3fn), torch.ones(512, 512, device="cuda").to(dtype=torch.float8_e4m3fn))

@torch.compile(backend="inductor")
def test_compile():
    return (torch.zeros(512, 512, device="cuda", dtype=torch.float8_e4m3fn), torch.ones(512, 512, device="cuda", dtype=torch.float8_e4m3fn))

@torch.compile(backend="inductor")
def test_compile_cast():
    return (torch.zeros(512, 512, device="cuda").to(dtype=torch.float8_e4m3fn), torch.ones(512, 512, device="cuda").to(dtype=torch.float8_e4m3fn))

test() #works
test_cast() #works
test_compile() #fails
test_compile_cast() #fails
