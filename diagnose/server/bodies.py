"""A request body -> the (name, bytes) artifacts it holds: a raw log, a JSON list, or multipart files.

>>> artifacts_from_json(b'{"artifacts": [{"name": "server.log", "text": "RuntimeError: boom"}]}', 64)
[('server.log', b'RuntimeError: boom')]
>>> artifacts_from_json(b'{"artifacts": "x"}', 64)
Traceback (most recent call last):
...
diagnose.server.bodies.BadBody: artifacts: Input should be a valid list
"""

from __future__ import annotations

import bz2
import json
import lzma
import re
import zlib
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

MAX_NAME = 200
CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class BadBody(ValueError):
    """The request body is not one of the accepted shapes; the message is one line for the client."""


class TooLargeInflated(BadBody):
    """A compressed artifact that inflates past the limit (a decompression bomb, or just too big)."""


def inflate(data: bytes, limit: int, depth: int = 0) -> bytes:
    """A gzip / bzip2 / xz artifact decompressed here, at most `limit` bytes, so that a small body cannot
    make a worker read gigabytes; anything else (a tar bundle included) is returned as it is.

    >>> import gzip
    >>> inflate(gzip.compress(b"RuntimeError: boom"), 100)
    b'RuntimeError: boom'
    >>> inflate(gzip.compress(bytes(10_000)), 1000)
    Traceback (most recent call last):
    ...
    diagnose.server.bodies.TooLargeInflated: a compressed artifact inflates past 1000 bytes
    """
    make: Callable[[], Any]
    if data[:2] == b"\x1f\x8b":
        make = lambda: zlib.decompressobj(wbits=31)  # noqa: E731
    elif data[:3] == b"BZh":
        make = bz2.BZ2Decompressor
    elif data[:6] == b"\xfd7zXZ\x00":
        make = lzma.LZMADecompressor
    else:
        return data
    out, rest = b"", data
    while rest:  # concatenated members (cat a.gz b.gz)
        decoder = make()
        try:
            out += decoder.decompress(rest, limit + 1 - len(out))
        except (zlib.error, OSError, EOFError, lzma.LZMAError, ValueError):
            return data  # corrupt: the reader reads up to the damage and says so
        if len(out) > limit:
            raise TooLargeInflated(f"a compressed artifact inflates past {limit} bytes")
        if not decoder.eof:
            return data  # truncated, and small: the reader reads up to the cut and says so
        rest = decoder.unused_data
    return inflate(out, limit, depth + 1) if depth < 2 else out


class ArtifactIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=MAX_NAME, description="Shown in evidence as `name:line`.")
    text: str = Field(description="The artifact's content: a log, a traceback, nvidia-smi output, pip freeze ...")


class ArtifactsIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    artifacts: list[ArtifactIn] = Field(min_length=1)


def artifacts_from_json(body: bytes, max_artifacts: int) -> list[tuple[str, bytes]]:
    try:
        data = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
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
