"""When no signature matched: the known cause whose wording the unexplained errors are nearest to.

A log whose failing line no rule's signal matches would get nothing. The KB still knows a great deal
about it: each rule's title, summary, description (which lists how other tools and versions word the
same failure) and its `examples.match` lines. The unexplained error lines (diagnosis.unmatched_errors,
the exception of each traceback first) are compared with each rule's text by BM25, the words that few
rules use counting most. The nearest rule is offered only when it is clearly nearer than the next one,
and then as a guess: a low confidence, the shared words and the runner-up in its reasons, its fix and
verify as the rule gives them (the verify step says whether the guess was right).

Never offered:
- a rule the evidence was already weighed for and rejected (diagnosis.rejected): the KB judged it;
- a rule one of whose `examples.no_match` lines an error line resembles: the KB says that line is not it;
- from lines of package lists, nvidia-smi tables, collect_env dumps or a bundle's manifest, nor from INFO
  or warning lines or counters that read 0: those are the state of a system, not its failure.

Measured when it was built: on 218 logs of four holdouts, with the KB as it stood
before any of them was collected, it named 10 of the 36 silent cases that had an unexplained error line,
and 4 wrongly (neighbouring ids: driver-too-old / nvidia-driver-not-loaded, nccl-other / its causes);
it offered nothing on any of the 72 healthy and near-miss fixtures.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

from diagnose import lazy_re
from diagnose.kb.compiled import KnowledgeBase
from diagnose.model import GUESS_SIGNAL, Evidence

MIN_SCORE = 10.0  # BM25 score of the nearest rule (a few rare shared words)
MIN_RATIO = 1.3  # ... and this much above the next rule's
CONFIDENCE = (0.35, 0.5)  # at MIN_RATIO, and at twice it or more
NO_MATCH_LIKE = 85  # token-set similarity to a no_match example that vetoes the rule
K1, B = 1.2, 0.75
MAX_QUERY_LINES = 6
SHOWN_WORDS = 5

STATE_KINDS = frozenset({"pip-freeze", "pip-list", "pip-list-json", "collect-env", "nvidia-smi", "nvidia-smi-q",
                         "nvidia-smi-csv", "nvidia-smi-xml", "nvidia-smi-list", "nvidia-smi-topo", "bundle-manifest"})
WORD = lazy_re.compile(r"[A-Za-z][A-Za-z0-9_+]{2,}")
PATH = lazy_re.compile(r"(?:[A-Za-z]:)?[\w.+~-]*(?:[/\\][\w.+~-]+){2,}[/\\]?")  # two or more separators
NOT_A_FAILURE = lazy_re.compile(
    r"\bINFO\b|:\s*0\s*$|Module Not Found|^\s*[\w.-]+=="
    # warnings: c10d's "[W socket.cpp:697] ... cannot be initialized to connect to" on a healthy job, glog's / klog's W1201 (also after a syslog prefix: `kubelet[1154]: W1124 13:17:41.949553`),
    # Python's UserWarning (NCCL's own "NCCL WARN" is its error level and stays)
    r"|^\s*\[W[ \]\d]|^W\d{4} |\b[WI]\d{4} \d\d:\d\d:\d\d\.\d{6}\b|\bWARNING\b|\b[A-Z]\w*Warning:"
)
_STOP_WORDS = """
the and for with that this from not are was were has have had but you your can could would should will into its
than then there their they them when what which while where who how also use used using been being does did only
any all one two may might must our out via per each other some such more most very just like get got make error
errors failed fail failure true false none null line file files python site packages package lib usr local home
root info debug warning warn traceback recent call last self return raise module run running
following trying tried getting please help thanks anyone
hpp cpp cxx cuh check checks value values unknown
"""
STOP = frozenset(_STOP_WORDS.split())


@dataclass
class Guess:
    rule_id: str
    confidence: float
    evidence: list[Evidence]
    shared: list[str]  # the query's words the rule's text has, rarest first
    runner_up: str


class Index:
    """BM25 over one document per rule: title, summary, description and its matching examples."""

    def __init__(self, kb: KnowledgeBase) -> None:
        self.tf: dict[str, Counter[str]] = {}
        self.length: dict[str, int] = {}
        self.no_match: dict[str, list[str]] = {}
        df: Counter[str] = Counter()
        for rid, rule in kb.rules.items():
            words = words_of("\n".join([rule.title, rule.summary, rule.description, *rule.examples.get("match", [])]))
            self.tf[rid] = Counter(words)
            self.length[rid] = len(words)
            self.no_match[rid] = list(rule.examples.get("no_match", []))
            df.update(set(words))
        n = max(len(self.tf), 1)
        self.idf = {w: math.log((n - k + 0.5) / (k + 0.5) + 1) for w, k in df.items()}
        self.mean_length = sum(self.length.values()) / n if self.length else 1.0

    def scores(self, query: set[str]) -> list[tuple[float, str]]:
        out = []
        for rid, tf in self.tf.items():
            norm = K1 * (1 - B + B * self.length[rid] / self.mean_length)
            score = sum(self.idf[w] * tf[w] * (K1 + 1) / (tf[w] + norm) for w in query if w in tf)
            out.append((score, rid))
        out.sort(key=lambda sr: (-sr[0], sr[1]))
        return out


# a server's line prefix: vLLM's "(EngineCore_DP0 pid=6880) ERROR 10-31 15:07:50 [core.py:708] ", SGLang's
# "[2024-12-19 14:44:21 TP0] ": a process tag and a logger's place, not words of the failure
LOG_PREFIX = lazy_re.compile(
    r"^(?:\s*(?:\([^()\n]{1,80}\)|\[[^\[\]\n]{1,80}\]|(?:ERROR|WARNING|WARN|INFO|DEBUG|CRITICAL)\b:?"
    r"|\d{2,4}[-/]\d\d(?:[-/]\d\d)?|\d\d:\d\d:\d\d(?:[.,]\d+)?)\s*)+"
)


# how a process dies, not why: the C++ runtime's "terminate called after throwing an instance of 'dmlc::Error'"
# and "what():", the shell's "Segmentation fault: 11" / "Aborted (core dumped)", Python's faulthandler. An MXNet
# crash was guessed NVLink from 'terminate', 'throwing', 'called', 'instance', 'fault', which an NVLink example
# shares only because it died the same way
BOILERPLATE = lazy_re.compile(
    r"(?i)terminate called (?:after throwing an instance of|recursively|without an active exception)|\bwhat\(\):"
    # "Aborted" only as the shell's line of its own: "NCCL communicator was aborted" says what happened
    r"|\bSegmentation fault\b(?::\s*\d+)?|(?m:^\s*Aborted\b)|\(core dumped\)|Fatal Python error:|\bStack trace:"
)


def words_of(text: str) -> list[str]:
    return [w for w in (m.group(0).lower() for m in WORD.finditer(text)) if w not in STOP]


def message_of(text: str) -> str:
    """A line without its log prefix."""
    return LOG_PREFIX.sub("", text, count=1)


_INDEXES: dict[int, tuple[KnowledgeBase, Index]] = {}


def index_for(kb: KnowledgeBase) -> Index:
    """Built on first use for this KB (a few milliseconds), not at start-up."""
    got = _INDEXES.get(id(kb))
    if got is None or got[0] is not kb:
        got = (kb, Index(kb))
        _INDEXES.clear()  # one KB at a time in a process, in practice; never an unbounded cache
        _INDEXES[id(kb)] = got
    return got[1]


def failure_lines(unmatched: list[Evidence]) -> list[Evidence]:
    """The unexplained lines that say something failed, not what state a system is in."""
    from diagnose.artifacts import pylog

    # a traceback speaks through its exception line and the `raise` that words it (DeepSpeed's `raise
    # Exception(f"... Installed CUDA version {v} does not match ...")` in a cut traceback); its frames and other
    # code are where, not what, failed
    lines = [e for e in unmatched if e.kind not in STATE_KINDS and not NOT_A_FAILURE.search(e.text)
             and (e.kind != "traceback" or pylog.is_exception_line(message_of(e.text))
                  or message_of(e.text).lstrip().startswith("raise "))]
    return lines[:MAX_QUERY_LINES]


def nearest(unmatched: list[Evidence], kb: KnowledgeBase, rejected: set[str]) -> Guess | None:
    lines = failure_lines(unmatched)
    if not lines:
        return None
    idx = index_for(kb)
    # file paths left out: `FAILED: caffe2/.../aten/src/ATen/native/transformers/cuda/...cu.o` shares `aten`,
    # `native`, `cuda` with a kernel assert's example, which says nothing about why a build failed
    query = set(words_of(BOILERPLATE.sub(" ", PATH.sub(" ", "\n".join(message_of(e.text) for e in lines)))))
    ranked = idx.scores(query)
    if len(ranked) < 2:
        return None
    (score, rid), (second, runner_up) = ranked[0], ranked[1]
    if rid in rejected or score < MIN_SCORE or score < MIN_RATIO * second:
        return None
    from rapidfuzz import fuzz  # only here: importing it costs start-up time every run

    # any unexplained line (a warning left out of the query too) that looks like one the KB says is not this cause
    if any(fuzz.token_set_ratio(e.text, example) >= NO_MATCH_LIKE for e in unmatched for example in idx.no_match[rid]):
        return None
    ratio = score / second if second else 2 * MIN_RATIO
    low, high = CONFIDENCE
    confidence = low + (high - low) * min(1.0, (ratio - MIN_RATIO) / MIN_RATIO)
    shared = sorted((w for w in query if w in idx.tf[rid]), key=lambda w: (-idx.idf[w], w))
    evidence = [Evidence(e.source, e.line, e.text, GUESS_SIGNAL, e.kind, e.time)
                for e in lines if not set(shared).isdisjoint(words_of(e.text))]
    return Guess(rid, round(confidence, 3), evidence, shared[:SHOWN_WORDS], runner_up)
