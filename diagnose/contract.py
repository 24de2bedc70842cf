"""The JSON contract as shipped: docs/diagnosis.schema.json in a checkout, diagnose/_docs/ in a wheel."""

from __future__ import annotations

from pathlib import Path

from diagnose.errors import DiagnoseError

NAME = "diagnosis.schema.json"


def schema_path() -> Path:
    here = Path(__file__).resolve().parent
    for candidate in (here.parent / "docs" / NAME, here / "_docs" / NAME):
        if candidate.is_file():
            return candidate
    raise DiagnoseError(f"{NAME} is not installed with this copy of diagnose; reinstall gpu-diagnose")


def schema_text() -> str:
    """The JSON Schema of `--format json` (and of the service's answers), as text."""
    return schema_path().read_text(encoding="utf-8")
