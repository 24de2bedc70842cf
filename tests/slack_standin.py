"""A local stand-in for Slack: its Web API over HTTP and its Socket Mode over a WebSocket, both on
127.0.0.1. It records every request it is sent (Web API calls, file downloads, uploads, response_url
posts, Socket Mode acks) with the time it arrived, and serves the threads and files a test sets up.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from websockets.exceptions import ConnectionClosed
from websockets.sync.server import ServerConnection, serve

BOT_USER = "UBOT"
BOT_TOKEN = "xoxb-0000000001-0000000002-standInBotTokenValue"
APP_TOKEN = "xapp-1-A0APP-0000000003-standinappleveltokenvalue"
TEAM = "T0TEAM"


def escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


@dataclass
class Call:
    kind: str  # "api", "download", "upload", "response", "ack"
    name: str  # the Web API method, the file id, the response id, the envelope id
    params: dict[str, Any]
    headers: dict[str, str]
    body: bytes
    at: float = field(default_factory=time.monotonic)


class SlackStandIn:
    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.bot_token = BOT_TOKEN
        self.threads: dict[tuple[str, str], list[dict[str, Any]]] = {}  # (channel, thread ts) -> messages
        self.files: dict[str, tuple[dict[str, Any], bytes]] = {}
        self._changed = threading.Condition()
        self._ts = 1700000000
        self._ws: ServerConnection | None = None
        self._connected = threading.Event()
        self.http = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.ws = serve(self._on_socket, "127.0.0.1", 0)
        self.base = f"http://127.0.0.1:{self.http.server_address[1]}"
        self.api_url = self.base + "/api/"
        for target in (self.http.serve_forever, self.ws.serve_forever):
            threading.Thread(target=target, daemon=True).start()

    def close(self) -> None:
        self.ws.shutdown()
        self.http.shutdown()
        self.http.server_close()

    # --- what a test sets up ---------------------------------------------------------------------

    def next_ts(self) -> str:
        self._ts += 1
        return f"{self._ts}.000100"

    def add_file(self, name: str, data: bytes, mimetype: str = "text/plain") -> dict[str, Any]:
        file_id = "F" + uuid.uuid4().hex[:10].upper()
        url = f"{self.base}/files-pri/{TEAM}-{file_id}/{name}"
        info = {"id": file_id, "name": name, "title": name, "mimetype": mimetype, "size": len(data),
                "created": int(time.time()), "url_private": url, "url_private_download": url + "?download=1"}
        self.files[file_id] = (info, data)
        return info

    def thread(self, channel: str, messages: list[dict[str, Any]]) -> str:
        """A thread of `messages` (text, files, user); returns its ts. Their text is escaped as Slack
        escapes what people type: `&`, `<`, `>` as `&amp;`, `&lt;`, `&gt;`."""
        root = None
        for m in messages:
            m["text"] = escape(m.get("text") or "")
            m.setdefault("ts", self.next_ts())
            m.setdefault("user", "U0ALICE")
            m.setdefault("type", "message")
            root = root or m["ts"]
            m["thread_ts"] = root
        self.threads[(channel, root or "")] = messages
        return root or ""

    # --- Socket Mode -------------------------------------------------------------------------------

    def _on_socket(self, ws: ServerConnection) -> None:
        self._ws = ws
        ws.send(json.dumps({"type": "hello", "num_connections": 1, "connection_info": {"app_id": "A0APP"}}))
        self._connected.set()
        try:
            for raw in ws:
                msg = json.loads(raw)
                self._record(Call("ack", msg.get("envelope_id", ""), msg, {}, raw.encode() if isinstance(raw, str) else raw))
        except ConnectionClosed:  # the app went away without a close frame: its own business
            pass

    def send(self, kind: str, payload: dict[str, Any], accepts_response: bool = False) -> str:
        """Send one Socket Mode envelope (events_api, slash_commands, interactive); returns its id."""
        assert self._connected.wait(20), "the app never opened its Socket Mode connection"
        envelope_id = uuid.uuid4().hex
        assert self._ws is not None
        self._ws.send(json.dumps({"envelope_id": envelope_id, "type": kind, "payload": payload,
                                  "accepts_response_payload": accepts_response, "retry_attempt": 0, "retry_reason": ""}))
        return envelope_id

    def mention(self, channel: str, thread_ts: str, text: str = "<@UBOT> what broke?") -> str:
        ts = self.next_ts()
        event = {"type": "app_mention", "user": "U0ALICE", "text": text, "ts": ts, "channel": channel,
                 "thread_ts": thread_ts, "event_ts": ts}
        self.threads[(channel, thread_ts)].append({"type": "message", "user": "U0ALICE", "text": text, "ts": ts,
                                                   "thread_ts": thread_ts})
        self.send("events_api", {"token": "x", "team_id": TEAM, "api_app_id": "A0APP", "event": event,
                                 "type": "event_callback", "event_id": "Ev" + uuid.uuid4().hex[:8],
                                 "event_time": int(time.time()),
                                 "authorizations": [{"team_id": TEAM, "user_id": BOT_USER, "is_bot": True}]})
        return ts

    # --- what a test reads ---------------------------------------------------------------------------

    def _record(self, call: Call) -> None:
        with self._changed:
            self.calls.append(call)
            self._changed.notify_all()

    def wait(self, kind: str, name: str | None = None, timeout: float = 60, **params: Any) -> Call:
        """The first recorded call of this kind (and name, and params) that arrives, or AssertionError."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for call in self.calls:
                    if call.kind == kind and (name is None or call.name == name) and all(
                            call.params.get(k) == v for k, v in params.items()):
                        return call
                left = deadline - time.monotonic()
                assert left > 0, f"no {kind} {name or ''} {params} in {[(c.kind, c.name) for c in self.calls]}"
                self._changed.wait(left)

    def api_calls(self, method: str) -> list[Call]:
        return [c for c in self.calls if c.kind == "api" and c.name == method]

    # --- the Web API ---------------------------------------------------------------------------------

    def answer(self, method: str, p: dict[str, Any]) -> dict[str, Any]:
        if method == "auth.test":
            return {"user_id": BOT_USER, "bot_id": "B0BOT", "team_id": TEAM, "user": "diagnose", "team": "t",
                    "url": "https://t.slack.com/"}
        if method == "apps.connections.open":
            return {"url": f"ws://127.0.0.1:{self.ws.socket.getsockname()[1]}/link?ticket=1"}
        if method == "conversations.replies":
            if (p["channel"], p["ts"]) not in self.threads:  # Slack's answer where the bot was not invited
                return {"ok": False, "error": "not_in_channel"}
            return {"messages": self.threads[(p["channel"], p["ts"])], "has_more": False}
        if method == "files.info":
            return {"file": self.files[p["file"]][0]}
        if method == "chat.postMessage":
            return {"channel": p["channel"], "ts": self.next_ts(), "message": {"text": p.get("text")}}
        if method == "chat.getPermalink":
            return {"channel": p["channel"], "permalink": f"https://t.slack.com/archives/{p['channel']}/p{p['message_ts']}"}
        if method == "files.getUploadURLExternal":
            file_id = "F" + uuid.uuid4().hex[:10].upper()
            return {"upload_url": f"{self.base}/upload/{file_id}", "file_id": file_id}
        if method == "files.completeUploadExternal":
            return {"files": [{"id": f["id"], "title": f.get("title")} for f in json.loads(p["files"])]}
        return {}


def _handler(standin: SlackStandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _reply(self, status: int, body: bytes, content_type: str = "application/json", extra: dict | None = None):
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            for k, v in (extra or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:  # a file download: url_private, with Range
            headers = dict(self.headers.items())
            file_id = self.path.split("/")[2].split("-", 1)[-1]
            info, data = standin.files[file_id]
            standin._record(Call("download", file_id, {"range": headers.get("Range")}, headers, b""))
            if headers.get("Authorization") != f"Bearer {standin.bot_token}":
                self._reply(302, b"", extra={"Location": "https://t.slack.com/?redir=login"})  # Slack's answer
                return
            rng = headers.get("Range", "")
            if rng.startswith("bytes="):
                start, _, end = rng[6:].partition("-")
                part = data[-int(end):] if not start else data[int(start) : int(end) + 1 if end else None]
                self._reply(206, part, info["mimetype"])
                return
            self._reply(200, data, info["mimetype"])

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            headers = dict(self.headers.items())
            kind, _, name = self.path.lstrip("/").partition("/")
            if kind != "api":
                standin._record(Call("upload" if kind == "upload" else "response", name, {}, headers, body))
                self._reply(200, b"OK", "text/plain")
                return
            if headers.get("Content-Type", "").startswith("application/json"):
                params = json.loads(body or b"{}")
            else:
                params = {k: v[0] for k, v in urllib.parse.parse_qs(body.decode(), keep_blank_values=True).items()}
            standin._record(Call("api", name, params, headers, body))
            self._reply(200, json.dumps({"ok": True, **standin.answer(name, params)}).encode())

    return Handler
