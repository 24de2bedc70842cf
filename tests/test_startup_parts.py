"""What the small-log start-up leans on must behave as what it replaced: `@record` classes as dataclasses,
a pattern restored from the KB cache as the one compiled from its text, and the CLI's early exit must still
flush everything and keep its exit codes."""

from __future__ import annotations

import dataclasses
import pickle
import re
import subprocess
import sys
from pathlib import Path

import pytest
import regex

from diagnose import api, lazy_re, record
from diagnose.model import Evidence, Facts, Finding

ROOT = Path(__file__).resolve().parents[1]
CRASH = ROOT / "fixtures" / "device-side-assert--repro-h200-embedding" / "fail-device-assert.log"


@record.record
class Point:
    x: int
    y: int = 0
    tags: list[str] = record.field(default_factory=list)
    note: str = record.field(default="", repr=False)


@dataclasses.dataclass
class DataPoint:
    x: int
    y: int = 0
    tags: list[str] = dataclasses.field(default_factory=list)
    note: str = dataclasses.field(default="", repr=False)


def test_record_builds_like_a_dataclass() -> None:
    a, b = Point(1), DataPoint(1)
    assert (a.x, a.y, a.tags, a.note) == (b.x, b.y, b.tags, b.note)
    assert Point(1).tags is not Point(1).tags  # a factory per instance, not one shared list
    assert repr(Point(1, 2, ["t"], "hidden")) == "Point(x=1, y=2, tags=['t'])"
    assert repr(DataPoint(1, 2, ["t"], "hidden")).endswith("DataPoint(x=1, y=2, tags=['t'])")
    assert Point(1, 2) == Point(x=1, y=2) and Point(1) != Point(2) and Point(1) != DataPoint(1)
    with pytest.raises(TypeError):
        hash(Point(1))  # mutable and compared by value: unhashable, as a dataclass is
    with pytest.raises(TypeError):
        Point()  # type: ignore[call-arg]


def test_record_eq_false_keeps_identity_and_hash() -> None:
    @record.record(eq=False)
    class Node:
        name: str

    a = Node("n")
    assert a != Node("n") and a == a and {a: 1}[a] == 1


def test_record_post_init_and_order_checks() -> None:
    @record.record
    class Counted:
        n: int

        def __post_init__(self) -> None:
            self.double = self.n * 2

    assert Counted(3).double == 6
    assert record.replace(Counted(3), n=4).double == 8
    with pytest.raises(ValueError, match="mutable default"):
        @record.record
        class Shared:
            items: list[int] = []  # noqa: RUF012

    with pytest.raises(TypeError, match="non-default argument"):
        @record.record
        class Bad:
            a: int = 1
            b: int  # type: ignore[misc]


def test_record_asdict_and_replace_match_dataclasses() -> None:
    facts = Facts()
    facts.packages["torch"] = "2.4.0"
    finding = Finding(rule_id="r", title="t", category="c", severity="high", confidence=0.9, summary="s",
                      evidence=[Evidence("a.log", 3, "line", "sig", "log")])
    for value in (facts, finding):
        plain = record.asdict(value)
        assert set(plain) == {f.name for f in record.fields(value)}
    assert record.asdict(finding)["evidence"][0] == {f.name: getattr(finding.evidence[0], f.name)
                                                      for f in record.fields(Evidence)}
    changed = record.replace(finding, title="other")
    assert changed.title == "other" and changed.evidence == finding.evidence and finding.title == "t"
    assert record.is_record(Finding) and record.is_record(finding) and not record.is_record(DataPoint(1))


def _store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    monkeypatch.setenv("DIAGNOSE_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(lazy_re, "_stored", {})
    kb = api.load_kb(use_cache=True)  # written to the cache: precompiled
    assert kb.patterns
    monkeypatch.setattr(lazy_re, "_stored", {})
    kb = api.load_kb(use_cache=True)  # read back from the cache, as a second run does
    return kb.patterns


def test_stored_patterns_match_as_compiled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = _store(tmp_path, monkeypatch)
    kinds = {key[0] for key in store}
    assert kinds == {"re", "regex"}, kinds
    lines = CRASH.read_text(errors="replace").splitlines()[:400]
    checked = 0
    for kind, pattern, flags in list(store)[::7]:  # a spread of both kinds
        restored = lazy_re._restore((kind, pattern, flags))
        fresh = (re if kind == "re" else regex).compile(pattern, flags)
        assert restored is not None and restored is not fresh
        assert (restored.pattern, restored.flags, restored.groupindex) == (fresh.pattern, fresh.flags, fresh.groupindex)
        if isinstance(pattern, str):
            for line in lines:
                a, b = restored.search(line), fresh.search(line)
                assert (a and (a.span(), a.groups())) == (b and (b.span(), b.groups())), (pattern, line)
        checked += 1
    assert checked > 50


def test_a_stored_pattern_that_does_not_load_is_compiled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _store(tmp_path, monkeypatch)
    key = ("re", r"GPU (\d+) (?P<name>\w+)", 0)
    magic, *parts = lazy_re._re_parts(key[1], 0)
    lazy_re._stored[key] = pickle.dumps((magic + 1, *parts))  # another interpreter's code
    lazy_re._stored[("regex", key[1], 0)] = b"not a pickle"
    for compile_ in (lazy_re.re_compile, lazy_re.regex_compile):
        m = compile_(key[1]).search("on GPU 3 H200")
        assert m and m.group(1) == "3" and m["name"] == "H200"


def _cli(*args: str, cache: Path) -> subprocess.CompletedProcess[bytes]:
    exe = Path(sys.executable).with_name("diagnose")
    return subprocess.run([str(exe), *args], capture_output=True, timeout=120,
                          env={"DIAGNOSE_CACHE_DIR": str(cache), "PATH": "/usr/bin:/bin"})


def test_the_early_exit_flushes_and_keeps_exit_codes(tmp_path: Path) -> None:
    found = _cli(str(CRASH), cache=tmp_path)
    assert found.returncode == 1 and b"device-side-assert" in found.stdout and found.stdout.endswith(b"\n")
    assert _cli("--exit-zero", str(CRASH), cache=tmp_path).returncode == 0
    out = tmp_path / "out.json"
    done = subprocess.run(f"'{Path(sys.executable).with_name('diagnose')}' --format json '{CRASH}' > '{out}'",
                          shell=True, timeout=120, env={"DIAGNOSE_CACHE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 1 and out.read_text().rstrip().endswith("}")



def test_the_no_hyperscan_patterns_are_stored_with_the_kb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without Hyperscan (aarch64 hosts) a small log's line filter is one alternation of every signal: about a
    second to compile on every run, unless the KB cache holds it compiled."""
    from diagnose.artifacts import prefilter

    store = _store(tmp_path, monkeypatch)
    kb = api.load_kb(use_cache=True)
    signals = [s.regex for _, s in kb.signals() if s.regex]
    derived = prefilter.derived_patterns(signals)
    assert all(key in store for key in derived)
    line_filter = lazy_re._restore(derived[0])
    assert line_filter is not None and line_filter.search("RuntimeError: CUDA error: device-side assert triggered")
