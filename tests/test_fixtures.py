"""Every real fixture is a test: its true cause ranked first, near-misses absent, healthy clean."""

from __future__ import annotations

from diagnose.kb.selftest import run_case


def test_fixture(fixture_case, kb):
    result = run_case(fixture_case, kb)
    assert result.ok, "; ".join(result.problems)


def test_every_fixture_says_where_it_came_from():
    from conftest import FIXTURES

    from diagnose.kb.selftest import find_cases

    for case in find_cases(FIXTURES):
        source = str(case.expected.get("source", ""))
        assert source.startswith(("http://", "https://", "seed:", "reproduction")), case.name
        assert case.expected.get("how"), f"{case.name}: say how the log was obtained"
        assert case.artifacts(), f"{case.name}: no artifact next to expected.yaml"
