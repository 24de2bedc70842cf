"""The library entry point: `diagnose(inputs) -> Diagnosis`. The CLI, the server and tests call it."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import BinaryIO

from diagnose.artifacts import prefilter, reader, sniff
from diagnose.artifacts.pip import canonical
from diagnose.artifacts.streams import InflateBudget
from diagnose.engine import fingerprint, rank, scope
from diagnose.engine.match import ErrorLine, Matcher
from diagnose.errors import InputError
from diagnose.kb import compat, compiled
from diagnose.kb.compiled import KnowledgeBase
from diagnose.model import Diagnosis, Evidence, Facts, Finding, RuleVerdict, Skipped, walk
from diagnose.remedy.plan import make_plan

MAX_UNMATCHED = 5
# import names whose distribution is named otherwise (the rest: canonical(import name))
IMPORT_TO_DIST = {"flashinfer": "flashinfer-python", "cv2": "opencv-python", "yaml": "pyyaml", "PIL": "pillow",
                  "sklearn": "scikit-learn", "google": "protobuf", "vllm_flash_attn": "vllm"}


def load_kb(extra_rules: Iterable[str | Path] = (), use_cache: bool = True) -> KnowledgeBase:
    return compiled.load([Path(p) for p in extra_rules], use_cache=use_cache, derived=prefilter.derived_patterns)


def diagnose(
    inputs: list[str],
    *,
    stdin: BinaryIO | None = None,
    kb: KnowledgeBase | None = None,
    use_prefilter: bool = True,
    progress: Callable[[str, int, int | None], None] | None = None,
) -> Diagnosis:
    """Diagnose files, directories, bundles and '-' (stdin). InputError when nothing is readable.

    Large inputs go through the multi-pattern prefilter unless `use_prefilter` is False."""
    opened = reader.open_inputs(inputs, stdin=stdin)
    for source in opened.sources:
        source.progress = progress
    return _run(opened, kb or load_kb(), use_prefilter)


def diagnose_texts(artifacts: list[tuple[str, str | bytes]], kb: KnowledgeBase | None = None,
                   budget: InflateBudget | None = None) -> Diagnosis:
    """Diagnose in-memory artifacts given as (name, text) pairs (the server, tests); `budget` bounds
    what their compressed parts (tar members included) may inflate to."""
    opened = reader.ReadResult(budget=budget or InflateBudget())
    for name, text in artifacts:
        data = text.encode("utf-8") if isinstance(text, str) else text
        reader.add_stream(opened, name, io.BytesIO(data))
    return _run(opened, kb or load_kb())


def _prefilter_factory(kb: KnowledgeBase, enabled: bool):  # type: ignore[no-untyped-def]
    """Build the multi-pattern prefilter once, and only when a large input needs it."""
    if not enabled:
        return None
    built: list[prefilter.Prefilter] = []

    def get() -> prefilter.Prefilter:
        if not built:
            patterns = [s.regex for _, s in kb.signals() if s.regex]
            built.append(prefilter.Prefilter(patterns, compiled.cache_dir()))
        return built[0]

    return get


def _run(opened: reader.ReadResult, kb: KnowledgeBase, use_prefilter: bool = True) -> Diagnosis:
    diagnosis = Diagnosis(kb_version=kb.version, skipped=list(opened.skipped))
    matcher = Matcher(kb)
    facts = Facts()
    read_any = False
    prefilter = _prefilter_factory(kb, use_prefilter)
    exceptions: list[ErrorLine] = []
    cut: dict[int, int] = {}  # source index -> first line of the traceback the input ends inside
    last_frames: dict[int, int] = {}  # ... and the line of its last frame
    for source in opened.sources:
        matcher.start_source(source.name)
        result = sniff.scan(source, matcher.feed, prefilter, matcher.frame_known)
        if result.lines == 0:
            diagnosis.skipped.append(Skipped(source.name, "empty"))
            continue
        read_any = True
        exceptions.extend(
            ErrorLine(Evidence(source.name, tb.exception_line, tb.exception, "exception", "traceback"),
                      (matcher.source_index, tb.exception_line), True)
            for tb in result.tracebacks if tb.exception_line and tb.exception
        )
        if "." in result.facts.foreign_sources:  # a collect manifest: its bundle's package lists are foreign
            folder = source.name.rsplit("/", 1)[0] + "/" if "/" in source.name else source.name
            result.facts.foreign_sources = [folder if s == "." else s for s in result.facts.foreign_sources]
        if result.cut_at is not None:
            cut[matcher.source_index] = result.cut_at
            last_frames[matcher.source_index] = result.last_frame or result.cut_at
        facts.merge(result.facts, source.name)
        diagnosis.inputs.extend(result.segments)
    if not read_any:
        raise InputError(_nothing_readable(diagnosis))
    for module, where in matcher.seen_packages.items():
        facts.seen_packages.setdefault(canonical(IMPORT_TO_DIST.get(module, module)), where)
    _complete_facts(facts, kb)
    diagnosis.facts = facts
    hits = scope.admit(matcher.hits, kb, cut, last_frames)
    candidates, diagnosis.rejected = rank.assess_all(hits, facts, kb)
    scope.note_cut_evidence(candidates)
    scope.note_prose_evidence(candidates)
    diagnosis.findings = rank.rank(candidates, facts, kb)
    from diagnose.engine import catalog_notes  # the Xid / CUDA error catalogues (rules/catalog/)

    catalog_notes.annotate(diagnosis.findings, matcher.hits, kb)
    _withhold_unreliable(diagnosis, kb)
    diagnosis.set_aside = rank.set_aside(diagnosis.rejected, diagnosis.findings)
    diagnosis.plan = make_plan(diagnosis.findings, facts, kb.compat)
    diagnosis.unmatched_errors = _unmatched(exceptions, matcher, diagnosis)
    catalog_notes.annotate_unmatched(diagnosis.unmatched_errors, kb)
    if not diagnosis.findings and diagnosis.unmatched_errors:
        diagnosis.findings = _nearest_guess(diagnosis, facts, kb)
    from diagnose.engine.calibrate import calibrate  # raw scores -> what they have meant on unseen logs

    calibrate(diagnosis.findings, kb.compat)
    for note in sorted(set(matcher.timeouts)):
        diagnosis.skipped.append(Skipped("regex", note))
    return diagnosis


def _withhold_unreliable(diagnosis: Diagnosis, kb: KnowledgeBase) -> None:
    """Move the findings whose raw score the calibration table rates below its floor to the near-misses."""
    from diagnose.engine.calibrate import unreliable

    withheld = unreliable(diagnosis.findings, kb.compat)
    if not withheld:
        return
    dropped = {id(f) for f, _ in withheld}
    diagnosis.findings = [f for f in diagnosis.findings if id(f) not in dropped]
    for number, finding in enumerate(diagnosis.findings, 1):
        finding.rank = number
    diagnosis.rejected.extend(RuleVerdict(f.rule_id, round(f.confidence, 3), why,
                                           sorted({e.signal for e in f.evidence if e.signal})) for f, why in withheld)


def _nearest_guess(diagnosis: Diagnosis, facts: Facts, kb: KnowledgeBase) -> list[Finding]:
    """No signature matched: the known cause the unexplained errors are worded nearest to, as a guess."""
    from diagnose.engine import nearest

    guess = nearest.nearest(diagnosis.unmatched_errors, kb, {v.rule_id for v in diagnosis.rejected})
    if guess is None:
        return []
    words = ", ".join(guess.shared)
    reasons = [
        f"· no known signature of this cause matched: the unexplained error shares its rarest words ({words}) "
        f"with how this cause is worded in the knowledge base; a guess by similarity, next nearest "
        f"{guess.runner_up}. Run its verify step to know; a log of the failing step would settle it",
    ]
    candidate = rank.Candidate(kb.rules[guess.rule_id], guess.confidence, guess.evidence, reasons,
                               first=(0, guess.evidence[0].line if guess.evidence else 0), basis="guess")
    finding = rank.to_finding(candidate, facts)
    finding.rank = 1
    return [finding]


def _nothing_readable(diagnosis: Diagnosis) -> str:
    if not diagnosis.skipped:
        return "no input: give a file, a directory, or pipe a log into diagnose"
    first = diagnosis.skipped[0]
    more = f" (and {len(diagnosis.skipped) - 1} more)" if len(diagnosis.skipped) > 1 else ""
    return f"nothing to diagnose: {first.source}: {first.reason}{more}"


def _complete_facts(facts: Facts, kb: KnowledgeBase) -> None:
    """Facts derived from others: compute capability from the GPU name where not given."""
    table = kb.compat.get("gpu-compute-capability")
    for gpu in facts.gpus:
        if gpu.compute_capability is None and gpu.name:
            gpu.compute_capability = compat.compute_capability(table, gpu.name)
    for name, stated in facts.stated_gpus.items():
        if cc := compat.stated_compute_capability(table, name):
            stated["compute_capability"] = cc


def _unmatched(exceptions: list[ErrorLine], matcher: Matcher, diagnosis: Diagnosis) -> list[Evidence]:
    """The likely failing lines no finding explains: the exception of each traceback first (in
    the order they happened), then other error lines; each with a stable fingerprint."""
    reported = {f.rule_id for f in walk(diagnosis.findings)}
    # every line a reported rule matched, quoted as its evidence or not
    cited = {(h.evidence.source, h.evidence.line) for rid in reported for h in matcher.hits.get(rid, [])}
    # and the same lines again, numbers and ids aside: a signal keeps its first MAX_HITS_PER_SIGNAL hits, so the
    # 41st crash of a crash loop is not evidence, but it is the failure a finding explains, not another one
    cited_templates: set[str] | None = None  # worked out only if a line is left to compare with them
    known = {(e.evidence.source, e.evidence.line) for e in exceptions}
    candidates = exceptions + [e for e in matcher.error_lines if (e.evidence.source, e.evidence.line) not in known]
    lines = [e for e in candidates if (e.evidence.source, e.evidence.line) not in cited]
    if diagnosis.findings:
        lines = [e for e in lines if e.exception]
    lines.sort(key=lambda e: (not e.exception, e.position))
    out = []
    seen: set[str] = set()
    for line in lines:
        evidence = line.evidence
        evidence.template = fingerprint.template(evidence.text)
        if cited_templates is None:
            cited_templates = {fingerprint.template(h.evidence.text) for rid in reported for h in matcher.hits.get(rid, [])}
        if evidence.template in cited_templates:
            continue
        evidence.fingerprint = fingerprint.digest(evidence.template)
        if evidence.fingerprint not in seen:  # the same failure repeated (every rank) once
            seen.add(evidence.fingerprint)
            out.append(evidence)
        if len(out) == MAX_UNMATCHED:
            break
    return out

