"""The Slack app as a workspace meets it: the real Bolt app over Socket Mode, against a stand-in for
Slack's Web API and Socket Mode on 127.0.0.1 (slack_standin.py), every request recorded and checked
with slack_sdk's own models."""

from __future__ import annotations

import gzip
import inspect
import json
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, run_cli
from test_redact import SECRETS, planted_log

pytest.importorskip("slack_bolt")
pytest.importorskip("websockets")

from slack_sdk.models.blocks import Block  # noqa: E402
from slack_sdk.web import WebClient  # noqa: E402
from slack_standin import APP_TOKEN, BOT_TOKEN, Call, SlackStandIn, escape  # noqa: E402

NCCL = FIXTURES / "nccl-timeout--repro-h200x2-torchrun" / "fail-nccl-timeout.log"
ACCELERATE = FIXTURES / "accelerate-missing--comfyui-6685" / "traceback.log"
NCCL_IPS = ["192.0.2.2", "10.20.30.41", "10.1.2.3"]
MAX_FILE = 256 * 1024


@pytest.fixture(scope="module")
def slack(tmp_path_factory, kb):
    from slack_bolt.adapter.socket_mode import SocketModeHandler

    from diagnose.slack import run
    from diagnose.slack.settings import SlackSettings

    standin = SlackStandIn()
    settings = SlackSettings(bot_token=BOT_TOKEN, app_token=APP_TOKEN, api_url=standin.api_url, max_file=MAX_FILE,
                             store=tmp_path_factory.mktemp("slack") / "answers.sqlite3")
    handler = SocketModeHandler(run.build(settings, kb), APP_TOKEN)
    handler.connect()
    standin.settings = settings  # type: ignore[attr-defined]
    yield standin
    handler.close()
    standin.close()


def answer_in(slack: SlackStandIn, channel: str, thread: str) -> Call:
    call = slack.wait("api", "chat.postMessage", channel=channel, thread_ts=thread)
    check_message(call.params)
    return call


def check_message(message: dict[str, Any]) -> None:
    """The request's Block Kit as slack_sdk parses and validates it, and the fallback text."""
    blocks = message["blocks"] if isinstance(message["blocks"], list) else json.loads(message["blocks"])
    parsed = Block.parse_all(blocks)
    assert len(parsed) == len(blocks) <= 50
    for block in parsed:
        block.validate_json()
    assert [b.to_dict() for b in parsed] == blocks
    assert message["text"]


def header(message: dict[str, Any]) -> str:
    return next(b["text"]["text"] for b in message["blocks"] if b["type"] == "header")


def every_request(slack: SlackStandIn) -> str:
    return "\n".join(f"{c.params}\n{c.body.decode('utf-8', 'replace')}\n{c.headers}" for c in slack.calls)


def test_every_call_is_a_web_api_method_the_sdk_knows(slack):
    thread = slack.thread("C0OPS", [{"text": NCCL.read_text()}])
    slack.mention("C0OPS", thread)
    answer_in(slack, "C0OPS", thread)
    slack.wait("api", "files.completeUploadExternal", channel_id="C0OPS")
    for call in slack.calls:
        if call.kind == "api":
            method = getattr(WebClient, call.name.replace(".", "_"))  # the SDK's own method for it
            required = [p.name for p in inspect.signature(method).parameters.values()
                        if p.default is p.empty and p.kind is p.KEYWORD_ONLY]
            assert set(required) <= set(call.params) | {"app_token"}, (call.name, required)
            token = APP_TOKEN if call.name == "apps.connections.open" else BOT_TOKEN
            assert call.headers["Authorization"] == f"Bearer {token}"


def test_mention_in_a_thread_with_a_log_gz_gets_the_cause_in_that_thread(slack):
    shared = slack.add_file("rank1.log.gz", gzip.compress(NCCL.read_bytes()), "application/gzip")
    thread = slack.thread("C0GPU", [{"text": "training hung then died, log attached", "files": [shared]}])
    asked = slack.mention("C0GPU", thread)
    call = answer_in(slack, "C0GPU", thread)
    assert header(call.params) == "Root cause: NCCL collective timed out (watchdog)"
    reaction = slack.wait("api", "reactions.add", channel="C0GPU", timestamp=asked)
    assert reaction.at < call.at  # the acknowledgement comes first
    download = slack.wait("download", shared["id"])
    assert download.headers["Authorization"] == f"Bearer {BOT_TOKEN}"
    done = slack.wait("api", "files.completeUploadExternal", channel_id="C0GPU", thread_ts=thread)
    uploaded = [c for c in slack.calls if c.kind == "upload" and c.name == json.loads(done.params["files"])[0]["id"]]
    assert b"# Post-mortem: NCCL collective timed out (watchdog)" in uploaded[0].body
    actions = [b for b in call.params["blocks"] if b["type"] == "actions"]
    assert [e["action_id"] for e in actions[0]["elements"]] == ["diagnose_right", "diagnose_wrong"]


def test_a_large_file_is_read_from_its_head_and_tail(slack):
    noise = b"".join(b"step %d loss 1.234 lr 3e-4 tokens/s 51234\n" % i for i in range(20000))
    data = NCCL.read_bytes()[:2000] + noise + NCCL.read_bytes()
    assert len(data) > 2 * MAX_FILE
    shared = slack.add_file("train.log", data)
    thread = slack.thread("C0BIG", [{"text": "see file", "files": [shared]}])
    slack.mention("C0BIG", thread)
    call = answer_in(slack, "C0BIG", thread)
    assert header(call.params) == "Root cause: NCCL collective timed out (watchdog)"
    ranges = {c.params["range"] for c in slack.calls if c.kind == "download" and c.name == shared["id"]}
    assert ranges == {f"bytes=0-{MAX_FILE // 2 - 1}", f"bytes=-{MAX_FILE // 2}"}
    assert "read its first and last 128.0 KiB" in json.dumps(call.params["blocks"])


def test_the_slash_command_is_acknowledged_at_once_and_answered_through_response_url(slack):
    text = escape(NCCL.read_text())
    sent = time.monotonic()
    envelope = slack.send("slash_commands", {
        "token": "x", "team_id": "T0TEAM", "channel_id": "C0CMD", "user_id": "U0ALICE", "command": "/diagnose",
        "text": text, "api_app_id": "A0APP", "response_url": slack.base + "/response/cmd1", "trigger_id": "1.2"},
        accepts_response=True)
    ack = slack.wait("ack", envelope)
    answer = slack.wait("response", "cmd1")
    assert ack.at - sent < 3.0, "Slack drops a command not acknowledged within 3 s"
    assert ack.at < answer.at
    assert ack.params["payload"]["response_type"] == "ephemeral"
    message = json.loads(answer.body)
    check_message(message)
    assert message["response_type"] == "in_channel"
    assert header(message) == "Root cause: NCCL collective timed out (watchdog)"


def test_an_escaped_log_gives_the_cli_answer_with_its_evidence_escaped_once(slack):
    cli = json.loads(run_cli("--format", "json", str(ACCELERATE)).stdout)
    thread = slack.thread("C0ESC", [{"text": ACCELERATE.read_text()}])
    assert "accelerate&gt;=0.26.0" in slack.threads[("C0ESC", thread)][0]["text"]  # as Slack sends it
    slack.mention("C0ESC", thread)
    message = answer_in(slack, "C0ESC", thread).params
    assert header(message) == f"Root cause: {cli['findings'][0]['title']}"
    evidence = next(b["text"]["text"] for b in message["blocks"] if "*Evidence*" in b.get("text", {}).get("text", ""))
    assert "accelerate&gt;=0.26.0" in evidence and "&amp;gt;" not in json.dumps(message["blocks"])


def test_planted_secrets_never_reach_a_recorded_call(slack, tmp_path):
    nccl = "\n".join(["vm:1341:1341 [0] NCCL WARN NET/Socket : peer 10.20.30.41<53312> failed",
                      "vm:1341:1341 [0] NCCL INFO ncclSocketInit: Using eth0:10.1.2.3<0>", NCCL.read_text()])
    shared = slack.add_file("server.log", planted_log().encode())
    thread = slack.thread("C0SEC", [{"text": nccl}, {"text": "the env: USER=alice", "files": [shared]}])
    slack.mention("C0SEC", thread)
    answer_in(slack, "C0SEC", thread)
    slack.wait("api", "files.completeUploadExternal", channel_id="C0SEC")
    sent = every_request(slack)
    for secret in [*SECRETS, *NCCL_IPS]:
        assert secret not in sent, secret


def test_buttons_record_feedback_and_wrong_answers_export_as_draft_fixtures(slack, tmp_path):
    thread = slack.thread("C0FB", [{"text": ACCELERATE.read_text()}])
    slack.mention("C0FB", thread)
    message = answer_in(slack, "C0FB", thread).params
    actions = next(b for b in message["blocks"] if b["type"] == "actions")
    right, menu = actions["elements"]
    none_of_these = menu["options"][-1]
    assert none_of_these["text"]["text"] == "None of these"

    def click(user: str, action: dict[str, Any], response: str) -> dict[str, Any]:
        slack.send("interactive", {"type": "block_actions", "user": {"id": user}, "api_app_id": "A0APP",
                                   "team": {"id": "T0TEAM"}, "channel": {"id": "C0FB"}, "trigger_id": "1.2",
                                   "response_url": f"{slack.base}/response/{response}", "actions": [action],
                                   "container": {"type": "message", "channel_id": "C0FB"}})
        return json.loads(slack.wait("response", response).body)

    said = click("U0BOB", {"action_id": "diagnose_right", "block_id": actions["block_id"], "type": "button",
                           "value": right["value"]}, "fb-right")
    assert said["text"] == "Thanks: recorded as the right cause."
    said = click("U0CAROL", {"action_id": "diagnose_wrong", "block_id": actions["block_id"], "type": "static_select",
                             "selected_option": none_of_these}, "fb-wrong")
    assert said["text"] == "Thanks: recorded as wrong, and none of the candidates."
    store = slack.settings.store  # type: ignore[attr-defined]
    out = tmp_path / "drafts"
    done = run_cli("feedback", "export", "--store", str(store), "-o", str(out))
    assert done.returncode == 0, done.stderr
    (folder,) = [Path(line) for line in done.stdout.decode().splitlines()]
    import yaml

    expected = yaml.safe_load((folder / "expected.yaml").read_text())
    assert expected["first"].startswith("TODO") and expected["absent"] == ["accelerate-missing"]
    assert "accelerate" in (folder / "slack-thread.log").read_text()


def test_the_same_failure_again_in_the_channel_gets_a_link_to_the_first_thread(slack):
    first = slack.thread("C0DUP", [{"text": NCCL.read_text()}])
    slack.mention("C0DUP", first)
    posted = answer_in(slack, "C0DUP", first)
    again = slack.thread("C0DUP", [{"text": "again?\n" + NCCL.read_text()}])
    slack.mention("C0DUP", again)
    reply = answer_in(slack, "C0DUP", again).params
    assert len(reply["blocks"]) == 1
    first_ts = [c for c in slack.api_calls("chat.getPermalink") if c.params["channel"] == "C0DUP"][0].params["message_ts"]
    assert f"/archives/C0DUP/p{first_ts}|this earlier thread>" in reply["blocks"][0]["text"]["text"]
    assert posted.params["blocks"][0]["text"]["text"] in reply["blocks"][0]["text"]["text"].replace("*", "Root cause: ", 1)


def test_the_manifest_asks_for_what_the_app_listens_to(tmp_path):
    import yaml

    from diagnose.slack import manifest

    done = run_cli("slack", "manifest")
    m = yaml.safe_load(done.stdout)
    assert m == manifest.manifest()
    assert m["settings"]["socket_mode_enabled"] and m["settings"]["event_subscriptions"]["bot_events"] == ["app_mention"]
    assert set(m["oauth_config"]["scopes"]["bot"]) == set(manifest.SCOPES)
    assert "channels:read" not in m["oauth_config"]["scopes"]["bot"]
    http = manifest.manifest(http_url="https://diag.example.com/")
    assert http["features"]["slash_commands"][0]["url"] == "https://diag.example.com/slack/events"
    assert not http["settings"]["socket_mode_enabled"]


def test_without_tokens_it_says_what_to_set():
    done = run_cli("slack", env={"SLACK_BOT_TOKEN": "", "SLACK_APP_TOKEN": ""})
    assert done.returncode == 2
    assert done.stderr.decode().strip().splitlines() == [
        "diagnose: error: SLACK_BOT_TOKEN is not set to a bot token (xoxb-...): see README, 'A Slack bot'"]



def test_the_message_action_diagnoses_that_messages_thread(slack):
    thread = slack.thread("C0ACT", [{"text": "after the upgrade:"}, {"text": ACCELERATE.read_text()}])
    message = slack.threads[("C0ACT", thread)][1]
    envelope = slack.send("interactive", {
        "type": "message_action", "callback_id": "diagnose_this", "trigger_id": "1.2", "team": {"id": "T0TEAM"},
        "user": {"id": "U0ALICE"}, "channel": {"id": "C0ACT"}, "message": message, "message_ts": message["ts"],
        "response_url": slack.base + "/response/act1"})
    slack.wait("ack", envelope)
    reply = answer_in(slack, "C0ACT", thread).params
    assert header(reply) == "Root cause: " + json.loads(run_cli("--format", "json", str(ACCELERATE)).stdout)[
        "findings"][0]["title"]
    slack.wait("api", "reactions.add", channel="C0ACT", timestamp=message["ts"])


def test_http_events_behind_diagnose_serve(tmp_path):
    import hashlib
    import hmac
    import os
    import re
    import subprocess
    import sys
    import urllib.parse

    import httpx

    standin = SlackStandIn()
    secret = "8f742231b10e8888abcd99yyyzzz85a5"
    env = {**os.environ, "DIAGNOSE_API_TOKEN": "t0ken-0123456789", "SLACK_SIGNING_SECRET": secret,
           "SLACK_BOT_TOKEN": BOT_TOKEN, "DIAGNOSE_SLACK_API_URL": standin.api_url,
           "DIAGNOSE_SLACK_STORE": str(tmp_path / "s.sqlite3")}
    log = tmp_path / "serve.log"
    with open(log, "wb") as err:
        proc = subprocess.Popen([sys.executable, "-m", "diagnose", "slack", "--http", "--port", "0"],
                                stdout=subprocess.DEVNULL, stderr=err, env=env, cwd=Path(__file__).parents[1])
    try:
        deadline = time.monotonic() + 60
        while not (m := re.search(r"listening on (http://\S+) ", log.read_text())):
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        assert "/slack/events: on" in log.read_text()

        def signed(body: bytes, content_type: str) -> httpx.Response:
            ts = str(int(time.time()))
            sig = "v0=" + hmac.new(secret.encode(), f"v0:{ts}:".encode() + body, hashlib.sha256).hexdigest()
            return httpx.post(m[1] + "/slack/events", content=body, timeout=10, headers={
                "Content-Type": content_type, "X-Slack-Request-Timestamp": ts, "X-Slack-Signature": sig})

        body = urllib.parse.urlencode({"command": "/diagnose", "text": escape(ACCELERATE.read_text()),
                                       "channel_id": "C0HTTP", "user_id": "U0ALICE", "team_id": "T0TEAM",
                                       "response_url": standin.base + "/response/http1", "trigger_id": "1"}).encode()
        sent = time.monotonic()
        acked = signed(body, "application/x-www-form-urlencoded")
        assert acked.status_code == 200 and acked.json()["response_type"] == "ephemeral"
        assert time.monotonic() - sent < 3.0, "Slack drops a command not acknowledged within 3 s"
        message = json.loads(standin.wait("response", "http1").body)
        check_message(message)
        assert "accelerate" in header(message).lower()
        forged = httpx.post(m[1] + "/slack/events", content=body, timeout=10, headers={
            "Content-Type": "application/x-www-form-urlencoded", "X-Slack-Request-Timestamp": str(int(time.time())),
            "X-Slack-Signature": "v0=" + "0" * 64})
        assert forged.status_code == 401 and forged.json()["detail"] == "bad signature"  # the Guard's, before Bolt
        hostile_slack_clients(m[1], secret)
    finally:
        proc.terminate()
        proc.wait(10)
        standin.close()


def hostile_slack_clients(url: str, secret: str) -> None:
    """/slack/events: headers checked before the body, the body bounded and signed as it streams in."""
    import hashlib
    import hmac
    import socket

    host, port = url.removeprefix("http://").rsplit(":", 1)

    def raw(headers: str, body: bytes = b"") -> bytes:
        with socket.create_connection((host, int(port)), timeout=30) as sock:
            sock.sendall(f"POST /slack/events HTTP/1.1\r\nHost: x\r\n{headers}\r\n".encode() + body)
            answer = b""
            while chunk := sock.recv(4096):  # each refusal closes the connection
                answer += chunk
            return answer

    # a stale timestamp with 100 MB announced and none sent: refused at once, not after the read deadline
    started = time.monotonic()
    stale = raw(f"X-Slack-Request-Timestamp: {int(time.time()) - 3600}\r\nX-Slack-Signature: v0=00\r\n"
                "Content-Length: 100000000\r\n")
    assert stale.startswith(b"HTTP/1.1 401") and b"stale request" in stale and time.monotonic() - started < 5
    # a fresh timestamp and a wrong signature over 5 MiB: over Slack's 4 MiB, 413 (read and dropped, not kept)
    big = b"x" * (5 << 20)
    ts = str(int(time.time()))
    over = raw(f"X-Slack-Request-Timestamp: {ts}\r\nX-Slack-Signature: v0={'0' * 64}\r\n"
               f"Content-Length: {len(big)}\r\n", big)
    assert over.startswith(b"HTTP/1.1 413")
    # the same 5 MiB correctly signed is still over the limit: the bound holds before the signature counts
    sig = "v0=" + hmac.new(secret.encode(), f"v0:{ts}:".encode() + big, hashlib.sha256).hexdigest()
    signed = raw(f"X-Slack-Request-Timestamp: {ts}\r\nX-Slack-Signature: {sig}\r\nContent-Length: {len(big)}\r\n", big)
    assert signed.startswith(b"HTTP/1.1 413")


def test_the_services_slash_command_undoes_slacks_escaping(tmp_path):
    import httpx
    from test_server import slack_post, start_server, stop

    server = start_server(tmp_path)
    try:
        with httpx.Client(base_url=server.url, timeout=30) as client:
            message = slack_post(client, escape(ACCELERATE.read_text())).json()
    finally:
        stop(server)
    cli = json.loads(run_cli("--format", "json", str(ACCELERATE)).stdout)
    assert header(message) == f"Root cause: {cli['findings'][0]['title']}"
    assert "&amp;gt;" not in json.dumps(message) and "accelerate&gt;=0.26.0" in json.dumps(message)


def test_a_collect_bundle_in_the_thread_gives_the_answer_its_host(slack):
    bundle = slack.add_file("diagnose-bundle-gpu.tar.gz",
                            (FIXTURES / "healthy" / "collect-bundle-h200x1" / "bundle.tar.gz").read_bytes(),
                            "application/gzip")
    log = slack.add_file("rank0.log", NCCL.read_bytes())
    thread = slack.thread("C0BUN", [{"text": "bundle from the node", "files": [bundle]}, {"text": "and the log", "files": [log]}])
    slack.mention("C0BUN", thread)
    reply = answer_in(slack, "C0BUN", thread).params
    assert header(reply) == "Root cause: NCCL collective timed out (watchdog)"
    context = " ".join(e["text"] for b in reply["blocks"] if b["type"] == "context" for e in b["elements"])
    assert "H200" in context


def test_many_files_are_read_newest_first_within_the_threads_budget(slack):
    from diagnose.slack import files
    from diagnose.slack.settings import SlackSettings

    old = slack.add_file("old.log", b"x" * 3000)
    new = slack.add_file("new.log", b"y" * 3000)
    old["created"], new["created"] = 100, 200
    settings = SlackSettings(bot_token=BOT_TOKEN, api_url=slack.api_url, max_file=4000, max_total=5000)
    got = files.gather(WebClient(token=BOT_TOKEN, base_url=slack.api_url), [old, new], settings)
    assert [name for name, _ in got.artifacts] == ["new.log", "old.log"]
    assert len(got.artifacts[1][1]) < 3000 and b"bytes from the middle" in got.artifacts[1][1]
    assert got.notes == ["old.log: 2.9 KiB, read its first and last 1.0 KiB"]
    image = slack.add_file("screenshot.png", b"\x89PNG", "image/png")
    elsewhere = dict(slack.add_file("x.log", b"boom"), url_private="https://evil.example.com/x.log",
                     url_private_download="https://evil.example.com/x.log")
    got = files.gather(WebClient(token=BOT_TOKEN, base_url=slack.api_url), [image, elsewhere], settings)
    assert got.artifacts == []
    assert got.notes == ["screenshot.png: not a log (image/png)", "x.log: not downloaded (not on Slack's file host)"]


def test_a_thread_it_cannot_read_gets_one_line_saying_what_to_do(slack):
    ts = slack.next_ts()
    slack.send("events_api", {"team_id": "T0TEAM", "api_app_id": "A0APP", "type": "event_callback",
                              "event_id": "Ev0NOPE", "event_time": int(time.time()), "event": {
                                  "type": "app_mention", "user": "U0ALICE", "text": "<@UBOT>", "ts": ts,
                                  "channel": "C0NOPE", "event_ts": ts}})
    reply = slack.wait("api", "chat.postMessage", channel="C0NOPE", thread_ts=ts).params
    assert reply["text"] == ("diagnose: cannot read this thread (not_in_channel): `/invite @diagnose` to the channel, "
                             "then ask again.")
