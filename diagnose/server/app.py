"""The routes. Each diagnosis runs in a worker process (pool.py) under the request's deadline and
is stopped there; answers are redacted unless the operator turned that off. Who may ask is decided
from the headers, before the body is read (Guard's `authorize`). Nothing here runs a fix or verify
command."""

import time
import urllib.parse
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, HTTPException, Query, Request, Response
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from diagnose import __version__, api
from diagnose.kb.compiled import KnowledgeBase
from diagnose.server import auth, bodies
from diagnose.server.guards import Guard, Scope
from diagnose.server.pool import Job, JobError, WorkerPool
from diagnose.server.settings import Settings
from diagnose.slack.text import unescape

MEDIA = {"json": "application/json", "markdown": "text/markdown; charset=utf-8", "slack": "application/json"}
ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"description": "Malformed body: empty, invalid JSON, wrong shape, numbers or nesting over the limits"},
    401: {"description": "Missing or wrong bearer token (or Slack signature)"},
    408: {"description": "The body did not arrive in time"},
    413: {"description": "Body over the size limit, or compressed data that inflates past its limit"},
    422: {"description": "Nothing diagnosable in the body (binary data, empty artifacts)"},
    503: {"description": "Busy (too many requests at once) or the diagnosis ran over the time limit and was stopped"},
}
SLACK_PATHS = ("/slack/commands", "/slack/events")  # signed by Slack: verified as the body streams in (Guard)
SLACK_USAGE = "Paste a log after the command: `/diagnose <log lines>`. Secrets, IPs, hosts and user names are masked."


def create_app(settings: Settings, kb: KnowledgeBase | None = None, pool: WorkerPool | None = None) -> Any:
    kb = kb or api.load_kb()
    pool = pool or WorkerPool(kb, settings.workers)
    app = FastAPI(
        title="diagnose", version=__version__, docs_url=None, redoc_url=None,
        description="Names the root cause of a failed GPU / LLM-inference deployment from its logs. "
                    "Answers are redacted; the service never runs fix or verify commands.",
        on_startup=[pool.start], on_shutdown=[pool.close],
    )
    bearer = HTTPBearer(auto_error=False, description="The token in the server's DIAGNOSE_API_TOKEN")

    async def in_worker(request: Request, artifacts: list[tuple[str, bytes]], redact: bool, fmt: str) -> Any:
        """Diagnose, redact and render in a worker process, within the request's deadline."""
        job = Job(artifacts, redact, fmt, settings.max_inflated)
        try:
            answer, findings, top = await pool.run(job, request.scope["state"]["deadline"])
        except JobError as exc:
            headers = {"Retry-After": "5"} if exc.status == 503 else None
            raise HTTPException(exc.status, exc.detail, headers=headers) from None
        request.scope["state"].setdefault("log", {}).update(findings=findings, top=top)
        return answer

    @app.get("/healthz", summary="Liveness: the service is up and its knowledge base is loaded")
    async def healthz() -> dict[str, Any]:
        return {"status": "ok", "version": __version__, "kb_version": kb.version, "rules": len(kb.rules),
                "inflight": guard.inflight, "diagnosing": pool.busy, "workers": pool.size, "stopped": pool.killed}

    @app.post("/v1/diagnose", summary="Diagnose logs", responses=ERRORS,
              openapi_extra={"requestBody": bodies.OPENAPI_BODY})
    async def diagnose_endpoint(
        request: Request,
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
        fmt: Annotated[Literal["json", "markdown", "slack"], Query(alias="format", description="Answer format.")] = "json",
        name: Annotated[str, Query(max_length=bodies.MAX_NAME, description="Name of a raw body's artifact.")] = "body",
    ) -> Response:
        """The JSON diagnosis (docs/diagnosis.schema.json), or `?format=markdown|slack`."""
        if not settings.insecure_no_auth:  # the Guard checked it before the body; checked again here
            header = f"{credentials.scheme} {credentials.credentials}" if credentials else None
            if not auth.bearer_ok(header, settings.api_token or ""):
                raise HTTPException(401, "missing or wrong bearer token", headers={"WWW-Authenticate": "Bearer"})
        artifacts = await _artifacts(request, name, settings)
        return Response(await in_worker(request, artifacts, settings.redact, fmt), media_type=MEDIA[fmt])

    @app.post("/slack/commands", summary="Slack slash command: /diagnose <pasted log>", responses=ERRORS,
              openapi_extra={"requestBody": {"content": {"application/x-www-form-urlencoded": {
                  "schema": {"type": "object", "properties": {"text": {"type": "string"}}}}}}})
    async def slack_command(request: Request) -> Response:
        """Verified with X-Slack-Signature; answers a Block Kit message, always redacted."""
        if not settings.slack_signing_secret:
            raise HTTPException(404, "the Slack command is not enabled: set SLACK_SIGNING_SECRET")
        body = await request.body()
        headers = request.headers
        problem = auth.slack_problem(settings.slack_signing_secret, headers.get("x-slack-request-timestamp"),
                                     headers.get("x-slack-signature"), body)
        if problem:
            raise HTTPException(401, problem)
        form = urllib.parse.parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
        if form.get("ssl_check") == ["1"]:
            return Response(status_code=200)
        text = unescape((form.get("text") or [""])[0])  # Slack sends & < > as &amp; &lt; &gt;
        if not text.strip():
            return JSONResponse({"response_type": "ephemeral", "text": SLACK_USAGE})
        try:  # a channel: always redacted
            message = await in_worker(request, [("slack", text.encode())], True, "slack-command")
        except HTTPException as exc:
            return JSONResponse({"response_type": "ephemeral", "text": f"diagnose: {exc.detail}"})
        return JSONResponse({"response_type": "in_channel", **message})

    def authorize(scope: Scope) -> tuple[int, str, dict[str, str]] | None:
        """From the headers alone, before the body is read: refuse what the route would refuse."""
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        if scope["path"] == "/v1/diagnose" and not settings.insecure_no_auth:
            if not auth.bearer_ok(headers.get("authorization"), settings.api_token or ""):
                return 401, "missing or wrong bearer token", {"www-authenticate": "Bearer"}
        elif scope["path"] in SLACK_PATHS:  # /slack/events: the Slack app's HTTP mode, when mounted
            if not settings.slack_signing_secret:
                return 404, "the Slack command is not enabled: set SLACK_SIGNING_SECRET", {}
            timestamp, signature = headers.get("x-slack-request-timestamp"), headers.get("x-slack-signature")
            if problem := auth.slack_headers_problem(timestamp, signature, time.time()):
                return 401, problem, {}
            assert timestamp is not None and signature is not None
            scope["state"]["verify"] = auth.SlackBody(settings.slack_signing_secret, timestamp, signature)
        return None

    guard = Guard(app, settings, authorize)
    return guard


async def _artifacts(request: Request, name: str, settings: Settings) -> list[tuple[str, bytes]]:
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    try:
        if content_type == "multipart/form-data":
            artifacts = await _multipart(request, settings.max_artifacts)
        else:
            body = await request.body()
            if not body:
                raise bodies.BadBody("empty body: send a log, JSON {\"artifacts\": [...]}, or multipart files")
            if content_type == "application/json" or content_type.endswith("+json"):
                artifacts = bodies.artifacts_from_json(body, settings.max_artifacts)
            else:
                artifacts = [(bodies.safe_name(name, 1), body)]
        bodies.check_not_empty(artifacts)
    except bodies.BadBody as exc:
        raise HTTPException(400, str(exc)) from None
    return artifacts


async def _multipart(request: Request, max_artifacts: int) -> list[tuple[str, bytes]]:
    try:
        form = await request.form(max_files=max_artifacts, max_fields=max_artifacts)
    except Exception as exc:  # starlette raises its own MultiPartException / HTTPException for bad forms
        raise bodies.BadBody(f"invalid multipart body: {getattr(exc, 'detail', None) or exc}") from None
    artifacts = []
    for i, (field, value) in enumerate(form.multi_items(), 1):
        if isinstance(value, str):
            artifacts.append((bodies.safe_name(field, i), value.encode()))
        else:
            artifacts.append((bodies.safe_name(value.filename or field, i), await value.read()))
    await form.close()
    return artifacts
