"""A finding's confidence as the chance it is the root cause, from what raw scores have meant on unseen logs.

The engine's raw score combines signal weights and facts; what it is worth is measured, not assumed. The table
rules/compat/confidence-calibration.yaml (written by scripts/fit_calibration.py) holds, for first-ranked findings
on the holdout sets measured before any tuning on them, how often a raw score was the true cause. Raw scores
between 0.5 and 0.7 were right about 9 times in 10 there, so printing them as 0.6 undersold them.

- The first finding's confidence is the table's value at its raw score (linear between rows).
- A cause named only from the frames of a cut traceback keeps at most its raw value: the sets held too few such
  cases to say what it is worth, and what is missing is missing.
- A guess by similarity (no signature matched) is at most GUESS_MAX, the share of guesses that were right.
- A later finding is at most what the first leaves (1 - its confidence), but not below SECOND_FLOOR: both may be
  real, but at most one of them is the cause the log shows first.
- Symptoms folded under a cause keep their raw value (they say a thing was seen, not that it is the cause).
- A finding whose raw score the table puts below REPORT_FLOOR is not reported (unreliable): on unseen logs such
  scores were almost never the cause, so it is a near-miss for --explain, with the table's figures, not an answer.

The reason list says what the raw score was and what the table says, so --explain and the post-mortem show both.
"""

from __future__ import annotations

from typing import Any

from diagnose.engine.rank import MAX_CONFIDENCE
from diagnose.model import Finding

TABLE = "confidence-calibration"
GUESSES_RIGHT = (16, 25)  # guesses by similarity on those sets: right, offered
GUESS_MAX = 0.65  # a guess is at most about the share of guesses that were right (64%)
SECOND_FLOOR = 0.1  # a later finding still reads as possible, not as ruled out
REPORT_FLOOR = 0.2  # a log-based finding the table rates below this is withheld (the table's raw 0.30 row)


def interpolate(rows: list[dict[str, Any]] | None, raw: float) -> float:
    """The table's value at `raw`: linear between its rows, from (0, 0) to the first, flat after the last."""
    if not rows:
        return raw
    points = [(0.0, 0.0)] + [(float(r["raw"]), float(r["calibrated"])) for r in rows]
    for (x0, y0), (x1, y1) in zip(points, points[1:]):
        if raw <= x1:
            return y1 if x1 <= x0 else y0 + (y1 - y0) * (raw - x0) / (x1 - x0)
    return points[-1][1]


def _row_for(rows: list[dict[str, Any]], raw: float) -> dict[str, Any] | None:
    """The row whose raw range holds `raw` (else the nearest), for the reason's figures."""
    def distance(row: dict[str, Any]) -> float:
        low, _, high = str(row.get("raw_range", "")).partition("-")
        try:
            return max(float(low) - raw, raw - float(high), 0.0)
        except ValueError:
            return abs(float(row["raw"]) - raw)
    return min(rows, key=distance, default=None)


def _seen(rows: list[dict[str, Any]], raw: float) -> str:
    """`: of N first findings scored <range> on logs ... R were the true cause`, from the row holding `raw`."""
    row = _row_for(rows, raw)
    if not row or not row.get("findings"):
        return ""
    plural = "s" if row["findings"] != 1 else ""
    return (f": of {row['findings']} first finding{plural} scored {row['raw_range']} on logs the knowledge base was "
            f"not tuned on, {row['right']} were the true cause")


def unreliable(findings: list[Finding], compat: dict[str, Any]) -> list[tuple[Finding, str]]:
    """The top-level findings the table rates below REPORT_FLOOR, each with the reason in words. A cause named from
    a cut traceback or by similarity has its own bound and is kept; so is one the table has no row for."""
    rows = (compat.get(TABLE) or {}).get("rows") or []
    out = []
    for finding in findings:
        if not rows or finding.basis in ("cut", "guess"):
            continue
        value = interpolate(rows, finding.confidence)
        if value >= REPORT_FLOOR:
            continue
        out.append((finding, f"raw score {finding.confidence:.2f} is worth {value:.2f} after calibration"
                             f"{_seen(rows, finding.confidence)}, below {REPORT_FLOOR}: not reported"))
    return out


def calibrate(findings: list[Finding], compat: dict[str, Any]) -> None:
    """Rewrite each top-level finding's confidence, best first, in place; the order is kept."""
    rows = (compat.get(TABLE) or {}).get("rows") or []
    if not rows or not findings:
        return
    first: float | None = None
    for finding in findings:
        raw = finding.confidence
        value = interpolate(rows, raw)
        why = ""
        if finding.basis == "cut":
            value = min(value, raw)
            why = "; a cause named from a cut traceback keeps its raw value at most"
        elif finding.basis == "guess" and value > GUESS_MAX:
            value = GUESS_MAX
            why = (f"; a guess by similarity is at most {GUESS_MAX:.2f} ({GUESSES_RIGHT[0]} of {GUESSES_RIGHT[1]} "
                   f"such guesses were right)")
        if first is not None:
            cap = max(SECOND_FLOOR, 1 - first)
            if value > cap:
                value = cap
                why += (f"; ranked below a finding at {first:.2f}, it is at most {cap:.2f} likely to be the cause "
                        f"instead")
        value = round(min(max(value, 0.0), MAX_CONFIDENCE), 3)
        if first is None:
            first = value
        seen = _seen(rows, raw)
        if value != round(raw, 3):
            finding.reasons.append(
                f"· confidence {value:.2f} calibrated from the evidence's raw score {raw:.2f}{seen}{why}")
        finding.confidence = value
