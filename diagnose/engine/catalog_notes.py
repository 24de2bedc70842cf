"""Notes from the catalogues (rules/catalog/) on findings and on errors no rule explains.

A finding whose signals captured an Xid (a named group `xid`) or whose evidence names an Xid line
or a CUDA error gets, per distinct number, a CatalogNote (`finding.catalog`, in the JSON) and a
first fix step that says what the catalogue says: the meaning and, for an Xid, NVIDIA's immediate
and investigatory action and whether the GPU needs a reset or the node a drain. Every renderer
shows fix steps, so every output format carries it. An Xid the catalogue does not have is said
to be unknown. An unmatched error line that names one gets the same notes (`catalog`).
"""

from __future__ import annotations

from typing import Any

from diagnose.engine.match import Hit
from diagnose.kb.catalog import Catalog, mentions
from diagnose.kb.compiled import KnowledgeBase
from diagnose.model import CatalogNote, Evidence, Finding, walk

MAX_NOTES = 3
CAUSE_WORDS = {"hw": "hardware", "driver": "driver", "user-app": "the application",
               "system-memory-corruption": "system memory corruption", "bus": "the bus (PCIe)",
               "thermal": "thermal", "fb-corruption": "GPU memory (framebuffer) corruption"}


def annotate(findings: list[Finding], hits: dict[str, list[Hit]], kb: KnowledgeBase) -> None:
    catalog: Catalog | None = getattr(kb, "catalog", None)
    if catalog is None:
        return
    for finding in walk(findings):
        refs: list[tuple[str, int]] = []
        for hit in sorted(hits.get(finding.rule_id, []), key=lambda h: h.position):
            xid = hit.groups.get("xid")
            if xid and xid.isascii() and xid.isdigit() and len(xid) < 10 and ("xid", int(xid)) not in refs:
                refs.append(("xid", int(xid)))
        for e in finding.evidence:
            refs += [r for r in mentions(catalog, e.text) if r not in refs]
        notes = [note(catalog, kind, number) for kind, number in refs[:MAX_NOTES]]
        if notes:
            finding.catalog = notes
            finding.fix[:0] = [{"step": n.summary} for n in notes]


def annotate_unmatched(errors: list[Evidence], kb: KnowledgeBase) -> None:
    catalog: Catalog | None = getattr(kb, "catalog", None)
    for e in errors if catalog else []:
        assert catalog is not None
        refs = mentions(catalog, e.text)[:MAX_NOTES]
        if refs:
            e.catalog = [note(catalog, kind, number) for kind, number in refs]


def note(catalog: Catalog, kind: str, number: int) -> CatalogNote:
    if kind == "xid":
        row = catalog.xids.get(number)
        return xid_note(catalog, row) if row else unknown_xid(catalog, number)
    return cuda_note(catalog.cuda[number])


def xid_note(catalog: Catalog, row: dict[str, Any]) -> CatalogNote:
    words = [catalog.actions.get(code, code) for code in (row["immediate"], row["investigatory"]) if code]
    action = "; then ".join(words) if words else "the catalogue gives no action"
    causes = ", ".join(CAUSE_WORDS.get(c, c) for c in row["causes"]) or None
    reset = "yes" if row["reset"] else "no"
    drain = "yes" if row["drain"] else "no"
    summary = (f"Xid {row['xid']} ({row['name']}, {row['mnemonic']}) in NVIDIA's Xid catalog: {row['meaning']} "
               f"NVIDIA's action: {action}. GPU reset needed: {reset}; node drain needed: {drain}."
               + (f" Possible causes (NVIDIA's older table): {causes}." if causes else ""))
    return CatalogNote("xid", row["xid"], True, row["mnemonic"], None, row["name"], row["meaning"], causes,
                       action, row["reset"], row["drain"], list(row["rules"]), row["source"], summary)


def unknown_xid(catalog: Catalog, number: int) -> CatalogNote:
    top = max(catalog.xids, default=0)
    meaning = (f"Xid {number} is not in NVIDIA's Xid catalog as this knowledge base holds it (Xids 1-{top}): "
               "a newer driver may have added it; read the installed driver's release notes and the current "
               "catalog, and treat it as a GPU fault until they say otherwise.")
    return CatalogNote("xid", number, False, meaning=meaning,
                       source="https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html", summary=meaning)


def cuda_note(row: dict[str, Any]) -> CatalogNote:
    names = " / ".join(n for n in (row["runtime"], row["driver"]) if n)
    summary = (f"CUDA error {row['code']} ({names}, \"{row['message']}\"): {row['meaning']}"
               + (f" Usual causes: {row['causes']}" if row.get("causes") else ""))
    return CatalogNote("cuda-error", row["code"], True, row["runtime"] or row["driver"],
                       row["driver"] if row["runtime"] else None, row["message"], row["meaning"],
                       row.get("causes"), rules=list(row["rules"]), source=row["source"], summary=summary)
