"""Signals that reason from knowledge: entities the KB's tables know, and excerpts cut short."""

from __future__ import annotations

from conftest import FIXTURES

from diagnose import api

DEEPGEMM = (FIXTURES / "deepgemm-scale-format--deepgemm-324" / "server.log").read_text().splitlines(keepends=True)


def _first(diagnosis):  # type: ignore[no-untyped-def]
    return diagnosis.findings[0] if diagnosis.findings else None


def test_an_excerpt_cut_before_its_exception_is_named_from_its_frames(kb):
    cut = "".join(DEEPGEMM[:8])  # the real vLLM log, without its last line (the DeepGEMM assertion)
    first = _first(api.diagnose_texts([("paste", cut)], kb=kb))
    assert first is not None and first.rule_id == "deepgemm-scale-format"
    assert first.confidence <= 0.55
    assert any("ends inside a traceback" in r for r in first.reasons)


def test_the_whole_traceback_is_named_from_its_exception_not_its_frames(kb):
    first = _first(api.diagnose_texts([("paste", "".join(DEEPGEMM))], kb=kb))
    assert first is not None and first.rule_id == "deepgemm-scale-format"
    assert first.confidence > 0.55
    assert not any("ends inside a traceback" in r for r in first.reasons)


def test_frames_followed_by_their_exception_do_not_count_as_a_cut(kb):
    # the frames, then an exception no rule knows: the frames alone must not name DeepGEMM
    text = "".join(DEEPGEMM[:8]) + "ZeroDivisionError: division by zero\n"
    diagnosis = api.diagnose_texts([("paste", text)], kb=kb)
    assert all(f.rule_id != "deepgemm-scale-format" for f in diagnosis.findings)


def test_a_keyerror_on_a_model_type_the_table_knows_is_the_unknown_model_type(kb):
    for text in ("KeyError: 'qwen3_next'\n", "[Bug]: KeyError: 'qwen3_next' when loading Qwen3-Next\n",
                 "ValueError: model type `gpt_oss` is not supported by this version\n"):
        first = _first(api.diagnose_texts([("paste", text)], kb=kb))
        assert first is not None and first.rule_id == "transformers-unknown-model-type", text


def test_a_keyerror_on_another_key_is_not_a_model_type(kb):
    diagnosis = api.diagnose_texts([("paste", "KeyError: 'lm_head.weight'\n")], kb=kb)
    assert all(f.rule_id != "transformers-unknown-model-type" or f.confidence < 0.3 for f in diagnosis.findings)


def test_an_older_transformers_beside_the_keyerror_corroborates_it(kb):
    text = "KeyError: 'qwen3_next'\ntransformers==4.55.4\ntorch==2.8.0\n"
    first = _first(api.diagnose_texts([("paste", text)], kb=kb))
    assert first is not None and first.rule_id == "transformers-unknown-model-type"
    assert any("4.57.0" in r for r in first.reasons)
