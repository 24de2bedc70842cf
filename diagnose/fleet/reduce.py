"""Join per-node results into the fleet report: each cause with its nodes, first / last time, count,
the strongest evidence line per node, and the causes that co-occur on a node in the same window."""

from __future__ import annotations

import datetime as dt
from typing import Any

WINDOW = dt.timedelta(hours=1)


def report(lake: str, results: list[dict[str, Any]], window: dt.timedelta = WINDOW) -> dict[str, Any]:
    results = sorted(results, key=lambda r: r["node"])
    causes: dict[str, dict[str, Any]] = {}
    for r in results:
        for f in r["findings"]:
            c = causes.setdefault(f["rule_id"], {"rule_id": f["rule_id"], "title": f["title"],
                                                 "severity": f["severity"], "nodes": [], "count": 0,
                                                 "first": None, "last": None, "evidence": {},
                                                 "co_occurs": {}})
            c["nodes"].append(r["node"])
            c["count"] += f["count"]
            c["first"] = _pick(min, c["first"], f["first"])
            c["last"] = _pick(max, c["last"], f["last"])
            c["evidence"][r["node"]] = f["evidence"]
        for a in r["findings"]:
            for b in r["findings"]:
                if a["rule_id"] != b["rule_id"] and _near(a, b, window):
                    causes[a["rule_id"]]["co_occurs"].setdefault(b["rule_id"], []).append(r["node"])
    total = len(results)
    for c in causes.values():
        c["scope"] = _scope(len(c["nodes"]), total)
    ordered = sorted(causes.values(), key=lambda c: (-len(c["nodes"]), c["rule_id"]))
    return {
        "lake": lake, "nodes": total, "bytes": sum(r["bytes"] for r in results),
        "window_s": int(window.total_seconds()), "causes": ordered,
        "clean": [r["node"] for r in results if r["status"] == "clean"],
        "unreadable": [{"node": r["node"], "reason": r["reason"]} for r in results if r["status"] == "unreadable"],
        "failed": [{"node": r["node"], "reason": r["reason"]} for r in results if r["status"] == "failed"],
        "skipped": {r["node"]: r["skipped"] for r in results if r["skipped"]},
    }


def _pick(how, a: str | None, b: str | None) -> str | None:  # type: ignore[no-untyped-def]
    present = [x for x in (a, b) if x]
    return how(present) if present else None


def _near(a: dict[str, Any], b: dict[str, Any], window: dt.timedelta) -> bool:
    """Two causes on one node whose spans come within `window` of each other (no times: the same node)."""
    if not (a["first"] and b["first"]):
        return True
    a0, a1 = dt.datetime.fromisoformat(a["first"]), dt.datetime.fromisoformat(a["last"] or a["first"])
    b0, b1 = dt.datetime.fromisoformat(b["first"]), dt.datetime.fromisoformat(b["last"] or b["first"])
    return a0 - window <= b1 and b0 - window <= a1


def _scope(hit: int, total: int) -> str:
    """One bad node, a few, or the fleet (a quarter of the nodes or more)."""
    if hit == 1:
        return "one node"
    return "fleet-wide" if total and hit * 4 >= total else "several nodes"
