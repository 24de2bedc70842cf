"""ASGI middleware in front of every route: limits first, then the app, then one log line.

- more than `max_inflight` requests at once: 503 with Retry-After (health checks are never refused);
- a body over `max_body` bytes: 413 (a declared Content-Length over the limit is answered after the
  body is drained, so that the client reads the answer instead of a reset connection);
- a body not received within `timeout_s`: 408;
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

from diagnose.server.settings import Settings

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

log = logging.getLogger("diagnose.server")
UNLIMITED = ("/healthz", "/openapi.json")
DRAIN_FACTOR = 4  # a body is drained up to this many times the limit before the connection is dropped


class TooLarge(Exception):
    pass


class Guard:
    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.settings = settings
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
            elif self.inflight >= self.settings.max_inflight:
                await answer(send_logged, 503, "busy: too many requests at once, retry shortly", {"retry-after": "1"})
            else:
                self.inflight += 1
                try:
                    await self._limited(scope, receive, send_logged, seen)
                finally:
                    self.inflight -= 1
        finally:
            extra = " ".join(f"{k}={v}" for k, v in state.get("log", {}).items())
            log.info("%s %s %d in=%dB %.1fms %s", scope["method"], scope["path"], seen["status"], seen["bytes"],
                     (time.perf_counter() - start) * 1000, extra)

    async def _limited(self, scope: Scope, receive: Receive, send: Send, seen: dict[str, int]) -> None:
        limit = self.settings.max_body
        declared = _content_length(scope)
        try:
            with anyio.fail_after(self.settings.timeout_s):
                body = await read_body(receive, limit, drain=declared is None or declared <= limit * DRAIN_FACTOR)
        except TooLarge as exc:
            seen["bytes"] = int(str(exc))
            await answer(send, 413, f"body too large: the limit is {limit} bytes")
            return
        except TimeoutError:
            await answer(send, 408, f"the request body did not arrive within {self.settings.timeout_s:g} s")
            return
        if body is None:  # the client went away
            return
        seen["bytes"] = len(body)
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


async def read_body(receive: Receive, limit: int, drain: bool) -> bytes | None:
    """The whole body, at most `limit` bytes; over it, TooLarge (after reading on, up to a bound)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunk = message.get("body", b"")
        size += len(chunk)
        if size <= limit:
            chunks.append(chunk)
        elif not drain or size > limit * DRAIN_FACTOR:
            raise TooLarge(size)
        if not message.get("more_body", False):
            break
    if size > limit:
        raise TooLarge(size)
    return b"".join(chunks)


async def answer(send: Send, status: int, detail: str, headers: dict[str, str] | None = None) -> None:
    body = json.dumps({"detail": detail}).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    if status == 413:
        raw.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None
