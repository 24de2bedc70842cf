"""The 3-gram bound that keeps rapidfuzz unimported must never turn away a line partial_ratio would score;
the CJK-edge spacing that the matcher does per non-ASCII line must be the one its definition gives."""

from __future__ import annotations

import random
import subprocess
import sys

from conftest import FIXTURES
from rapidfuzz import fuzz

from diagnose.engine.match import gram_bound, line_grams, may_reach


def test_the_bound_keeps_every_line_that_reaches_the_threshold(kb):
    needles = [(s.fuzzy, s.threshold) for _, s in kb.signals() if s.fuzzy]
    rng = random.Random(12)
    alphabet = "abcdefghijklmnopqrstuvwxyz _:.`'0123456789"
    reached = 0
    for _ in range(6000):
        needle, threshold = rng.choice(needles)
        start = rng.randint(0, len(needle) // 3)
        piece = list(needle[start:rng.randint(start + len(needle) // 2, len(needle))] if rng.random() < 0.4 else needle)
        for _ in range(rng.randint(0, 7)):  # deletions, insertions and substitutions anywhere
            i, op = rng.randrange(len(piece) + 1), rng.random()
            if op < 0.33 and piece:
                del piece[min(i, len(piece) - 1)]
            elif op < 0.66:
                piece.insert(i, rng.choice(alphabet))
            elif piece:
                piece[min(i, len(piece) - 1)] = rng.choice(alphabet)
        pad = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30))) if rng.random() < 0.6 else ""
        line = pad + "".join(piece) + pad[::-1]
        if len(line) < len(needle) * 0.5:
            continue
        if fuzz.partial_ratio(needle, line, score_cutoff=threshold):
            reached += 1
            assert may_reach(gram_bound(needle, threshold), line, line_grams(line)), (needle, line)
    assert reached > 2000  # the trials did reach the threshold often


def test_a_small_crash_log_is_diagnosed_without_importing_rapidfuzz():
    log = FIXTURES / "device-side-assert--repro-h200-embedding" / "fail-device-assert.log"
    code = ("import sys; from diagnose import api; d = api.diagnose([sys.argv[1]]); "
            "print(d.findings[0].rule_id, 'rapidfuzz' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(log)], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["device-side-assert", "False"]


def test_cjk_spacing_puts_a_space_at_every_edge_between_cjk_and_ascii_words_and_nowhere_else():
    import regex

    from diagnose.engine.match import cjk_spaced

    cjk = r"[\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}]"
    edges = regex.compile(rf"(?<={cjk})(?=[A-Za-z0-9_])|(?<=[A-Za-z0-9_])(?={cjk})")  # the definition, position by position
    rng = random.Random(5)
    alphabet = "ab_9 报显示あア한.-:Zé月"
    for _ in range(20000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 14)))
        assert cjk_spaced(text) == edges.sub(" ", text), text
    assert cjk_spaced("报错CUDA out of memory, 显示HeaderTooLarge") == "报错 CUDA out of memory, 显示 HeaderTooLarge"
