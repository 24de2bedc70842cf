"""The per-input time budget (sniff.TIME_BUDGET_S + TIME_PER_MB_S per MiB) measures what was read, so a large
log is cut only when it is really read too slowly, and then with a note."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CRASH = ROOT / "fixtures" / "device-side-assert--repro-h200-embedding" / "fail-device-assert.log"


def test_the_time_budget_grows_with_the_input_read_not_the_lines_selected(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A large log whose lines the block prefilter mostly skips is read at the disk's pace, not the selected
    lines': the per-input time budget must count the bytes read (a 1 GB mix was cut at a minute, its failure
    unread). The clock here advances 0.5 s a look and each selected line stands for 1 MiB read."""
    from diagnose.artifacts import reader, sniff

    log = tmp_path / "big.log"
    log.write_bytes(CRASH.read_bytes())
    source = reader.open_inputs([str(log)]).sources[0]
    lines = CRASH.read_text(errors="replace").splitlines()

    def slow_lines(prefilter: object = None):  # what the block path hands out: few lines, far apart
        for i, text in enumerate(lines):
            source.consumed += 1 << 20
            yield (i + 1) * 256, text

    clock = iter(range(10_000))
    monkeypatch.setattr(source, "lines", slow_lines)
    monkeypatch.setattr(sniff.time, "perf_counter", lambda: next(clock) * 0.5)
    monkeypatch.setattr(sniff, "TIME_BUDGET_S", 1.0)
    monkeypatch.setattr(sniff, "TIME_PER_MB_S", 1.0)
    sniff.scan(source, lambda *_: None)
    assert not any("time budget" in n for n in source.notes), source.notes

    # the same lines with nothing read between them: the budget is spent and the rest is left unread, with a note
    source = reader.open_inputs([str(log)]).sources[0]
    monkeypatch.setattr(source, "lines", lambda prefilter=None: (((i + 1) * 256, t) for i, t in enumerate(lines)))
    sniff.scan(source, lambda *_: None)
    assert any("time budget" in n for n in source.notes)
