"""How each of the five mixes lays the fixtures' lines out: the shape of the log a person would have."""

from __future__ import annotations

import re

from realistic_lines import FIXTURES, fixture_lines
from realistic_mixes import Mix, Sources, Writer, as_dmesg, error_access

ASSERT = re.compile(r"Assertion `.*` failed")
GRID = re.compile(r"(block|thread): \[\d+,\d+,\d+\]")
NO_REQUEST_LINES = ("the fixtures hold no request-received, logged-prompt or aborted-request lines of vLLM / "
                    "SGLang: the serving part is their access and batch lines")


def serve(w: Writer, src: Sources, http_errors: float = 0.0) -> None:
    """A server up and answering: access and batch lines, now and then a run of INFO lines or a
    new communicator's NCCL INFO run, until the log is near its size."""
    w.put(w.rng.choice(src.startups))
    while not w.near_end:
        roll = w.rng.random()
        if roll < http_errors:
            w.put([error_access(w, src)])
        elif roll < http_errors + 0.002:
            w.chunk(src.nccl, most=150)
        elif roll < http_errors + 0.004:
            w.chunk(src.server_info, most=40)
        else:
            w.put([w.rng.choice(src.requests)])


def busy_server(w: Writer, src: Sources, mix: Mix) -> None:
    serve(w, src)
    w.put(mix.failure_lines(), w.exact)
    while not w.full:
        w.put([w.rng.choice(src.requests)])


def http_errors(w: Writer, src: Sources, mix: Mix) -> None:
    serve(w, src, http_errors=0.10)
    w.put(mix.failure_lines(), w.exact)
    while not w.full:
        w.put([error_access(w, src)] if w.rng.random() < 0.10 else [w.rng.choice(src.requests)])


def interleaved(w: Writer, src: Sources, mix: Mix) -> None:
    pool = src.interleaved(mix.failure)
    while not w.near_end:
        w.chunk(pool)
    w.put(mix.failure_lines(), w.exact)
    while not w.full:
        w.chunk(pool)


def kernel_heavy(w: Writer, src: Sources, mix: Mix) -> None:
    while not w.near_end:
        w.chunk(src.kernel, most=120)
    w.put(as_dmesg(mix.failure_lines()), w.exact)
    while not w.full:
        w.chunk(src.kernel, most=120)


def on_grid(line: str, block: int, thread: int) -> str:
    """An assert line as the kernel's thread `thread` of block `block` prints it."""
    return GRID.sub(lambda m: f"{m.group(1)}: [{block if m.group(1) == 'block' else thread},0,0]", line)


def crash_loop(w: Writer, src: Sources, mix: Mix) -> None:
    """Start, serve a little, a device-side assert burst and its traceback, shut down; again."""
    failures = [mix.failure_lines(), fixture_lines(FIXTURES / CRASH_LOOP_SECOND)]
    src.seen["failure"].add(CRASH_LOOP_SECOND.split("/")[0])
    start, stop = src.uvicorn[:4], src.uvicorn[5:]
    while not w.full:
        w.put(w.rng.choice(src.startups) + start)
        for _ in range(w.rng.randint(20, 400)):
            w.put([w.rng.choice(src.requests)])
        failure = w.rng.choice(failures)
        asserts = [line for line in failure if ASSERT.search(line)]
        block = w.rng.randrange(4096)
        w.put_raw([on_grid(w.exact.line(w.rng.choice(asserts)), block, thread)
                   for thread in range(w.rng.randint(64, 1024))])
        w.put([line for line in failure if not ASSERT.search(line)], w.exact)
        w.put(stop)


CRASH_LOOP_SECOND = "device-side-assert--repro-h200-embedding/fail-device-assert.log"
MIXES = {m.name: m for m in [
    Mix("busy-server", "a busy vLLM / SGLang server (startup, access and batch lines, INFO and NCCL INFO runs), "
        "a failing vLLM server's traceback near the end", "cuda-illegal-memory-access--vllm-8177/vllm.log",
        busy_server, NO_REQUEST_LINES),
    Mix("fixtures-interleaved", "runs of 5-60 consecutive lines of every fixture log (startups, NCCL INFO runs, "
        "tracebacks), the lines that are some rule's evidence dropped; one NCCL timeout near the end",
        "nccl-timeout--repro-h200x2-torchrun/fail-nccl-timeout.log", interleaved),
    Mix("http-errors", "the busy server with 10% of lines HTTP 4xx/5xx access lines (the fixtures' access lines, "
        "status drawn from 4xx/5xx with its standard phrase); a CUDA OOM near the end",
        "cuda-oom--vllm-17835/server.log", http_errors,
        NO_REQUEST_LINES + "; the fixtures' access lines all say 200, so the status is the varied number"),
    Mix("kernel-heavy", "the kernel lines of every dmesg / kern.log / syslog / journal fixture (boot, PCI, "
        "NVRM, GSP, clocksource) as one host's dmesg, an Xid 79 fallen-off-the-bus near the end",
        "xid-fallen-off-bus--open-gpu-kernel-modules-1151/dmesg.log", kernel_heavy,
        "the fixtures hold no AER burst and no docker / veth lines; Xid lines other than the failure's "
        "are every one some rule's evidence, so they are not noise here; every line is given one `dmesg` "
        "prefix (the fixtures use four) and user-space journal lines are left out", recipe=2),
    Mix("crash-loop", "a vLLM / SGLang startup, a few requests, a device-side assert burst (64-1024 lines) and "
        "its traceback, a uvicorn shutdown; again, to the size", "device-side-assert--rex-omni-171/server.log",
        crash_loop,
        "the assert bursts alternate between this fixture and " + CRASH_LOOP_SECOND),
]}
