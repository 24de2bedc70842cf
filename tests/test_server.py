"""The chat-ops service as a client meets it: a real `diagnose serve` on a loopback port, real HTTP.

Authentication, Slack signatures, body limits, bad bodies, time and concurrency limits, redaction
through the service, and the one log line per request that holds no log content.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import jsonschema
import pytest
from conftest import FIXTURES, ROOT
from test_redact import HF, SECRETS, planted_log

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")

TOKEN = "test-token-0123456789abcdef"
SLACK_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
SCHEMA = json.loads((ROOT / "docs" / "diagnosis.schema.json").read_text())
NCCL_LOG = (FIXTURES / "nccl-timeout--repro-h200x2-torchrun" / "fail-nccl-timeout.log").read_bytes()
NMS = b"RuntimeError: operator torchvision::nms does not exist\n"


@dataclass
class Server:
    url: str
    proc: subprocess.Popen[bytes]
    log: Path

    def log_lines(self) -> list[str]:
        return [line for line in self.log.read_text().splitlines() if " diagnose.server " in line]


def start_server(tmp: Path, *args: str, env: dict[str, str] | None = None) -> Server:
    log = tmp / f"server-{len(list(tmp.iterdir()))}.log"
    full_env = {**os.environ, "DIAGNOSE_API_TOKEN": TOKEN, "SLACK_SIGNING_SECRET": SLACK_SECRET, **(env or {})}
    with open(log, "wb") as err:
        proc = subprocess.Popen([sys.executable, "-m", "diagnose", "serve", "--port", "0", *args],
                                stdout=subprocess.DEVNULL, stderr=err, env=full_env, cwd=ROOT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        m = re.search(r"listening on (http://\S+) ", log.read_text())
        if m:
            return Server(m[1], proc, log)
        if proc.poll() is not None:
            raise AssertionError(f"the server exited: {log.read_text()}")
        time.sleep(0.05)
    proc.kill()
    raise AssertionError(f"the server did not start: {log.read_text()}")


def stop(server: Server) -> None:
    server.proc.terminate()
    try:
        server.proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.proc.kill()


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[Server]:
    s = start_server(tmp_path_factory.mktemp("serve"), "--max-body-mb", "1")
    yield s
    stop(s)


@pytest.fixture(scope="module")
def client(server) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=30) as c:
        yield c


def slack_post(client: httpx.Client, text: str, *, timestamp: int | None = None, secret: str = SLACK_SECRET,
               signature: str | None = None) -> httpx.Response:
    body = urllib.parse.urlencode({"command": "/diagnose", "text": text, "user_id": "U123"}).encode()
    ts = str(timestamp if timestamp is not None else int(time.time()))
    sig = signature or "v0=" + hmac.new(secret.encode(), b"v0:" + ts.encode() + b":" + body, hashlib.sha256).hexdigest()
    headers = {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": sig,
               "Content-Type": "application/x-www-form-urlencoded"}
    return client.post("/slack/commands", content=body, headers=headers)


# --- the API ---------------------------------------------------------------------------------

def test_healthz_and_openapi(client):
    health = client.get("/healthz")
    assert health.status_code == 200 and health.json()["status"] == "ok" and health.json()["rules"] > 10
    spec = client.get("/openapi.json").json()
    assert {"/v1/diagnose", "/slack/commands", "/healthz"} <= set(spec["paths"])
    body = spec["paths"]["/v1/diagnose"]["post"]["requestBody"]["content"]
    assert {"text/plain", "application/json", "multipart/form-data"} <= set(body)
    assert "HTTPBearer" in spec["components"]["securitySchemes"]


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {TOKEN}"},
                                     {"Authorization": TOKEN}])
def test_api_needs_the_bearer_token(client, headers):
    r = client.post("/v1/diagnose", content=NMS, headers=headers)
    assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
    assert HF not in r.text


def test_raw_body_answers_the_json_contract(client):
    r = client.post("/v1/diagnose", content=NCCL_LOG, headers=AUTH)
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/json")
    data = r.json()
    jsonschema.validate(data, SCHEMA)
    assert data["findings"][0]["rule_id"] == "nccl-timeout"
    assert data["findings"][0]["evidence"][0]["source"] == "body"


def test_json_and_multipart_bodies(client):
    artifacts = {"artifacts": [{"name": "server.log", "text": NCCL_LOG.decode()},
                               {"name": "nvidia-smi.txt", "text": (FIXTURES / "healthy" / "host-h200x2-snapshot" / "nvidia-smi.txt").read_text()}]}
    r = client.post("/v1/diagnose", json=artifacts, headers=AUTH)
    assert r.status_code == 200
    assert r.json()["facts"]["gpus"][0]["name"] == "NVIDIA H200"
    files = [("files", ("server.log", NCCL_LOG, "text/plain")), ("files", ("crash.log", NMS, "text/plain"))]
    r = client.post("/v1/diagnose", files=files, headers=AUTH)
    assert r.status_code == 200
    assert {f["rule_id"] for f in r.json()["findings"]} >= {"nccl-timeout", "torchvision-torch-mismatch"}
    assert {i["source"] for i in r.json()["inputs"]} == {"server.log", "crash.log"}


def test_markdown_and_slack_formats(client):
    md = client.post("/v1/diagnose", params={"format": "markdown"}, content=NCCL_LOG, headers=AUTH)
    assert md.status_code == 200 and md.headers["content-type"].startswith("text/markdown")
    assert md.text.startswith("# Post-mortem: NCCL collective timed out")
    sl = client.post("/v1/diagnose", params={"format": "slack"}, content=NCCL_LOG, headers=AUTH)
    from test_render_formats import validate_with_slack_sdk

    validate_with_slack_sdk(sl.json())


@pytest.mark.parametrize("body, headers, status, says", [
    (b"", {}, 400, "empty body"),
    (b"", {"Content-Type": "application/json"}, 400, "empty body"),
    (b"{not json", {"Content-Type": "application/json"}, 400, "invalid JSON"),
    (b'{"artifacts": []}', {"Content-Type": "application/json"}, 400, "artifacts"),
    (b'{"artifacts": [{"name": "a"}]}', {"Content-Type": "application/json"}, 400, "text"),
    (b'{"logs": "x"}', {"Content-Type": "application/json"}, 400, "artifacts"),
    (b"\x00\x01\x02\x03\xff\xfe" * 100, {"Content-Type": "application/octet-stream"}, 422, "binary"),
    (b"--xyz\r\nbroken", {"Content-Type": "multipart/form-data; boundary=xyz"}, 400, ""),
])
def test_bad_bodies_are_one_line_answers(client, body, headers, status, says):
    r = client.post("/v1/diagnose", content=body, headers={**AUTH, **headers})
    assert r.status_code == status, r.text
    detail = r.json()["detail"]
    assert isinstance(detail, str) and "\n" not in detail and says in detail


def test_unknown_format_is_refused(client):
    assert client.post("/v1/diagnose", params={"format": "xml"}, content=NMS, headers=AUTH).status_code == 422


def test_body_over_the_limit_is_413_and_the_server_lives_on(client):
    big = b"INFO all good\n" * (1024 * 1024 // 14 + 10)
    r = client.post("/v1/diagnose", content=big, headers=AUTH)
    assert r.status_code == 413 and "limit" in r.json()["detail"]

    def chunks():  # no Content-Length: counted as it arrives
        for _ in range(40):
            yield b"x" * 65536

    r = client.post("/v1/diagnose", content=chunks(), headers=AUTH)
    assert r.status_code == 413
    try:  # far over the limit: answered without reading it all, or the connection is dropped
        r = client.post("/v1/diagnose", content=b"y" * (6 * 1024 * 1024), headers=AUTH)
        assert r.status_code == 413
    except httpx.TransportError:
        pass
    assert client.get("/healthz").status_code == 200
    assert client.post("/v1/diagnose", content=NMS, headers=AUTH).status_code == 200


def test_planted_secrets_never_leave_through_the_service(client):
    log = planted_log().encode()
    for fmt in ("json", "markdown", "slack"):
        r = client.post("/v1/diagnose", params={"format": fmt, "name": "/home/alice/server.log"}, content=log, headers=AUTH)
        assert r.status_code == 200
        for secret in SECRETS:
            assert secret not in r.text, (fmt, secret)
    r = slack_post(client, planted_log())
    assert r.status_code == 200 and not any(s in r.text for s in SECRETS)


# --- Slack -----------------------------------------------------------------------------------

def test_slack_command_answers_block_kit(client):
    r = slack_post(client, NCCL_LOG.decode())
    assert r.status_code == 200
    message = r.json()
    assert message["response_type"] == "in_channel"
    assert message["blocks"][0]["text"]["text"] == "Root cause: NCCL collective timed out (watchdog)"
    from test_render_formats import validate_with_slack_sdk

    validate_with_slack_sdk({k: v for k, v in message.items() if k != "response_type"})


@pytest.mark.parametrize("kwargs, says", [
    ({"secret": "not-the-secret"}, "bad signature"),
    ({"signature": "v0=" + "0" * 64}, "bad signature"),
    ({"timestamp": -600}, "stale"),  # seconds from now, taken when the test runs (not when it is collected)
    ({"timestamp": +600}, "stale"),
])
def test_slack_refuses_bad_and_stale_signatures(client, kwargs, says):
    if "timestamp" in kwargs:
        kwargs = {**kwargs, "timestamp": int(time.time()) + kwargs["timestamp"]}
    r = slack_post(client, NMS.decode(), **kwargs)
    assert r.status_code == 401 and says in r.json()["detail"]


def test_slack_refuses_unsigned_requests_and_the_api_token(client):
    r = client.post("/slack/commands", content=b"text=hello", headers=AUTH)
    assert r.status_code == 401 and "X-Slack-Signature" in r.json()["detail"]


def test_slack_empty_command_gets_usage(client):
    r = slack_post(client, "   ")
    assert r.status_code == 200 and r.json()["response_type"] == "ephemeral" and "/diagnose" in r.json()["text"]


def test_slack_binary_paste_is_a_polite_answer(client):
    r = slack_post(client, "\x00\x01\x02\x03" * 200)
    assert r.status_code == 200 and r.json()["response_type"] == "ephemeral"


# --- the log ---------------------------------------------------------------------------------

def test_one_log_line_per_request_without_the_log_content(server, client):
    def settled() -> int:  # a line is written just after its answer is sent
        count, deadline = -1, time.monotonic() + 5
        while time.monotonic() < deadline:
            time.sleep(0.2)
            now = len(server.log_lines())
            if now == count:
                break
            count = now
        return count

    before = settled()
    client.post("/v1/diagnose", content=planted_log().encode(), headers=AUTH)
    client.post("/v1/diagnose", content=NMS, headers={"Authorization": "Bearer nope"})
    client.get("/healthz")
    settled()
    lines = server.log_lines()[before:]
    assert len(lines) == 3, lines
    assert re.search(r"POST /v1/diagnose 200 in=\d+B [\d.]+ms findings=1 top=hf-auth-or-offline$", lines[0])
    assert " 401 " in lines[1] and "GET /healthz 200" in lines[2]
    everything = server.log.read_text()
    assert not any(s in everything for s in SECRETS) and "gated repo" not in everything
    assert TOKEN not in everything


# --- starting, time and concurrency limits --------------------------------------------------

def test_refuses_to_start_without_a_token():
    env = {k: v for k, v in os.environ.items() if k != "DIAGNOSE_API_TOKEN"}
    proc = subprocess.run([sys.executable, "-m", "diagnose", "serve", "--port", "0"], capture_output=True,
                          env=env, cwd=ROOT, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.decode().count("\n") == 1 and "DIAGNOSE_API_TOKEN" in proc.stderr.decode()


def test_without_the_server_extra_serve_is_one_line():
    code = ("import sys\nsys.modules['fastapi'] = None\nsys.argv = ['diagnose', 'serve']\n"
            "from diagnose.cli import main\nmain()\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, cwd=ROOT, timeout=60,
                          env={**os.environ, "DIAGNOSE_API_TOKEN": TOKEN})
    assert proc.returncode == 2 and proc.stderr.decode().count("\n") == 1
    assert "pip install 'gpu-diagnose[server]'" in proc.stderr.decode()


def test_port_in_use_is_one_line(server):
    port = server.url.rsplit(":", 1)[1]
    proc = subprocess.run([sys.executable, "-m", "diagnose", "serve", "--port", port], capture_output=True,
                          env={**os.environ, "DIAGNOSE_API_TOKEN": TOKEN}, cwd=ROOT, timeout=60)
    assert proc.returncode == 2 and proc.stderr.decode().count("\n") == 1 and "cannot listen" in proc.stderr.decode()


def test_insecure_no_auth_serves_without_a_token(tmp_path):
    env = {"DIAGNOSE_API_TOKEN": "", "SLACK_SIGNING_SECRET": ""}
    s = start_server(tmp_path, "--insecure-no-auth", env=env)
    try:
        assert "no authentication" in s.log.read_text()
        with httpx.Client(base_url=s.url, timeout=30) as c:
            assert c.post("/v1/diagnose", content=NMS).status_code == 200
            assert c.post("/slack/commands", content=b"text=x").status_code == 404  # no signing secret: off
    finally:
        stop(s)


def test_slow_bodies_hold_no_slot_and_get_408(tmp_path):
    """A slow sender is cut at the read deadline, and meanwhile the only request slot serves others;
    one without the token is refused before its body is read."""
    s = start_server(tmp_path, "--max-inflight", "1", "--timeout", "2")
    results: dict[str, int] = {}

    def slow_body() -> Iterator[bytes]:
        for _ in range(8):
            yield b"INFO still sending\n"
            time.sleep(0.5)

    def slow_request() -> None:
        with httpx.Client(base_url=s.url, timeout=30) as c:
            results["slow"] = c.post("/v1/diagnose", content=slow_body(), headers=AUTH).status_code

    try:
        worker = threading.Thread(target=slow_request)
        worker.start()
        with httpx.Client(base_url=s.url, timeout=30) as c:
            time.sleep(0.5)
            assert c.post("/v1/diagnose", content=NMS, headers=AUTH).status_code == 200  # the slot is free
            assert c.get("/healthz").status_code == 200
            worker.join(timeout=30)
        assert results["slow"] == 408
        host, port = s.url.removeprefix("http://").rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=5) as anonymous:  # headers only, no body yet
            anonymous.sendall(b"POST /v1/diagnose HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n")
            assert anonymous.recv(100).startswith(b"HTTP/1.1 401")  # answered before its body was read
    finally:
        stop(s)


def test_a_diagnosis_past_its_deadline_is_stopped_and_the_worker_replaced(tmp_path):
    s = start_server(tmp_path, "--timeout", "0.5", "--workers", "1", "--max-body-mb", "64")
    # 48 MB of a real NCCL failure log: seconds of work on any machine, far past the 0.5 s deadline
    big = NCCL_LOG * max(1, (48 << 20) // len(NCCL_LOG))
    try:
        with httpx.Client(base_url=s.url, timeout=60) as c:
            r = c.post("/v1/diagnose", content=big, headers=AUTH)
            assert r.status_code == 503 and "stopped" in r.json()["detail"]
            assert c.get("/healthz").json()["stopped"] == 1
            deadline = time.monotonic() + 30
            while (r := c.post("/v1/diagnose", content=NMS, headers=AUTH)).status_code != 200:
                assert time.monotonic() < deadline, r.text  # the replacement worker starts
                time.sleep(0.2)
            assert r.json()["findings"][0]["rule_id"] == "torchvision-torch-mismatch"
    finally:
        stop(s)


def test_the_service_never_runs_commands():
    """Fix and verify commands are text to show; nothing in the service can start a process."""
    for path in [*(ROOT / "diagnose" / "server").glob("*.py"), ROOT / "diagnose" / "redact.py",
                 *(ROOT / "diagnose" / "render").glob("*.py")]:
        source = path.read_text()
        for call in ("subprocess", "os.system", "os.popen", "create_subprocess", "pty.spawn", "os.exec"):
            assert call not in source, f"{path.name} mentions {call}"


def test_the_diagnose_path_does_not_import_the_server_stack(tmp_path):
    log = tmp_path / "crash.log"
    log.write_bytes(NMS)
    code = (
        "import sys\n"
        "from diagnose import cli\n"
        f"sys.argv = ['diagnose', '--format', 'slack', '-o', {str(tmp_path / 'out.json')!r}, {str(log)!r}]\n"
        "try:\n    cli.main()\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('fastapi', 'uvicorn', 'starlette', 'slack_sdk', 'httpx') if m in sys.modules]\n"
        "print(heavy)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, cwd=ROOT, timeout=60)
    assert proc.stdout.decode().strip() == "[]", proc.stderr.decode()
    assert json.loads((tmp_path / "out.json").read_text())["blocks"]


def test_listening_socket_is_tcp_so_answers_are_not_delayed():
    """asyncio sets TCP_NODELAY only on sockets created with IPPROTO_TCP; without it every keep-alive
    request waits ~40 ms for a delayed ACK."""
    from diagnose.server.serve import bind

    sock = bind("127.0.0.1", 0)
    try:
        assert sock.proto == socket.IPPROTO_TCP
    finally:
        sock.close()


def test_compressed_bodies_and_bundles_are_read_but_bombs_refused(client):
    import bz2
    import gzip
    import io
    import tarfile

    r = client.post("/v1/diagnose", content=gzip.compress(NCCL_LOG), headers=AUTH)
    assert r.status_code == 200 and r.json()["findings"][0]["rule_id"] == "nccl-timeout"
    bundle = FIXTURES / "healthy" / "collect-bundle-h200x1" / "bundle.tar.gz"
    r = client.post("/v1/diagnose", files=[("files", ("bundle.tar.gz", bundle.read_bytes()))], headers=AUTH)
    assert r.status_code == 200 and r.json()["facts"]["gpus"] and not r.json()["findings"]
    bomb = gzip.compress(b"A" * (100 << 20), compresslevel=9)  # ~100 KB that inflates to 100 MB of text
    assert len(bomb) < 1024 * 1024
    r = client.post("/v1/diagnose", content=bomb, headers=AUTH)
    assert r.status_code == 413 and "inflates" in r.json()["detail"]
    zeros = gzip.compress(bytes(100 << 20), compresslevel=9)  # binary: refused after its first block
    r = client.post("/v1/diagnose", content=zeros, headers=AUTH)
    assert r.status_code == 422 and "binary" in r.json()["detail"]
    inner = bz2.compress(b"B" * (200 << 20))  # a bomb inside a bundle member is bounded the same way
    member = tarfile.TarInfo("logs/server.log.bz2")
    member.size = len(inner)
    packed = io.BytesIO()
    with tarfile.open(fileobj=packed, mode="w:gz") as tar:
        tar.addfile(member, io.BytesIO(inner))
    r = client.post("/v1/diagnose", content=packed.getvalue(), headers=AUTH)
    assert r.status_code == 413 and "server.log.bz2" in r.json()["detail"]


def test_hostile_metadata_is_a_4xx_line_never_a_500(client):
    deep = client.post("/v1/diagnose", content=b'{"artifacts": ' + b"[" * 100_000, headers={
        **AUTH, "Content-Type": "application/json"})
    assert deep.status_code == 400 and "nested" in deep.json()["detail"]
    number = client.post("/v1/diagnose", headers={**AUTH, "Content-Type": "application/json"},
                         content=b'{"artifacts": [{"name": "a", "text": "x"}], "n": ' + b"9" * 5000 + b"}")
    assert number.status_code == 400 and "number" in number.json()["detail"]
    body = b"command=%2Fdiagnose&text=boom"
    r = client.post("/slack/commands", content=body, headers={
        "X-Slack-Request-Timestamp": "9" * 5000, "X-Slack-Signature": "v0=" + "0" * 64,
        "Content-Type": "application/x-www-form-urlencoded"})
    assert r.status_code == 401 and "timestamp" in r.json()["detail"].lower()


def test_a_client_that_writes_a_huge_body_first_reads_the_413(server):
    """Over four times the limit (1 MB here), written whole before reading: the answer, not a reset."""
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    body = b"x" * (6 << 20)
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(b"POST /v1/diagnose HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + TOKEN.encode()
                     + b"\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        assert sock.recv(100).startswith(b"HTTP/1.1 413")
