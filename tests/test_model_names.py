"""A model named in a launch line gives its model_type, so the transformers it needs is known."""

from __future__ import annotations

from pathlib import Path

from conftest import FIXTURES

from diagnose import api
from diagnose.kb import compat


def test_model_paths_from_real_logs_name_their_model_type(kb):
    table = kb.compat["model-type-transformers"]
    # model paths as real logs give them (holdout3-new vllm PR 14910, flashinfer 2034; vllm 18538)
    assert compat.model_type_of(table, "deepseek-ai/DeepSeek-V2-Lite") == "deepseek_v2"
    assert compat.model_type_of(table, "openai/gpt-oss-120b") == "gpt_oss"
    assert compat.model_type_of(table, "/models/Qwen/Qwen3-32B") == "qwen3"
    assert compat.model_type_of(table, "Qwen/Qwen3-30B-A3B-Instruct-2507") == "qwen3_moe"
    assert compat.model_type_of(table, "Qwen/Qwen2.5-VL-72B-Instruct-AWQ") == "qwen2_5_vl"
    assert compat.model_type_of(table, "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B") is None  # a qwen2: not a V3
    assert compat.model_type_of(table, "my-finetune") is None


def test_the_launch_lines_model_decides_the_transformers_release(tmp_path: Path, kb):
    # the real vLLM log that names Qwen3-32B, beside a pip list with a transformers older than Qwen3 (4.51.0)
    log = (FIXTURES / "unknown-launch-argument--vllm-18538" / "serve.log").read_text()
    (tmp_path / "serve.log").write_text(log)
    (tmp_path / "pip-list.txt").write_text("Package      Version\n------------ -------\ntransformers 4.48.3\n")
    facts = api.diagnose([str(tmp_path)], kb=kb).facts
    assert facts.model_path and facts.model_path.endswith("Qwen3-32B")
    holds, detail, found = compat.ask("model-type-transformers", kb.compat, facts, {})
    assert holds is True and found["expected"] == "4.51.0", detail
