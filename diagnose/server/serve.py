"""`diagnose serve`: load the KB, bind the socket (a port in use is one line, exit 2), run uvicorn."""

from __future__ import annotations

import logging
import socket
import sys
from collections.abc import Callable
from typing import Any

import uvicorn

from diagnose import api
from diagnose.errors import DiagnoseError
from diagnose.kb.compiled import KnowledgeBase
from diagnose.server.app import create_app
from diagnose.server.settings import Settings
from diagnose.settings import current

__all__ = ["Settings", "run"]


def run(settings: Settings, extend: Callable[[Any, KnowledgeBase], str] | None = None) -> None:
    """`extend` adds routes to the app (the Slack app's /slack/events) and returns what it added."""
    settings.check()
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s %(message)s")
    kb = api.load_kb(current().get("extra-rules"))  # a team's own rules (config file, DIAGNOSE_EXTRA_RULES)
    app = create_app(settings, kb)
    also = f"; {extend(app.app, kb)}: on" if extend else ""
    sock = bind(settings.host, settings.port)
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    auth = "no authentication (--insecure-no-auth)" if settings.insecure_no_auth else "bearer token"
    slack = "on" if settings.slack_signing_secret else "off (SLACK_SIGNING_SECRET not set)"
    print(f"diagnose serve: listening on http://{shown}:{port} (kb {kb.version}, {len(kb.rules)} rules; "
          f"/v1/diagnose: {auth}; /slack/commands: {slack}{also}; redaction {'on' if settings.redact else 'off'})",
          file=sys.stderr, flush=True)
    config = uvicorn.Config(
        app, log_config=None, access_log=False, timeout_keep_alive=75,  # above proxies' 60 s
        timeout_graceful_shutdown=5, server_header=False,
    )
    uvicorn.Server(config).run(sockets=[sock])


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets that say so, and without it
    # a keep-alive client waits ~40 ms per request (Nagle against delayed ACK)
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(2048)  # connections wait in the backlog until uvicorn's loop accepts them
    except OSError as exc:
        sock.close()
        raise DiagnoseError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.set_inheritable(True)
    return sock
