from vllm.v1.utils import get_engine_client_zmq_addr

def probe_once(n_addrs: int) -> bool:
    addrs = [
        get_engine_client_zmq_addr(local_only=False, host="127.0.0.1")
        for _ in range(n_addrs)
    ]
    return len(set(addrs)) < len(addrs)

for n in (8, 16, 32):
    trials = 1000
    dup = sum(probe_once(n) for _ in range(trials))
    print(f"n={n:3d} -> dup trials: {dup}/{trials} ({100*dup/trials:.1f}%)")
