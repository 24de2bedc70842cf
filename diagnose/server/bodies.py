"""A request body -> the (name, bytes) artifacts it holds: a raw log, a JSON list, or multipart files.

>>> artifacts_from_json(b'{"artifacts": [{"name": "server.log", "text": "RuntimeError: boom"}]}', 64)
[('server.log', b'RuntimeError: boom')]
>>> artifacts_from_json(b'{"artifacts": "x"}', 64)
Traceback (most recent call last):
...
diagnose.server.bodies.BadBody: artifacts: Input should be a valid list
"""

from __future__ import annotations

import json

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from diagnose import lazy_re

MAX_NAME = 200
CONTROL = lazy_re.compile(r"[\x00-\x1f\x7f]")


class BadBody(ValueError):
    """The request body is not one of the accepted shapes; the message is one line for the client."""


class ArtifactIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=MAX_NAME, description="Shown in evidence as `name:line`.")
    text: str = Field(description="The artifact's content: a log, a traceback, nvidia-smi output, pip freeze ...")


class ArtifactsIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    artifacts: list[ArtifactIn] = Field(min_length=1)


MAX_NUMBER = 20  # characters of a JSON number in a request: none of ours needs more
MAX_DEPTH = 32  # nesting of a request's JSON: ours is 3 deep


def _number(text: str) -> float:
    if len(text) > MAX_NUMBER:
        raise BadBody(f"invalid JSON: a number of {len(text)} characters (at most {MAX_NUMBER})")
    return float(text)


def _depth(body: bytes) -> int:
    """How deep `[` and `{` nest outside strings, in one pass (before the parser recurses)."""
    depth = deepest = 0
    in_string = escaped = False
    for byte in body:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):
            depth += 1
            deepest = max(deepest, depth)
            if deepest > MAX_DEPTH:
                break
        elif byte in (0x5D, 0x7D):
            depth -= 1
    return deepest


def artifacts_from_json(body: bytes, max_artifacts: int) -> list[tuple[str, bytes]]:
    """
    >>> artifacts_from_json(b'{"artifacts": [{"name": "a", "text": "x", "n": ' + b"9" * 5000 + b'}]}', 64)
    Traceback (most recent call last):
    ...
    diagnose.server.bodies.BadBody: invalid JSON: a number of 5000 characters (at most 20)
    >>> artifacts_from_json(b"[" * 100_000, 64)
    Traceback (most recent call last):
    ...
    diagnose.server.bodies.BadBody: invalid JSON: nested more than 32 deep
    """
    if _depth(body) > MAX_DEPTH:
        raise BadBody(f"invalid JSON: nested more than {MAX_DEPTH} deep")
    try:
        data = json.loads(body, parse_int=_number, parse_float=_number)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise BadBody(f"invalid JSON: {exc}") from None
    try:
        parsed = ArtifactsIn.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "body"
        raise BadBody(f"{where}: {first['msg']}") from None
    if len(parsed.artifacts) > max_artifacts:
        raise BadBody(f"too many artifacts: at most {max_artifacts}")
    return [(safe_name(a.name, i), a.text.encode("utf-8", "replace")) for i, a in enumerate(parsed.artifacts, 1)]


def safe_name(name: str | None, index: int) -> str:
    """A client's name for an artifact as it will be shown: no control characters, bounded."""
    cleaned = CONTROL.sub("?", (name or "").strip())[:MAX_NAME]
    return cleaned or f"artifact-{index}"


def check_not_empty(artifacts: list[tuple[str, bytes]]) -> None:
    if not artifacts:
        raise BadBody("no artifact: send a log as the body, JSON {\"artifacts\": [{\"name\", \"text\"}]}, or multipart files")


OPENAPI_BODY = {
    "required": True,
    "description": "A raw log (any content type but JSON and multipart), a JSON list of artifacts, or multipart files.",
    "content": {
        "text/plain": {"schema": {"type": "string"}, "example": "RuntimeError: operator torchvision::nms does not exist"},
        "application/json": {"schema": {
            "type": "object", "required": ["artifacts"], "additionalProperties": False,
            "properties": {"artifacts": {"type": "array", "minItems": 1, "items": ArtifactIn.model_json_schema()}},
        }},
        "multipart/form-data": {
            "schema": {"type": "object", "properties": {
                "files": {"type": "array", "items": {"type": "string", "format": "binary"}}}},
        },
    },
}
