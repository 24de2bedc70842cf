"""Progress on a terminal, as a user sees it: bytes, rate and time left on stderr while a large log is
read, the line gone afterwards and after Ctrl-C (exit 130, no traceback); nothing of it on a pipe or
with --quiet."""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT

from diagnose.cli_progress import CLEAR

REAL = FIXTURES / "healthy" / "server-vllm-0.10.2-v1-jetson-thor" / "server.log"
CRASH = FIXTURES / "torch-extension-abi-mismatch--seed-002" / "verify.log"


@pytest.fixture(scope="module")
def big_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A healthy vLLM server's log over and over (24 MiB, past the 4 MiB of line-by-line reading), then a crash."""
    path = tmp_path_factory.mktemp("progress") / "server.log"
    text = REAL.read_bytes()
    path.write_bytes(text * ((24 << 20) // len(text)) + CRASH.read_bytes())
    return path


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "CLICOLOR_FORCE")}
    return {**env, "TERM": "xterm", "PYTHONPATH": str(ROOT)}


def on_terminal(*args: str, stdin: int | None = None) -> tuple[subprocess.Popen[bytes], int]:
    """Start `python -m diagnose ARGS` with stderr on a pseudo-terminal; (the process, the terminal's master)."""
    master, slave = pty.openpty()
    # Ctrl-C as a terminal gives it: SIGINT at its default even where the tests run as a background job (which
    # inherits it ignored, and a Python started so never turns it into KeyboardInterrupt)
    proc = subprocess.Popen([sys.executable, "-m", "diagnose", *args], stdin=stdin if stdin is not None else
                            subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave, env=_env(), cwd=ROOT,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    os.close(slave)
    return proc, master


def screen(master: int, until: float, stop: bytes | None = None) -> bytes:
    """What the process wrote to the terminal, until it closes it, `stop` shows up, or `until` passes."""
    seen = b""
    while time.monotonic() < until and not (stop and stop in seen):
        ready, _, _ = select.select([master], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the process exited and closed its end
                break
            if not chunk:
                break
            seen += chunk
    return seen


def test_a_large_log_on_a_terminal_shows_bytes_rate_and_time_left_then_clears_it(big_log: Path):
    proc, master = on_terminal(str(big_log))
    out, _ = proc.communicate(timeout=120)
    seen = screen(master, time.monotonic() + 5).decode()
    assert proc.returncode == 1 and "torch-extension-abi-mismatch" in out.decode()
    assert "diagnose: reading" in seen and "MiB/s" in seen and " left" in seen and " / 24." in seen
    assert seen.endswith(CLEAR)  # nothing of the line stays on the terminal


def test_no_progress_with_quiet_or_off_a_terminal(big_log: Path):
    proc, master = on_terminal("--quiet", str(big_log))
    proc.communicate(timeout=120)
    assert screen(master, time.monotonic() + 5) == b""
    piped = subprocess.run([sys.executable, "-m", "diagnose", str(big_log)], capture_output=True, env=_env(),
                           cwd=ROOT, timeout=120)
    assert piped.returncode == 1 and piped.stderr == b""


def test_ctrl_c_clears_the_line_and_exits_130_without_a_traceback(big_log: Path):
    # the log comes through a pipe the test keeps open, so the run is still reading when Ctrl-C comes however fast
    # it reads (a file four times as long was read to its end before the signal on a fast run)
    proc, master = on_terminal("-", stdin=subprocess.PIPE)
    assert proc.stdin is not None
    pipe = proc.stdin

    def feed() -> None:
        try:
            pipe.write(big_log.read_bytes())
            pipe.flush()
        except (BrokenPipeError, OSError, ValueError):  # the process has gone (Ctrl-C)
            pass

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    seen = screen(master, time.monotonic() + 60, stop=b"MiB/s")
    assert proc.poll() is None  # still reading: the pipe is open
    proc.send_signal(signal.SIGINT)  # what Ctrl-C sends
    out, _ = proc.communicate(timeout=30)
    seen += screen(master, time.monotonic() + 5)
    writer.join(timeout=5)
    assert proc.returncode == 130 and out == b""
    assert b"Traceback" not in seen and b"KeyboardInterrupt" not in seen
    assert seen[seen.rindex(b"diagnose: reading"):].count(CLEAR.encode()) == 1  # the last progress line was taken away
    assert seen.endswith(CLEAR.encode() + b"\r\n")  # and the prompt comes back on a line of its own


def test_quiet_also_keeps_warnings_off_stderr_but_in_the_report(tmp_path: Path):
    missing = str(tmp_path / "dmesg.txt")
    loud = subprocess.run([sys.executable, "-m", "diagnose", "--format", "json", missing, str(CRASH)],
                          capture_output=True, env=_env(), cwd=ROOT, timeout=60)
    quiet = subprocess.run([sys.executable, "-m", "diagnose", "-q", "--format", "json", missing, str(CRASH)],
                           capture_output=True, env=_env(), cwd=ROOT, timeout=60)
    assert loud.stderr.decode() == f"diagnose: warning: {missing}: no such file or directory\n"
    assert quiet.returncode == 1 and quiet.stderr == b""
    assert f'"source": "{missing}"' in quiet.stdout.decode()  # still in the report's skipped inputs
