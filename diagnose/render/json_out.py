"""The JSON contract (docs/diagnosis.schema.json): versioned, findings best first."""

from __future__ import annotations

import json

from diagnose import __version__
from diagnose.model import Diagnosis


def render(diagnosis: Diagnosis) -> str:
    data = diagnosis.to_dict()
    data = {"schema_version": data.pop("schema_version"), "diagnose_version": __version__,
            "kind": data.pop("kind", "diagnosis"), **data}
    for key in ("rejected", "set_aside", "plan"):
        if not data.get(key):
            data.pop(key, None)
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
