"""One task's work: diagnose a node (or one byte range of its large file) with the engine, and keep
what the fleet report needs. Plain data out, so that Ray moves little; no ray import here."""

from __future__ import annotations

import gzip
import io
from pathlib import Path
from typing import Any

from diagnose import api
from diagnose.errors import DiagnoseError
from diagnose.fleet import times
from diagnose.fleet.lake import Task, read_range
from diagnose.kb.compiled import KnowledgeBase
from diagnose.model import Evidence

_KB: list[KnowledgeBase] = []  # one compiled KB per worker process


def kb() -> KnowledgeBase:
    if not _KB:
        _KB.append(api.load_kb())
    return _KB[0]


def run(task: Task, keep_diagnosis: bool = False) -> dict[str, Any]:
    """{node, status: found|clean|unreadable, reason, bytes, skipped, findings[, diagnosis]}."""
    out: dict[str, Any] = {"node": task.node, "status": "clean", "reason": None, "bytes": task.size,
                           "skipped": [], "findings": []}
    range_data = b""
    try:
        if task.part:
            path, start, end = task.part
            range_data = read_range(path, start, end)
            texts = [(f, Path(f).read_bytes()) for f in task.files]
            diagnosis = api.diagnose_texts([*texts, (f"{path}@{start}", range_data)], kb=kb())
        else:
            diagnosis = api.diagnose(task.files, kb=kb())
    except (DiagnoseError, OSError) as e:
        out.update(status="unreadable", reason=str(e))
        return out
    out["skipped"] = [[s.source, s.reason] for s in diagnosis.skipped]
    weights = {(r.id, s.id): s.weight for r, s in kb().signals()}
    for finding in diagnosis.findings:
        quoted = finding.evidence or [e for s in finding.symptoms for e in s.evidence]
        best = max(quoted, key=lambda e: weights.get((finding.rule_id, e.signal), 0.0), default=None)
        stamps = _times(quoted, task, range_data)
        out["findings"].append({
            "rule_id": finding.rule_id, "title": finding.title, "severity": finding.severity,
            "confidence": round(finding.confidence, 3), "count": max(1, len(quoted)),
            "first": min(stamps, default=None), "last": max(stamps, default=None),
            "evidence": best and {"source": best.source, "line": best.line, "text": best.text[:300]},
        })
    out["status"] = "found" if out["findings"] else "clean"
    if keep_diagnosis:
        from diagnose.render import RENDERERS

        out["diagnosis"] = RENDERERS["json"](diagnosis)
    return out


def _times(evidence: list[Evidence], task: Task, range_data: bytes) -> list[str]:
    """The time of each evidence line: its own stamp, else the last one before it in its source."""
    found = [t for e in evidence if (t := times.parse(e.text))]
    if len(found) == len(evidence):
        return found
    by_source: dict[str, set[int]] = {}
    for e in evidence:
        if times.parse(e.text):
            continue
        by_source.setdefault(e.source, set()).add(e.line)
    for source, wanted in by_source.items():
        lines = _lines(source, task, range_data)
        if lines is not None:
            found.extend(times.at_lines(lines, wanted).values())
    return found


def _lines(source: str, task: Task, range_data: bytes):  # type: ignore[no-untyped-def]
    if task.part and source == f"{task.part[0]}@{task.part[1]}":
        return io.TextIOWrapper(io.BytesIO(range_data), errors="replace")
    if source not in task.files:
        return None  # a bundle member
    if source.endswith(".gz"):
        return gzip.open(source, "rt", errors="replace")
    return open(source, errors="replace")


def merge(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """One node's result from its tasks' (a large file's byte ranges)."""
    if len(parts) == 1:
        return parts[0]
    out = dict(parts[0], bytes=sum(p["bytes"] for p in parts), skipped=[s for p in parts for s in p["skipped"]])
    rules: dict[str, dict[str, Any]] = {}
    for part in parts:
        for f in part["findings"]:
            have = rules.get(f["rule_id"])
            if have is None:
                rules[f["rule_id"]] = dict(f)
                continue
            have["count"] += f["count"]
            have["first"] = min(x for x in (have["first"], f["first"]) if x) if have["first"] or f["first"] else None
            have["last"] = max(x for x in (have["last"], f["last"]) if x) if have["last"] or f["last"] else None
            if f["confidence"] > have["confidence"]:
                have.update(confidence=f["confidence"], evidence=f["evidence"])
    out["findings"] = sorted(rules.values(), key=lambda f: -f["confidence"])
    unreadable = [p for p in parts if p["status"] == "unreadable"]
    out["status"] = "found" if out["findings"] else ("unreadable" if len(unreadable) == len(parts) else "clean")
    out["reason"] = "; ".join(p["reason"] for p in unreadable) or None
    return out
