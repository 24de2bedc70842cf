"""The prefilter (Hyperscan over blocks) must give the same findings as reading every line."""

from __future__ import annotations

import bisect
import os
import re
import signal
import time

import pytest
from conftest import FIXTURES

from diagnose import api
from diagnose.artifacts import prefilter, reader, sniff
from diagnose.kb.selftest import find_cases
from diagnose.record import asdict

CASES = [c for c in find_cases(FIXTURES) if not c.expected.get("healthy")] + [
    c for c in find_cases(FIXTURES) if c.expected.get("healthy")
][::4]


def summary(diagnosis):
    def walk(findings):
        for f in findings:
            yield f.rule_id, tuple(sorted((e.source, e.line) for e in f.evidence)), round(f.confidence, 3)
            yield from walk(f.symptoms)

    return sorted(walk(diagnosis.findings)), [(e.source, e.line) for e in diagnosis.unmatched_errors]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_same_findings_every_line_and_through_the_block_prefilter(case, kb, monkeypatch):
    every_line = api.diagnose(case.artifacts(), kb=kb, use_prefilter=False)
    monkeypatch.setattr(reader, "SMALL_INPUT", 0)  # force the block prefilter even on small inputs
    through_blocks = api.diagnose(case.artifacts(), kb=kb)
    assert summary(through_blocks)[0] == summary(every_line)[0]
    # and the same facts: a line host.py reads a fact from must pass the prefilter (its STRUCTURE patterns), or a
    # large log loses the GPU, the driver or the package versions a small one of the same text gives
    assert asdict(through_blocks.facts) == asdict(every_line.facts)


def _record_repeat_hits(monkeypatch):
    """The runs each chunk's repeat scan left out (0 where the chunk was scanned whole), as they happen."""
    runs = []
    original = prefilter.Prefilter.repeat_hits

    def repeat_hits(self, chunk):
        found = original(self, chunk)
        runs.append(len(found[1]) if found is not None else 0)
        return found

    monkeypatch.setattr(prefilter.Prefilter, "repeat_hits", repeat_hits)
    return runs


def _record_skipped(monkeypatch):
    """How many lines the block reader skipped (repeats, or templates that changed nothing), as they are counted."""
    skipped = []
    original = sniff._Scanner._count_folded

    def count_folded(self):
        skipped.append(self.source.folded)
        original(self)

    monkeypatch.setattr(sniff._Scanner, "_count_folded", count_folded)
    return skipped


def _scan_repeats_always(monkeypatch):
    """Every chunk scanned with its repeated lines left out wherever it has any (not only after a dense chunk)."""
    monkeypatch.setattr(reader, "SMALL_INPUT", 0)
    monkeypatch.setattr(reader, "REPEATS_ALWAYS", True)
    monkeypatch.setattr(prefilter, "REPEATS", 10**9)
    return _record_repeat_hits(monkeypatch)


def _repeats(path: str) -> int:
    lines = [line.translate(None, b"0123456789") for line in open(path, "rb").read().splitlines()]
    return sum(a == b and b'File "' not in a for a, b in zip(lines, lines[1:]))  # frames each start a structure


REPEATING = [c for c in CASES if any(_repeats(p) >= 2 for p in c.artifacts())]  # a run of 3 lines somewhere


@pytest.mark.parametrize("case", REPEATING, ids=lambda c: c.name)
def test_same_findings_when_repeated_lines_are_scanned_once(case, kb, monkeypatch):
    """A run of lines that differ in digits only is scanned through its first line (and the digit-sensitive
    patterns over every line): the findings, their evidence lines and the unexplained errors stay those of
    reading every line."""
    every_line = summary(api.diagnose(case.artifacts(), kb=kb, use_prefilter=False))
    used = _scan_repeats_always(monkeypatch)
    assert summary(api.diagnose(case.artifacts(), kb=kb))[0] == every_line[0]
    assert any(used)


@pytest.mark.parametrize("case", REPEATING[::6], ids=lambda c: c.name)
def test_same_findings_when_repeated_lines_are_scanned_once_without_hyperscan(case, kb, monkeypatch):
    every_line = summary(api.diagnose(case.artifacts(), kb=kb, use_prefilter=False))
    monkeypatch.setenv("DIAGNOSE_NO_HYPERSCAN", "1")
    used = _scan_repeats_always(monkeypatch)
    assert summary(api.diagnose(case.artifacts(), kb=kb))[0] == every_line[0]
    assert any(used)


def test_a_cached_database_answers_with_the_ids_it_was_asked_for(tmp_path):
    # the digit-sensitive subset keeps its texts when a pattern is added before them, but its ids move: a
    # database cached for the old ids must not answer for the new ones
    hyperscan = pytest.importorskip("hyperscan")
    flags = hyperscan.HS_FLAG_PREFILTER | hyperscan.HS_FLAG_ALLOWEMPTY
    for pid in (7, 8):
        db, _ = prefilter.compile_database([(r"GLIBC_2\.\d+' not found", pid)], flags, tmp_path, "hs-digits")
        seen: list[int] = []
        db.scan(b"version `GLIBC_2.34' not found", match_event_handler=lambda i, *_, into=seen: into.append(i))
        assert seen == [pid]


def test_two_patterns_that_start_a_line_with_whitespace_both_report_every_line(tmp_path):
    # Hyperscan 5.4 (via hyperscan 0.9.1), given `(?:RuntimeError: |^\s*)Numpy is not available` and the uv install
    # line's `^\s*[+-] name==` in one database, reported one of uv's five " + pip==26.3" lines: the block reader lost
    # the packages of a large install log (fixtures/near-miss--venv-missing-pip--repro-uv-venv-seed)
    pytest.importorskip("hyperscan")
    pf = prefilter.Prefilter([r"(?:RuntimeError: |^\s*)Numpy is not available\s*$", r"^\s*[+-] [A-Za-z0-9._-]+=="],
                             tmp_path)
    log = (FIXTURES / "near-miss--venv-missing-pip--repro-uv-venv-seed" / "session.log").read_bytes()
    starts = [0, *(i + 1 for i, b in enumerate(log) if b == 10)]
    reported = {bisect.bisect_right(starts, max(end - 1, 0)) for end, _, pid in pf.hits(log) if pid == 1}
    uv_lines = {n for n, line in enumerate(log.splitlines(), 1) if re.match(rb"\s*\+ \S+==", line)}
    assert len(uv_lines) == 5 and uv_lines <= reported


def test_the_prefilter_reports_every_line_each_exact_pattern_matches_in_the_fixtures(kb):
    # the prefilter may report more lines than a pattern matches, never fewer: a line it misses is a signal, a fact or
    # a structure the block reader never hands on. Each pattern Hyperscan runs, against its exact regex (MULTILINE,
    # as the block path without Hyperscan runs it), on every fixture file
    pytest.importorskip("hyperscan")
    import regex as regex_module

    pf = prefilter.Prefilter([s.regex for _, s in kb.signals() if s.regex], None)
    slow = {i for i, _ in pf._slow}
    exact = [(i, regex_module.compile(p.text, regex_module.MULTILINE)) for i, p in enumerate(pf.patterns) if i not in slow]
    missed = []
    for path in sorted(p for p in FIXTURES.rglob("*") if p.is_file() and p.name != "expected.yaml"):
        data = path.read_bytes()
        if path.suffix in (".gz", ".zst", ".xz", ".bz2", ".zip", ".tar") or b"\0" in data[:4096]:
            continue
        starts = [0, *(i + 1 for i, b in enumerate(data) if b == 10)]
        reported = {(bisect.bisect_right(starts, max(end - 1, 0)), pid) for end, _, pid in pf.hits(data)}
        text = data.decode("latin-1")
        for i, pattern in exact:
            for m in pattern.finditer(text, timeout=5.0):
                line = bisect.bisect_right(starts, max(m.end() - 1, 0))
                if m.end() > m.start() and (line, i) not in reported:
                    missed.append((str(path.relative_to(FIXTURES)), line, pf.patterns[i].text[:80]))
    assert missed == []


def test_which_patterns_a_lines_digits_can_change():
    assert prefilter.digit_sensitive(r"NVRM: Xid \(PCI:[^)]+\): 79\b")  # a literal digit
    assert prefilter.digit_sensitive(r"error=[1-9]\d*")  # some digits but not all
    assert prefilter.digit_sensitive(r"(\d+) \1")  # a backreference
    assert not prefilter.digit_sensitive(r"\.(?:cu|cuh):\d+:[^`]{0,240}Assertion `[^\n]{1,400}` failed")
    assert not prefilter.digit_sensitive(r"thread: \[[0-9,]+\] (?<![A-Za-z0-9_])x\b")  # every digit alike


@pytest.mark.parametrize("case", CASES[::5], ids=lambda c: c.name)
def test_same_findings_without_hyperscan(case, kb, monkeypatch):
    if prefilter.hyperscan_module() is None:
        pytest.skip("hyperscan is not installed here: the fallback is the only path")
    with_hs = summary(api.diagnose(case.artifacts(), kb=kb))
    monkeypatch.setenv("DIAGNOSE_NO_HYPERSCAN", "1")
    monkeypatch.setattr(reader, "SMALL_INPUT", 0)
    without = summary(api.diagnose(case.artifacts(), kb=kb))
    assert without[0] == with_hs[0]


@pytest.mark.parametrize("case", CASES[::15], ids=lambda c: c.name)
def test_same_findings_without_hyperscan_or_re2(case, kb, monkeypatch):
    """The last fallback (each pattern through `regex`) still gives the reading of every line."""
    every_line = summary(api.diagnose(case.artifacts(), kb=kb, use_prefilter=False))
    monkeypatch.setenv("DIAGNOSE_NO_HYPERSCAN", "1")
    monkeypatch.setenv("DIAGNOSE_NO_RE2", "1")
    monkeypatch.setattr(reader, "SMALL_INPUT", 0)
    assert summary(api.diagnose(case.artifacts(), kb=kb))[0] == every_line[0]


def test_the_re2_fallback_is_the_one_used_without_hyperscan(kb, monkeypatch):
    pytest.importorskip("re2")
    monkeypatch.setenv("DIAGNOSE_NO_HYPERSCAN", "1")
    built = prefilter.Prefilter([s.regex for _, s in kb.signals() if s.regex])
    assert built._re2 is not None
    assert len(built._slow) < len(built.patterns) // 10  # RE2 takes nearly every pattern once widened


def test_block_mode_keeps_true_line_numbers(tmp_path, kb, monkeypatch):
    log = tmp_path / "big.log"
    filler = b"INFO 11-29 10:00:00 [engine.py:1] Avg prompt throughput: 1.0 tokens/s\n" * 200_000
    log.write_bytes(filler + b"RuntimeError: operator torchvision::nms does not exist\n" + filler)
    diagnosis = api.diagnose([str(log)], kb=kb)
    finding = diagnosis.findings[0]
    assert finding.rule_id == "torchvision-torch-mismatch"
    assert finding.evidence[0].line == 200_001
    assert any("selected by the prefilter" in n for i in diagnosis.inputs for n in i.notes)
    assert sum(i.lines for i in diagnosis.inputs) == 400_001


def test_a_crash_loop_gives_the_same_report_when_the_reader_skips_repeated_lines(tmp_path, kb, monkeypatch):
    # real text: an SGLang start-up (fixtures/healthy) and the H200 device-side-assert reproduction, restarted
    # 150 times with a longer burst; its assert lines repeat in shape, so past each signal's 20 hits the block reader skips them
    startup = (FIXTURES / "healthy" / "server-sglang-startup-pr11830" / "server.log").read_bytes()
    crash = (FIXTURES / "device-side-assert--repro-h200-embedding" / "fail-device-assert.log").read_bytes()
    log = tmp_path / "loop.log"
    lines = crash.splitlines(keepends=True)
    asserts = b"".join(line for line in lines if b"Assertion `" in line)
    rest = b"".join(line for line in lines if b"Assertion `" not in line)
    log.write_bytes((startup + asserts * 12 + rest) * 150)  # each restart's burst: its assert lines, 12 warps of them
    every_line = api.diagnose([str(log)], kb=kb, use_prefilter=False)
    skipped = _record_skipped(monkeypatch)
    reduced = _record_repeat_hits(monkeypatch)
    monkeypatch.setattr(reader, "SMALL_INPUT", 0)
    through_blocks = api.diagnose([str(log)], kb=kb)
    assert sum(skipped) > 1000  # the repeats were skipped, not read
    assert sum(reduced) > 50  # and not scanned either: each burst after the first chunk once, through its first line
    assert summary(through_blocks) == summary(every_line)
    assert [(e.line, e.text) for e in through_blocks.findings[0].evidence] == \
        [(e.line, e.text) for e in every_line.findings[0].evidence]
    assert [(i.kind, i.lines) for i in through_blocks.inputs] == [(i.kind, i.lines) for i in every_line.inputs]
    assert through_blocks.facts == every_line.facts


def test_a_kernel_log_gives_the_same_report_when_its_line_templates_are_remembered(tmp_path, kb, monkeypatch):
    # real text: two fixtures' kernel logs (a GSP RPC history full of 0x values, an Xid 79) printed again and again
    # with other hex values, as a long-running host's dmesg does; a kernel line whose template (digits and 0x letters
    # masked) stated no fact and started no block is not parsed again, and the report must not notice
    gsp = (FIXTURES / "gsp-firmware-error--open-gpu-kernel-modules-1230" / "dmesg.log").read_bytes()
    xid = (FIXTURES / "xid-fallen-off-bus--open-gpu-kernel-modules-1151" / "dmesg.log").read_bytes()
    def other_hex(i):
        table = bytes.maketrans(b"0123456789abcdef", (b"0123456789abcdef" * 2)[i % 16:i % 16 + 16])
        return lambda m: b"0x" + m[0][2:].translate(table)

    body = b"".join(re.sub(rb"0x[0-9a-f]+", other_hex(i), gsp) for i in range(40))
    log = tmp_path / "dmesg.log"
    log.write_bytes(body + xid)
    parsed = []
    original = sniff.host.line_facts

    def line_facts(text):
        parsed.append(text)
        return original(text)

    monkeypatch.setattr(sniff.host, "line_facts", line_facts)
    remembered = api.diagnose([str(log)], kb=kb, use_prefilter=False)
    parsed_with_templates = len(parsed)
    parsed.clear()
    counter = iter(range(10**9))
    monkeypatch.setattr(sniff.pylog, "template_bytes", lambda text: b"%d" % next(counter))  # every line a template of its own
    every_line = api.diagnose([str(log)], kb=kb, use_prefilter=False)
    assert parsed_with_templates * 5 < len(parsed)  # the repeats, hex aside, were not parsed again
    assert summary(remembered) == summary(every_line)
    assert remembered.findings[0].rule_id == "xid-fallen-off-bus"
    assert [(i.kind, i.lines) for i in remembered.inputs] == [(i.kind, i.lines) for i in every_line.inputs]
    assert remembered.facts == every_line.facts


def test_a_template_masks_digits_and_hex_letters_and_keeps_the_length():
    from diagnose.artifacts import pylog

    a = "[ 4.210] [drm:nv_drm_probe_devices [nvidia_drm]] *ERROR* [nvidia-drm] [GPU ID 0x0c000bec] Failed to register device"
    b = "[ 9.876] [drm:nv_drm_probe_devices [nvidia_drm]] *ERROR* [nvidia-drm] [GPU ID 0x0a00c0f0] Failed to register device"
    assert pylog.template(a) == pylog.template(b) and len(pylog.template(a)) == len(a)
    assert "nv_drm_probe_devices" in pylog.template(a) and "Failed" in pylog.template(a)  # words outside 0x kept
    assert pylog.template("GPU 0000:0a:00.0") != pylog.template("GPU 0000:0b:00.0")  # a PCI id is no 0x number
    chinese = "12月 06 10:18:27 主机 kernel: NVRM: GPU at PCI:0000:0a:00: GPU-1f2e [0x0c000bec] 显卡 ٣"
    assert pylog.template(chinese) == chinese.translate(pylog.TEMPLATE).replace("0x0c000bec", "0x00000000")


def test_lines_that_recur_between_others_are_skipped_with_the_same_report(tmp_path, kb, monkeypatch):
    # real text: the H200 device-side-assert reproduction's assert lines, each printed between two lines of a real
    # SGLang start-up (so no line repeats the one before it), then the crash's traceback; past each signal's 20 hits
    # an assert line's template changes nothing, and the reader skips it wherever it recurs
    startup = (FIXTURES / "healthy" / "server-sglang-startup-pr11830" / "server.log").read_bytes().splitlines(keepends=True)
    crash = (FIXTURES / "device-side-assert--repro-h200-embedding" / "fail-device-assert.log").read_bytes()
    lines = crash.splitlines(keepends=True)
    asserts = [line for line in lines if b"Assertion `" in line]
    rest = b"".join(line for line in lines if b"Assertion `" not in line)
    body = b"".join(asserts[i % len(asserts)] + startup[i % len(startup)] + startup[(i + 7) % len(startup)]
                    for i in range(6000))
    log = tmp_path / "interleaved.log"
    log.write_bytes(body + rest)
    every_line = api.diagnose([str(log)], kb=kb, use_prefilter=False)
    skipped = _record_skipped(monkeypatch)
    monkeypatch.setattr(reader, "SMALL_INPUT", 0)
    through_blocks = api.diagnose([str(log)], kb=kb)
    assert sum(skipped) > 3000  # recurring assert lines skipped, though none follows one of its own shape
    assert summary(through_blocks) == summary(every_line)
    assert [(e.line, e.text) for e in through_blocks.findings[0].evidence] == \
        [(e.line, e.text) for e in every_line.findings[0].evidence]
    assert [(i.kind, i.lines) for i in through_blocks.inputs] == [(i.kind, i.lines) for i in every_line.inputs]
    assert through_blocks.facts == every_line.facts


def _two_processes(monkeypatch, block: int = 4096):
    """Every input through the block reader in small chunks, with a second process sharing their scans."""
    monkeypatch.setattr(reader, "SMALL_INPUT", 0)
    monkeypatch.setattr(reader, "PARALLEL_MIN", 0)
    monkeypatch.setattr(reader, "BLOCK", block)
    monkeypatch.setattr(reader, "_cores", lambda: 2)
    monkeypatch.delenv("DIAGNOSE_ONE_CORE", raising=False)
    helpers = []
    start = reader._ScanHelper.start

    def recorded(source, prefilter):
        helper = start(source, prefilter)
        helpers.append(helper)
        return helper

    monkeypatch.setattr(reader._ScanHelper, "start", staticmethod(recorded))
    return helpers


def _plain_text(path: str) -> bool:
    """A file read as it is (not a bundle, an archive or compressed): the second process reads such a file itself."""
    with open(path, "rb") as f:
        head = f.read(512)
    return not any(head.startswith(m) for m in reader.MAGIC) and not reader._is_tar(head) and not head.startswith(b"\xff\xfe")


# several 4 KiB chunks, in files read as they are
MULTI_CHUNK = [c for c in CASES if sum(os.path.getsize(p) for p in c.artifacts()) > 16 * 1024
               and all(os.path.isfile(p) and _plain_text(p) for p in c.artifacts())]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the second process is forked")
@pytest.mark.parametrize("case", MULTI_CHUNK, ids=lambda c: c.name)
def test_same_findings_when_a_second_process_scans_chunks(case, kb, monkeypatch):
    """A large file's chunks are scanned by two processes, each claiming the next one: the findings, their evidence
    lines and the unexplained errors stay those of reading every line, and the helper did scan some chunks."""
    every_line = summary(api.diagnose(case.artifacts(), kb=kb, use_prefilter=False))
    helpers = _two_processes(monkeypatch)
    # on a loaded machine this process could claim every chunk of a small file before the forked helper is
    # scheduled at all: its first claim waits (at most 5 s) until the helper has claimed one, so both really scan
    claim = reader._ScanHelper._claim

    def after_the_helper_started(self, index, ahead):
        deadline = time.monotonic() + 5
        while index == 0 and reader._COUNTER.unpack_from(self.claimed)[0] == 0 and time.monotonic() < deadline:
            time.sleep(0.002)
        return claim(self, index, ahead)

    monkeypatch.setattr(reader._ScanHelper, "_claim", after_the_helper_started)
    assert summary(api.diagnose(case.artifacts(), kb=kb))[0] == every_line[0]
    started = [h for h in helpers if h is not None]
    assert started and sum(h.used for h in started) > 0


def _server_log(tmp_path):
    """Real text: 40 SGLang start-ups, then the H200 device-side-assert reproduction (the log, a start-up's bytes)."""
    crash = (FIXTURES / "device-side-assert--repro-h200-embedding" / "fail-device-assert.log").read_bytes()
    startup = (FIXTURES / "healthy" / "server-sglang-startup-pr11830" / "server.log").read_bytes()
    log = tmp_path / "server.log"
    log.write_bytes(startup * 40 + crash)
    return log, startup


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the second process is forked")
def test_a_helper_that_dies_or_reads_another_file_leaves_the_work_to_the_reader(tmp_path, kb, monkeypatch):
    log, startup = _server_log(tmp_path)
    every_line = summary(api.diagnose([str(log)], kb=kb, use_prefilter=False))
    helpers = _two_processes(monkeypatch)
    start = reader._ScanHelper.start

    def killed(source, prefilter):  # the helper is killed as soon as it starts (the OOM killer, a stray kill)
        helper = start(source, prefilter)
        os.kill(helper.pid, signal.SIGKILL)
        return helper

    monkeypatch.setattr(reader._ScanHelper, "start", staticmethod(killed))
    assert summary(api.diagnose([str(log)], kb=kb))[0] == every_line[0]
    assert helpers[-1].alive is False
    monkeypatch.setattr(reader._ScanHelper, "start", staticmethod(start))
    original = reader._helper_main

    def other_file(source, path, *args):  # the file is replaced while it is read: the helper sees other bytes
        other = tmp_path / "other.log"
        other.write_bytes(startup * 41)
        original(source, other, *args)

    monkeypatch.setattr(reader, "_helper_main", other_file)
    assert summary(api.diagnose([str(log)], kb=kb))[0] == every_line[0]
    assert helpers[-1].alive is False  # its results stopped matching the reader's chunks


def test_a_small_log_or_one_core_starts_no_second_process(tmp_path, kb, monkeypatch):
    log = tmp_path / "small.log"
    log.write_bytes((FIXTURES / "device-side-assert--repro-h200-embedding" / "fail-device-assert.log").read_bytes())
    helpers = _two_processes(monkeypatch)
    monkeypatch.setattr(reader, "PARALLEL_MIN", 1 << 20)
    api.diagnose([str(log)], kb=kb)
    monkeypatch.setattr(reader, "PARALLEL_MIN", 0)
    monkeypatch.setenv("DIAGNOSE_ONE_CORE", "1")
    api.diagnose([str(log)], kb=kb)
    assert helpers == [None, None]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the second process is forked")
def test_a_helper_killed_while_it_holds_the_claim_lock_does_not_hang_the_reader(tmp_path, kb, monkeypatch):
    log, _ = _server_log(tmp_path)
    every_line = summary(api.diagnose([str(log)], kb=kb, use_prefilter=False))
    helpers = _two_processes(monkeypatch)
    monkeypatch.setattr(reader, "LOCK_WAIT", 0.2)

    def dies_holding_the_lock(source, path, prefilter, fd, claimed, lock):
        lock.acquire()
        os._exit(9)  # as the OOM killer would: the lock is never released

    monkeypatch.setattr(reader, "_helper_main", dies_holding_the_lock)
    assert summary(api.diagnose([str(log)], kb=kb))[0] == every_line[0]
    assert helpers[-1].alive is False and helpers[-1].used == 0


def _inputs(diagnosis):
    return [(i.source, i.kind, i.lines, i.first_line) for i in diagnosis.inputs]


TRACEBACKS = [c for c in CASES if any(b"Traceback (most recent call last)" in open(p, "rb").read() for p in c.artifacts())]


def _twice(case, tmp_path) -> list[str]:
    """The case's artifacts, each read twice over, as a crash loop prints its traceback again: the filler counts
    only lines of templates seen before."""
    paths = []
    for i, path in enumerate(case.artifacts()):
        text = open(path, "rb").read()
        paths.append(tmp_path / f"{i}-{os.path.basename(path)}")
        paths[-1].write_bytes(text + (b"" if text.endswith(b"\n") else b"\n") + text)
    return [str(p) for p in paths]


def _counting_filler(monkeypatch) -> list[bool]:
    """What each call of sniff's filler answered, as it happens."""
    answers: list[bool] = []
    original = sniff._Scanner.filler

    def filler(self, lineno, raw, template):
        took = original(self, lineno, raw, template)
        answers.append(took)
        return took

    monkeypatch.setattr(sniff._Scanner, "filler", filler)
    return answers


@pytest.mark.parametrize("case", TRACEBACKS[::3], ids=lambda c: c.name)
def test_a_tracebacks_code_lines_counted_without_being_handed_out_change_nothing(case, kb, monkeypatch, tmp_path):
    """Inside a traceback the block reader hands its code and ^~~ marker lines (and frames whose package is known)
    to sniff's `filler`, which counts them as `feed` would: the findings, the evidence, the unexplained errors and
    every input's parts and line counts are those of handing every selected line out."""
    monkeypatch.setattr(reader, "SMALL_INPUT", 0)
    paths = _twice(case, tmp_path)
    with_filler = api.diagnose(paths, kb=kb)
    monkeypatch.setattr(sniff._Scanner, "filler", lambda self, lineno, raw, template: False)
    without = api.diagnose(paths, kb=kb)
    assert summary(with_filler) == summary(without)
    assert _inputs(with_filler) == _inputs(without)


def test_the_filler_counts_lines_of_most_repeated_fixture_tracebacks(kb, monkeypatch, tmp_path):
    # the comparison above says something only where the filler took lines: it must, in most of those cases (a
    # traceback whose every line a signal hits, or whose lines carry another prefix, gives it none)
    monkeypatch.setattr(reader, "SMALL_INPUT", 0)
    took = []
    for i, case in enumerate(TRACEBACKS[::3]):
        answers = _counting_filler(monkeypatch)
        (tmp_path / str(i)).mkdir()
        api.diagnose(_twice(case, tmp_path / str(i)), kb=kb)
        took.append(any(answers))
    assert sum(took) * 4 >= len(took) * 3, f"the filler took lines in {sum(took)} of {len(took)} cases"


def test_a_traceback_repeated_in_a_crash_loop_has_its_code_lines_counted_not_handed_out(kb, monkeypatch, tmp_path):
    # a real traceback (a fixture's), repeated as a crash loop repeats it: from its second time on, its code and
    # marker lines are of known templates, and sniff counts them without the matcher seeing them again
    text = open(FIXTURES / "accelerate-missing--qwen3-173" / "traceback.log", "rb").read()
    log = tmp_path / "loop.log"
    log.write_bytes(text * 40)
    monkeypatch.setattr(reader, "SMALL_INPUT", 0)
    fed = []
    original = sniff._Scanner.feed
    monkeypatch.setattr(sniff._Scanner, "feed", lambda self, lineno, raw: fed.append(lineno) or original(self, lineno, raw))
    looped = api.diagnose([str(log)], kb=kb)
    once = api.diagnose([str(FIXTURES / "accelerate-missing--qwen3-173" / "traceback.log")], kb=kb)
    assert [f.rule_id for f in looped.findings] == [f.rule_id for f in once.findings]
    assert sum(i.lines for i in looped.inputs) == text.count(b"\n") * 40
    code = sum(1 for line in text.splitlines() if line.startswith(b"    ") and b'File "' not in line)
    assert code >= 3, "the fixture's traceback has too few code lines"
    assert len(fed) < (text.count(b"\n") - code) * 40


def test_a_structure_open_at_a_chunks_end_carries_its_own_rule_into_the_next(kb, monkeypatch, tmp_path):
    """A traceback still open where a chunk ends goes on being read in the next chunk only as long as the traceback
    does, even when a frame's short plain context also runs past the chunk: folding the two into one let the frame's
    rule-less count carry the traceback's 2000 context lines whole into the next chunk."""
    tb = open(FIXTURES / "accelerate-missing--qwen3-173" / "traceback.log", "rb").read().splitlines(keepends=True)
    start = next(i for i, line in enumerate(tb) if b"Traceback (most recent" in line)
    frames = [line for line in tb[start:] if line.strip()][:5]  # the Traceback line and its first frames
    quiet = [b"INFO 05-01 10:00:%02d loader: step %d done\n" % (i % 60, i) for i in range(3000)]
    monkeypatch.setattr(reader, "SMALL_INPUT", 0)
    monkeypatch.setattr(reader, "BLOCK", 4096)
    head = b"".join(quiet[:200])
    log = tmp_path / "cut.log"
    # the chunk (4096 bytes) ends just after the first frames: the traceback and a frame's context both run past it
    log.write_bytes(head[:4096 - sum(map(len, frames))].rsplit(b"\n", 1)[0] + b"\n" + b"".join(frames) + b"".join(quiet))
    diagnosis = api.diagnose([str(log)], kb=kb)
    note = next(n for i in diagnosis.inputs for n in i.notes if n.startswith("large input"))
    selected = int(re.search(r"(\d+) selected", note)[1])
    assert selected < 50, note
