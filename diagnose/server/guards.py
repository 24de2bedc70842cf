"""ASGI middleware in front of every route: who may ask, then the body, then a slot, then the app.

- authentication (`authorize`, from the headers alone) before a byte of the body is read: an
  unauthenticated client is answered 401 at once, so it cannot hold the service with slow bodies;
- the body is read under its own deadline (`read_timeout_s`: 408) before a request slot is taken,
  so slow senders do not hold the slots; a body over `max_body` is drained (until the deadline)
  and answered 413, so that a client that writes its whole body first reads the answer, not a reset;
- a Slack-signed route (auth.SlackBody) has its timestamp and signature header checked first, its
  body bounded by SLACK_MAX_BODY and its signature computed as the body streams in: a bad one is 401
  before a slot is taken;
- more than `max_inflight` requests with their body read: 503 with Retry-After (health checks are
  never refused);
- one log line per request: method, path, status, bytes in, milliseconds, and what the route put
  in `scope["state"]["log"]` (the finding's rule id, never the log content).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import anyio

from diagnose.server.auth import SLACK_MAX_BODY
from diagnose.server.settings import Settings

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

log = logging.getLogger("diagnose.server")
UNLIMITED = ("/healthz", "/openapi.json")


class Guard:
    def __init__(self, app: ASGIApp, settings: Settings,
                 authorize: Callable[[Scope], tuple[int, str, dict[str, str]] | None] | None = None) -> None:
        self.app = app
        self.settings = settings
        self.authorize = authorize  # (status, detail, headers) when the headers already refuse the request
        self.inflight = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        seen = {"status": 0, "bytes": 0}

        async def send_logged(message: Message) -> None:
            if message["type"] == "http.response.start":
                seen["status"] = message["status"]
            await send(message)

        state = scope.setdefault("state", {})
        state["deadline"] = start + self.settings.timeout_s
        try:
            if scope["path"] in UNLIMITED:
                await self.app(scope, receive, send_logged)
            elif self.authorize is not None and (refused := self.authorize(scope)):
                status, detail, headers = refused
                await answer(send_logged, status, detail, {**headers, "connection": "close"})
            else:
                await self._limited(scope, receive, send_logged, seen)
        finally:
            extra = " ".join(f"{k}={v}" for k, v in state.get("log", {}).items())
            log.info("%s %s %d in=%dB %.1fms %s", scope["method"], scope["path"], seen["status"], seen["bytes"],
                     (time.perf_counter() - start) * 1000, extra)

    async def _limited(self, scope: Scope, receive: Receive, send: Send, seen: dict[str, int]) -> None:
        verify = scope["state"].get("verify")  # a signed route's signature, fed as the body streams in
        limit = self.settings.max_body if verify is None else min(self.settings.max_body, SLACK_MAX_BODY)
        read_s = min(self.settings.read_timeout_s, self.settings.timeout_s)
        try:
            with anyio.fail_after(read_s):
                body = await read_body(receive, limit, seen, verify)
        except TimeoutError:
            if seen["bytes"] > limit:
                await answer(send, 413, f"body too large: the limit is {limit} bytes")
            else:
                await answer(send, 408, f"the request body did not arrive within {read_s:g} s", {"connection": "close"})
            return
        if seen["bytes"] > limit:
            await answer(send, 413, f"body too large: the limit is {limit} bytes")
            return
        if body is None:  # the client went away
            return
        if verify is not None and (problem := verify.problem()):
            await answer(send, 401, problem, {"connection": "close"})
            return
        if self.inflight >= self.settings.max_inflight:
            await answer(send, 503, "busy: too many requests at once, retry shortly", {"retry-after": "1"})
            return
        scope["state"]["deadline"] = time.perf_counter() + self.settings.timeout_s
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        self.inflight += 1
        try:
            await self.app(scope, replay, send)
        finally:
            self.inflight -= 1


async def read_body(receive: Receive, limit: int, seen: dict[str, int], verify: Any = None) -> bytes | None:
    """The whole body; over `limit` the rest is read and dropped (None, and seen["bytes"] says how
    much came); None when the client went away. `verify` (auth.SlackBody) sees each kept chunk."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunk = message.get("body", b"")
        seen["bytes"] += len(chunk)
        if seen["bytes"] <= limit:
            chunks.append(chunk)
            if verify is not None:
                verify.update(chunk)
        else:
            chunks = []
        if not message.get("more_body", False):
            break
    return b"".join(chunks) if seen["bytes"] <= limit else None


async def answer(send: Send, status: int, detail: str, headers: dict[str, str] | None = None) -> None:
    body = json.dumps({"detail": detail}).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    if status == 413:
        raw.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})
