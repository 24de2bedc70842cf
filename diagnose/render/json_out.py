"""The JSON contract (docs/diagnosis.schema.json): versioned, findings best first."""

from __future__ import annotations

import json

from diagnose.model import Diagnosis


def render(diagnosis: Diagnosis) -> str:
    data = diagnosis.to_dict()
    for key in ("rejected", "set_aside", "plan"):
        if not data.get(key):
            data.pop(key, None)
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
