"""One root cause of the Markdown post-mortem: evidence, why this confidence, symptoms, fix, verify.

Code blocks stand at the top level and reasons start with a word (`for:`, `against:`, `note:`), not
with the engine's `+` / `-`, which CommonMark would read as a nested, empty-looking list.

>>> reason("+ the kernel log holds an NVRM Xid 79"), reason("- torch 2.9 already has the fix")
('- for: the kernel log holds an NVRM Xid 79', '- against: torch 2.9 already has the fix')
"""

from __future__ import annotations

from diagnose.model import Finding
from diagnose.render.md_text import MAX_QUOTE, _cut, _where, code, fence, prose

REASON_WORDS = {"+": "for", "-": "against", "\u2212": "against", "\u00b7": "note"}  # the engine's marks, in words


def finding(f: Finding) -> list[str]:
    out = [f"### {f.rank}. {prose(f.title)}", ""]
    out += [f"{code(f.rule_id)} · category {f.category} · severity **{f.severity}** · confidence **{f.confidence:.2f}**",
            "", prose(f.summary), "", "**Evidence**", ""]
    out += fence([_where(e) + "  " + _cut(e.text, MAX_QUOTE) for e in f.evidence], "text")
    if f.reasons:
        out += ["", "Why this confidence:", ""] + [reason(r) for r in f.reasons]
    if f.symptoms:
        out += ["", "**Symptoms it explains**", ""]
        for s in f.symptoms:
            out += _symptom(s, f.rule_id)
    out += ["", "**Fix**", ""]
    for i, step in enumerate(f.fix, 1):
        out += [f"**Step {i}.** {prose(step['step'])}", ""]
        if step.get("run"):
            out += [*fence([step["run"]], "sh"), ""]
        if step.get("caution"):
            out += [f"> **Caution:** {prose(step['caution'])}", ""]
    out += ["", "**Verify** (read-only; run them where the failure happened)", ""]
    for v in f.verify:
        expect = v.get("expect") or {}
        want = ", ".join(f"{k.replace('_', ' ')} {code(str(val))}" for k, val in expect.items())
        out += [f"Expect {want}:" if want else "Run:", "", *fence([v["run"]], "sh"), ""]
    if f.verified_by:
        out += ["**Where this fix was confirmed**", ""] + [f"- {prose(v)}" for v in f.verified_by] + [""]
    if f.references:
        out += ["**References**", ""] + [f"- <{r}>" if r.startswith("http") else f"- {prose(r)}" for r in f.references]
    return [*out, ""]


def _symptom(s: Finding, of: str) -> list[str]:
    out = [f"{code(s.rule_id)} (explained by {code(of)}): {prose(s.title)} (confidence {s.confidence:.2f})", ""]
    if s.evidence:
        out += [*fence([_where(e) + "  " + _cut(e.text, MAX_QUOTE) for e in s.evidence[:3]], "text"), ""]
    for nested in s.symptoms:
        out += _symptom(nested, s.rule_id)
    return out


def reason(text: str) -> str:
    """One reason as a list item that starts with a word: the engine's `+ ...` would be a nested list."""
    mark, _, rest = text.partition(" ")
    word = REASON_WORDS.get(mark)
    return f"- {word}: {prose(rest)}" if word and rest else f"- {prose(text.lstrip('+-−· '))}"
