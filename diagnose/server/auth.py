"""Who may ask: a bearer token for the API, Slack's request signature for the slash command.

Slack signs `v0:<timestamp>:<raw body>` with HMAC-SHA256 and the app's signing secret
(https://api.slack.com/authentication/verifying-requests-from-slack); a request older than five
minutes is refused so that a captured one cannot be replayed.

>>> body = b"command=%2Fdiagnose&text=hello"
>>> sig = slack_signature("8f742231b10e8888abcd99yyyzzz85a5", "1531420618", body)
>>> slack_problem("8f742231b10e8888abcd99yyyzzz85a5", "1531420618", sig, body, now=1531420700) is None
True
>>> slack_problem("8f742231b10e8888abcd99yyyzzz85a5", "1531420618", sig, body, now=1531421000)
'stale request: the timestamp is more than 300 s away from now'
"""

from __future__ import annotations

import hashlib
import hmac
import time

MAX_SKEW_S = 300
SLACK_MAX_BODY = 4 * 1024 * 1024  # what Bolt for JavaScript allows (its `bodyLimit`); Slack's own are far smaller


def bearer_ok(header: str | None, token: str) -> bool:
    """`Authorization: Bearer <token>`, compared in constant time."""
    if not header:
        return False
    scheme, _, given = header.partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())


def slack_signature(secret: str, timestamp: str, body: bytes) -> str:
    base = b"v0:" + timestamp.encode() + b":" + body
    return "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


def slack_headers_problem(timestamp: str | None, signature: str | None, now: float | None = None) -> str | None:
    """What is wrong with a Slack request's headers alone: checked before its body is read.

    >>> slack_headers_problem("9" * 5000, "v0=x")
    'bad X-Slack-Request-Timestamp'
    """
    if not timestamp or not signature:
        return "missing X-Slack-Request-Timestamp or X-Slack-Signature"
    if not (timestamp.isascii() and timestamp.isdigit()) or len(timestamp) > 12:
        return "bad X-Slack-Request-Timestamp"
    if abs((now if now is not None else time.time()) - int(timestamp)) > MAX_SKEW_S:
        return f"stale request: the timestamp is more than {MAX_SKEW_S} s away from now"
    return None


def slack_problem(secret: str, timestamp: str | None, signature: str | None, body: bytes,
                  now: float | None = None) -> str | None:
    """Why a Slack request must be refused, or None when its signature holds."""
    if problem := slack_headers_problem(timestamp, signature, now):
        return problem
    assert timestamp is not None and signature is not None
    if not hmac.compare_digest(slack_signature(secret, timestamp, body).encode(), signature.encode("utf-8", "replace")):
        return "bad signature"
    return None


class SlackBody:
    """Slack's signature over a body as it streams in: the Guard feeds each chunk, keeps none past
    SLACK_MAX_BODY, and refuses a bad signature before a request slot is taken or the route sees it.

    >>> body = SlackBody("8f742231b10e8888abcd99yyyzzz85a5", "1531420618", "v0=0")
    >>> body.update(b"command=%2Fdiagnose"); body.update(b"&text=hello"); body.problem()
    'bad signature'
    """

    def __init__(self, secret: str, timestamp: str, signature: str) -> None:
        self.signature = signature.encode("utf-8", "replace")
        self.mac = hmac.new(secret.encode(), b"v0:" + timestamp.encode() + b":", hashlib.sha256)

    def update(self, chunk: bytes) -> None:
        self.mac.update(chunk)

    def problem(self) -> str | None:
        return None if hmac.compare_digest(("v0=" + self.mac.hexdigest()).encode(), self.signature) else "bad signature"
