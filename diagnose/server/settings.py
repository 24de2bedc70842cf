"""What the service is allowed to do, from the command line and the environment."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from diagnose.errors import DiagnoseError

TOKEN_ENV = "DIAGNOSE_API_TOKEN"
SLACK_SECRET_ENV = "SLACK_SIGNING_SECRET"


@dataclass(frozen=True)
class Settings:
    host: str = "127.0.0.1"
    port: int = 8080
    api_token: str | None = None  # bearer token for /v1/diagnose
    slack_signing_secret: str | None = None  # /slack/commands answers only when this is set
    insecure_no_auth: bool = False
    redact: bool = True
    max_body: int = 8 * 1024 * 1024  # bytes of one request body
    timeout_s: float = 30.0  # one request's diagnosis, from its body's end; a worker past it is stopped
    read_timeout_s: float = 10.0  # one request's body, outside the request slots; past it 408
    max_inflight: int = 256  # requests with their body read, waiting for or holding a worker; more get 503
    workers: int = 0  # diagnosis worker processes (0: one per CPU, at most 8)
    max_artifacts: int = 64  # artifacts in one JSON or multipart body
    max_inflated: int = 64 * 1024 * 1024  # bytes a gzip / bzip2 / xz artifact may inflate to

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ, **options: Any) -> Settings:
        token = (environ.get(TOKEN_ENV) or "").strip() or None
        secret = (environ.get(SLACK_SECRET_ENV) or "").strip() or None
        settings = cls(api_token=token, slack_signing_secret=secret, **options)
        settings.check()
        return settings

    def check(self) -> None:
        if not self.api_token and not self.insecure_no_auth:
            raise DiagnoseError(
                f"{TOKEN_ENV} is not set: set it to the bearer token clients must send, "
                "or pass --insecure-no-auth to serve without authentication"
            )
