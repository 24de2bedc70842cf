"""`diagnose feedback export`: the answers people marked wrong, as draft fixture folders.

Each folder holds the answer's redacted evidence lines as `slack-thread.log` and an `expected.yaml`
whose `first` is the cause the person picked (none: a new rule is needed), with the source and the
`how` left for a person to finish. A draft is never a fixture until someone adds the real log.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from diagnose.slack.answer import NONE_OF_THESE
from diagnose.slack.store import Store, Verdict

TODO = "TODO: "


def export(store: Store, out: Path) -> list[Path]:
    written = []
    for v in store.verdicts("wrong"):
        folder = out / _name(v)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "slack-thread.log").write_text(v.answer.excerpt + "\n", encoding="utf-8")
        (folder / "expected.yaml").write_text(yaml.safe_dump(_expected(v), sort_keys=False), encoding="utf-8")
        written.append(folder)
    return written


def _expected(v: Verdict) -> dict[str, object]:
    a = v.answer
    expected: dict[str, object] = {
        "source": f"{TODO}the public issue or the run this log came from (Slack answer {a.id}"
                  + (f", {a.permalink}" if a.permalink else "") + ")",
        "how": f"{TODO}say where the log came from; the evidence lines below are redacted excerpts, replace "
               "them with the real log. Marked wrong in Slack: diagnose answered "
               f"{a.top_rule or 'no known failure'}; the person said "
               + ("none of the candidates is right" if v.actual == NONE_OF_THESE else f"it was {v.actual}") + f". Evidence fingerprints: {', '.join(a.evidence)}.",
    }
    if v.actual and v.actual != NONE_OF_THESE:
        expected["first"] = v.actual
    else:
        expected["first"] = f"{TODO}a new rule's id"
    if a.top_rule and a.top_rule != v.actual:
        expected["absent"] = [a.top_rule]  # the cause it named, said wrong: check it before keeping this line
    return expected


def _name(v: Verdict) -> str:
    cause = v.actual if v.actual and v.actual != NONE_OF_THESE else "unknown"
    return re.sub(r"[^a-z0-9-]+", "-", f"{cause}--slack-{v.answer.id}".lower())
