"""A thread's messages and files -> one diagnosis -> the reply: the Block Kit summary of render/slack.py
with the feedback controls under it, and the Markdown post-mortem. Everything here is redacted.

The failure's fingerprint is what the Diagnosis already carries: the top cause's id with the templates
of its evidence lines (engine/fingerprint.py), or the unmatched errors' fingerprints when no rule knew it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from diagnose import api
from diagnose.artifacts.streams import InflateBudget
from diagnose.engine import fingerprint
from diagnose.kb.compiled import KnowledgeBase
from diagnose.model import Diagnosis, Skipped
from diagnose.redact import redact_diagnosis
from diagnose.render import RENDERERS, slack

RIGHT = "diagnose_right"
WRONG = "diagnose_wrong"
NONE_OF_THESE = "none"
MAX_OPTIONS = 20  # a static select takes up to 100; the candidates worth naming are fewer


@dataclass
class Answer:
    diagnosis: Diagnosis  # redacted
    message: dict[str, Any]  # {"text", "blocks"}
    postmortem: str  # Markdown
    failure: str  # the failure's fingerprint
    evidence: list[str] = field(default_factory=list)  # the evidence lines' fingerprints


def diagnose(artifacts: list[tuple[str, bytes]], kb: KnowledgeBase, notes: list[str], answer_id: str,
             max_inflated: int) -> Answer:
    """InputError when nothing in the thread is readable."""
    budget = InflateBudget(per_input=max_inflated, total=max_inflated)
    raw = api.diagnose_texts(list[tuple[str, str | bytes]](artifacts), kb=kb, budget=budget)
    raw.skipped.extend(Skipped("slack", note) for note in notes)
    raw.drop_explanations()
    diagnosis = redact_diagnosis(raw)
    failure, evidence = failure_fingerprint(raw)
    message = slack.message(diagnosis)
    if diagnosis.findings:
        blocks = message["blocks"]
        at = len(blocks) - 1 if len(blocks) < slack.MAX_BLOCKS else slack.MAX_BLOCKS - 2
        message["blocks"] = blocks[:at] + [feedback_block(diagnosis, answer_id)] + blocks[at:][-1:]
    return Answer(diagnosis, message, RENDERERS["markdown"](diagnosis), failure, evidence)


def failure_fingerprint(d: Diagnosis) -> tuple[str, list[str]]:
    if d.findings:
        top = d.findings[0]
        prints = sorted({fingerprint.fingerprint(e.text) for e in top.evidence})
        key = top.rule_id + ":" + ",".join(prints)
    else:
        prints = [e.fingerprint or fingerprint.fingerprint(e.text) for e in d.unmatched_errors]
        key = "unmatched:" + ",".join(prints)
    return hashlib.sha1(key.encode()).hexdigest()[:16], prints


def feedback_block(d: Diagnosis, answer_id: str) -> dict[str, Any]:
    """"Right cause" and a menu "Wrong cause: it was ..." of the other candidates and "none of these"."""
    options = [_option(f"{f.title} ({f.rule_id})", f"{answer_id}|{f.rule_id}") for f in d.findings[1:MAX_OPTIONS]]
    options.append(_option("None of these", f"{answer_id}|{NONE_OF_THESE}"))
    return {"type": "actions", "block_id": f"feedback-{answer_id}", "elements": [
        {"type": "button", "action_id": RIGHT, "style": "primary", "value": answer_id,
         "text": {"type": "plain_text", "text": "Right cause"}},
        {"type": "static_select", "action_id": WRONG, "options": options,
         "placeholder": {"type": "plain_text", "text": "Wrong cause: it was…"}},
    ]}


def repeat_message(permalink: str, title: str, when: str) -> dict[str, Any]:
    """The short reply for a failure this channel saw within a day."""
    text = f"Same failure as <{permalink}|this earlier thread> ({when}): *{slack.escape(title)}*"
    return {"text": f"Same failure as {permalink}", "blocks": [slack.mrkdwn_section(text)]}


def _option(text: str, value: str) -> dict[str, Any]:
    label = text if len(text) <= 75 else text[:74] + "…"
    return {"text": {"type": "plain_text", "text": label}, "value": value[:150]}
