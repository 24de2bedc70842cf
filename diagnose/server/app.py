"""The routes. Each diagnosis runs in a worker thread under the request's deadline; answers are
redacted unless the operator turned that off. Nothing here runs a fix or verify command."""

import threading
import time
import urllib.parse
from collections.abc import Callable
from typing import Annotated, Any, Literal, TypeVar

import anyio
from fastapi import Depends, FastAPI, HTTPException, Query, Request, Response
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from diagnose import __version__, api
from diagnose.errors import InputError
from diagnose.kb.compiled import KnowledgeBase
from diagnose.model import Diagnosis
from diagnose.redact import redact_diagnosis
from diagnose.render import RENDERERS, slack
from diagnose.server import auth, bodies
from diagnose.server.guards import Guard
from diagnose.server.settings import Settings

MEDIA = {"json": "application/json", "markdown": "text/markdown; charset=utf-8", "slack": "application/json"}
ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"description": "Malformed body: empty, invalid JSON, wrong shape"},
    401: {"description": "Missing or wrong bearer token (or Slack signature)"},
    408: {"description": "The body did not arrive in time"},
    413: {"description": "Body over the size limit"},
    422: {"description": "Nothing diagnosable in the body (binary data, empty artifacts)"},
    503: {"description": "Busy (too many requests at once) or the diagnosis ran over the time limit"},
}
T = TypeVar("T")
SLACK_USAGE = "Paste a log after the command: `/diagnose <log lines>`. Secrets, IPs, hosts and user names are masked."


def create_app(settings: Settings, kb: KnowledgeBase | None = None) -> Any:
    kb = kb or api.load_kb()
    limiter = anyio.CapacityLimiter(settings.workers)
    app = FastAPI(
        title="diagnose", version=__version__, docs_url=None, redoc_url=None,
        description="Names the root cause of a failed GPU / LLM-inference deployment from its logs. "
                    "Answers are redacted; the service never runs fix or verify commands.",
    )
    bearer = HTTPBearer(auto_error=False, description="The token in the server's DIAGNOSE_API_TOKEN")

    running = Running()

    async def in_worker(request: Request, work: Callable[[], tuple[Diagnosis, T]]) -> T:
        """Run `work` (diagnose, redact, render) in a worker thread, within the request's deadline.
        A diagnosis past its deadline is abandoned, not stopped: `running` bounds how many may be."""
        if running.count >= settings.workers * 2:
            raise HTTPException(503, "busy: diagnoses that ran over the time limit are still finishing",
                                headers={"Retry-After": "5"})
        left = request.scope["state"]["deadline"] - time.perf_counter()
        try:
            with anyio.fail_after(max(left, 0.001)):
                diagnosis, answer = await anyio.to_thread.run_sync(running.wrap(work), limiter=limiter,
                                                                   abandon_on_cancel=True)
        except TimeoutError:
            raise HTTPException(503, f"the request ran over the time limit ({settings.timeout_s:g} s)") from None
        except InputError as exc:
            raise HTTPException(422, str(exc)) from None
        except bodies.TooLargeInflated as exc:
            raise HTTPException(413, str(exc)) from None
        top = diagnosis.findings[0].rule_id if diagnosis.findings else "-"
        request.scope["state"].setdefault("log", {}).update(findings=len(diagnosis.findings), top=top)
        return answer

    def diagnosed(artifacts: list[tuple[str, bytes]], redact: bool) -> Diagnosis:
        inflated: list[tuple[str, str | bytes]] = [(n, bodies.inflate(d, settings.max_inflated)) for n, d in artifacts]
        diagnosis = api.diagnose_texts(inflated, kb=kb)
        return redact_diagnosis(diagnosis) if redact else diagnosis

    @app.get("/healthz", summary="Liveness: the service is up and its knowledge base is loaded")
    async def healthz() -> dict[str, Any]:
        return {"status": "ok", "version": __version__, "kb_version": kb.version, "rules": len(kb.rules),
                "inflight": guard.inflight, "diagnosing": running.count}

    @app.post("/v1/diagnose", summary="Diagnose logs", responses=ERRORS,
              openapi_extra={"requestBody": bodies.OPENAPI_BODY})
    async def diagnose_endpoint(
        request: Request,
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
        fmt: Annotated[Literal["json", "markdown", "slack"], Query(alias="format", description="Answer format.")] = "json",
        name: Annotated[str, Query(max_length=bodies.MAX_NAME, description="Name of a raw body's artifact.")] = "body",
    ) -> Response:
        """The JSON diagnosis (docs/diagnosis.schema.json), or `?format=markdown|slack`."""
        if not settings.insecure_no_auth:
            header = f"{credentials.scheme} {credentials.credentials}" if credentials else None
            if not auth.bearer_ok(header, settings.api_token or ""):
                raise HTTPException(401, "missing or wrong bearer token", headers={"WWW-Authenticate": "Bearer"})
        artifacts = await _artifacts(request, name, settings)

        def work() -> tuple[Diagnosis, str]:
            diagnosis = diagnosed(artifacts, settings.redact)
            return diagnosis, RENDERERS[fmt](diagnosis)

        return Response(await in_worker(request, work), media_type=MEDIA[fmt])

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
        text = (form.get("text") or [""])[0]
        if not text.strip():
            return JSONResponse({"response_type": "ephemeral", "text": SLACK_USAGE})

        def work() -> tuple[Diagnosis, dict[str, Any]]:
            diagnosis = diagnosed([("slack", text.encode())], redact=True)  # a channel: always redacted
            return diagnosis, slack.message(diagnosis)

        try:
            message = await in_worker(request, work)
        except HTTPException as exc:
            return JSONResponse({"response_type": "ephemeral", "text": f"diagnose: {exc.detail}"})
        return JSONResponse({"response_type": "in_channel", **message})

    guard = Guard(app, settings)
    return guard


class Running:
    """How many worker threads are diagnosing now, abandoned ones included."""

    def __init__(self) -> None:
        self.count = 0
        self.lock = threading.Lock()

    def wrap(self, work: Callable[[], T]) -> Callable[[], T]:
        def counted() -> T:
            with self.lock:
                self.count += 1
            try:
                return work()
            finally:
                with self.lock:
                    self.count -= 1

        return counted


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
