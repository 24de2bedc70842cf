"""The chat-ops HTTP service (`diagnose serve`, the `[server]` extra).

    settings.py  what the service is allowed to do: token, signing secret, limits
    guards.py    ASGI middleware: one log line per request, in-flight limit (503), body size (413), read time (408)
    auth.py      bearer token and Slack request signatures (v0)
    bodies.py    a request body -> the (name, bytes) artifacts it holds
    app.py       the FastAPI routes: POST /v1/diagnose, POST /slack/commands, GET /healthz
    serve.py     bind, then run uvicorn

The service diagnoses and renders; it never runs a fix or verify command, and it logs no log content.
"""
