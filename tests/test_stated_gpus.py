"""The GPU a report names (a bug template's `GPU:` line, an issue form's GPU field) is a fact with its source:
it decides compute-capability conditions where no artifact lists the GPUs, and never counts as a GPU seen."""

from __future__ import annotations

import pytest
from conftest import FIXTURES

from diagnose import api

BF16 = "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0.\n"


@pytest.mark.parametrize("line, name, cc", [
    ("GPU：2080Ti", "2080Ti", "7.5"),  # LMFlow#88, a full-width colon
    ("- GPUs: 4 x NVIDIA H100 80GB HBM3", "4 x NVIDIA H100 80GB HBM3", "9.0"),
    ("**NVIDIA GPU**:RTX 4060 Laptop", "RTX 4060 Laptop", "8.9"),  # TensorRT's issue template
    ("GPU: Tesla V100-SXM2-16GB", "Tesla V100-SXM2-16GB", "7.0"),
    ("RTX3090 24G", "RTX3090 24G", "8.6"),  # a line that is nothing but the GPU (flood#35's report)
    ("A100 80GB", "A100 80GB", "8.0"),
])
def test_a_gpu_line_of_a_report_states_the_gpu_and_its_compute_capability(line, name, cc, kb):
    facts = api.diagnose_texts([("report.md", f"{line}\n{BF16}")], kb=kb).facts
    assert facts.stated_gpus[name]["compute_capability"] == cc
    assert facts.stated_gpus[name]["where"] == "line 1 of report.md"
    assert facts.gpus == []  # named, not seen


@pytest.mark.parametrize("line", ["GPU VRAM: 16", "GPU vendor: Nvidia (CUDA)", "GPUs: 8", "GPU: N/A", "GPU: none",
                                  "T4 runs fine after the fix", "RTX 3090 and 4090 both crash here"])
def test_lines_that_do_not_name_a_gpu_model_state_nothing(line, kb):
    assert api.diagnose_texts([("report.md", f"{line}\n")], kb=kb).facts.stated_gpus == {}


def test_an_issue_forms_gpu_field_states_the_gpu(kb):
    form = "### GPU vendor\n\nNvidia (CUDA)\n\n### GPU model\n\nrtx 4090\n\n### GPU VRAM\n\n16\n"
    facts = api.diagnose_texts([("issue.md", form)], kb=kb).facts
    assert list(facts.stated_gpus) == ["rtx 4090"]
    assert facts.stated_gpus["rtx 4090"]["compute_capability"] == "8.9"


def test_the_named_gpu_decides_a_compute_capability_condition_and_says_where_it_came_from(kb):
    newer = api.diagnose_texts([("report.md", "GPU: A100\n" + BF16)], kb=kb)
    assert not any(f.rule_id == "bf16-unsupported-gpu" for f in newer.findings)
    assert any(v.rule_id == "bf16-unsupported-gpu" and "the GPU the report names: A100" in v.reason
               for v in newer.rejected)
    older = api.diagnose_texts([("report.md", "GPU: T4\n" + BF16)], kb=kb)
    assert older.findings[0].rule_id == "bf16-unsupported-gpu"
    assert any("the GPU the report names: T4" in r for r in older.findings[0].reasons)


def test_a_gpu_an_artifact_lists_outranks_the_one_a_report_names(kb):
    smi = "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-00000000-0000-0000-0000-000000000000)\n"
    d = api.diagnose_texts([("report.md", "GPU: T4\n" + BF16), ("nvidia-smi-L.txt", smi)], kb=kb)
    assert d.facts.compute_capabilities() == ["8.0"]
    assert not any(f.rule_id == "bf16-unsupported-gpu" for f in d.findings)


def test_a_named_gpu_is_not_a_gpu_seen_by_the_process(kb):
    # "the GPUs are listed" argues against a driver that is not loaded; a report naming its GPU does not
    text = "GPU: GeForce RTX 3090\nNVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. " \
           "Make sure that the latest NVIDIA driver is installed and running.\n"
    d = api.diagnose_texts([("report.md", text)], kb=kb)
    assert d.facts.gpus == []
    assert d.findings and d.findings[0].rule_id in {"nvidia-driver-not-loaded", "no-gpu-visible"}
    assert not any("GPU(s)" in r for r in d.findings[0].reasons)


@pytest.mark.parametrize("line, name, cc", [
    ("gpu V100 32G 显存。", "V100 32G 显存", "7.0"),  # THUDM/GLM-4#510's setup list: no colon
    ("GPU T4", "T4", "7.5"),
])
def test_a_setup_line_naming_the_gpu_without_a_colon_states_it(line, name, cc, kb):
    facts = api.diagnose_texts([("report.md", f"{line}\n")], kb=kb).facts
    assert facts.stated_gpus[name]["compute_capability"] == cc


@pytest.mark.parametrize("line", ["GPU 0 has a total capacity of 22.30 GiB", "GPU utilization 99%", "GPU hang detected"])
def test_a_gpu_sentence_without_a_model_states_nothing(line, kb):
    assert api.diagnose_texts([("server.log", f"{line}\n")], kb=kb).facts.stated_gpus == {}


ENGINE = (FIXTURES / "healthy" / "server-vllm-0.10.2-v1-jetson-thor" / "server.log").read_text()


def test_an_engine_set_up_for_bfloat16_on_a_gpu_without_it_is_the_bf16_failure(kb):
    # the real vLLM startup (its engine config says dtype=torch.bfloat16), cut before any error, with a report
    # that names a V100: vLLM refuses bfloat16 below compute capability 8.0
    diagnosis = api.diagnose_texts([("server.log", ENGINE), ("report.md", "GPU: Tesla V100-SXM2-16GB\n")], kb=kb)
    assert diagnosis.findings and diagnosis.findings[0].rule_id == "bf16-unsupported-gpu"


def test_the_same_engine_config_alone_or_on_an_ampere_gpu_is_no_finding(kb):
    for texts in ([("server.log", ENGINE)], [("server.log", ENGINE), ("report.md", "GPU: A100-SXM4-80GB\n")]):
        assert all(f.rule_id != "bf16-unsupported-gpu" for f in api.diagnose_texts(texts, kb=kb).findings)


@pytest.mark.parametrize("line, index, name, cc", [
    ("  Device 0: NVIDIA GeForce GTX 765M, compute capability 3.0", 0, "NVIDIA GeForce GTX 765M", "3.0"),  # ollama PR 1834
    ("  Device 1: NVIDIA GeForce RTX 3090, compute capability 8.6, VMM: yes", 1, "NVIDIA GeForce RTX 3090", "8.6"),
    ("2024/01/14 19:50:06 gpu.go:138: CUDA GPU is too old. Falling back to CPU mode. Compute Capability detected: 5.2",
     None, None, "5.2"),  # ollama#1992
])
def test_a_device_list_of_llama_cpp_or_ollama_is_a_gpu_seen_with_its_capability(line, index, name, cc, kb):
    facts = api.diagnose_texts([("server.log", line + "\n")], kb=kb).facts
    assert [(g.index, g.name, g.compute_capability) for g in facts.gpus] == [(index, name, cc)]


def test_a_gpu_a_reporter_says_they_have_is_stated_with_its_capability(kb):
    line = "I have a gtx 950M (maybe it's too old ^^'), cuda 12.3, Nvidia driver 545.23.08, ubuntu 22.04.3\n"
    facts = api.diagnose_texts([("prose.txt", line)], kb=kb).facts
    assert facts.stated_gpus["gtx 950M"]["compute_capability"] == "5.0"  # a Maxwell notebook part (legacy GPU table)
    assert facts.gpus == []


def test_a_kepler_device_in_a_failing_llama_cpp_log_is_a_gpu_too_old(kb):
    log = ("ggml_init_cublas: found 1 CUDA devices:\n  Device 0: NVIDIA GeForce GTX 765M, compute capability 3.0\n\n"
           "cuBLAS error 3 at /go/src/github.com/jmorganca/ollama/llm/llama.cpp/gguf/ggml-cuda.cu:5552\n")
    assert api.diagnose_texts([("server.log", log)], kb=kb).findings[0].rule_id == "gpu-capability-too-low"
    healthy = log.replace("GTX 765M, compute capability 3.0", "RTX 3090, compute capability 8.6").replace(
        "cuBLAS error 3 at /go/src/github.com/jmorganca/ollama/llm/llama.cpp/gguf/ggml-cuda.cu:5552\n", "")
    assert api.diagnose_texts([("server.log", healthy)], kb=kb).findings == []


def test_the_gpu_a_reporter_met_the_error_on_decides_which_generations_rule_it_is(kb):
    # catie-aq/flashT5#6: Triton's 99 KB limit is SM86's (A10G) as well as SM120's; the A10G named in the report rules
    # out the SM120 rule, an RTX 5090 named the same way keeps it
    oor = ("triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 163840, Hardware limit: "
           "101376. Reducing block sizes or num_stages may help.\n")
    said = "I tried to fine-tune CATIE-AQ/FAT5-small-flan-en but I got this error on {} / AWS EC2:\n"
    on_a10g = api.diagnose_texts([("prose.txt", said.format("A10g")), ("log.txt", oor)], kb=kb)
    assert on_a10g.facts.stated_gpus["A10g"]["compute_capability"] == "8.6"
    assert "sm120-shared-memory-nan" not in [f.rule_id for f in on_a10g.findings]
    on_5090 = api.diagnose_texts([("prose.txt", said.format("an RTX 5090")), ("log.txt", oor)], kb=kb)
    assert on_5090.findings[0].rule_id == "sm120-shared-memory-nan"
    assert on_a10g.findings[0].rule_id == "triton-shared-memory-exceeds-gpu"  # the same refusal on SM86 is this one's


@pytest.mark.parametrize("line,name,cc", [
    # ByteDance-Seed/FlexPrefill#8: the GPU a run was made on, said without "I"
    ("When running FlexPrefill on an RTX 4090, we encountered a Shared Memory overflow issue.", "RTX 4090", "8.9"),
    # InternLM/lmdeploy#2451: "my computer is an A6000 48G"
    ("我的电脑是A6000 48G,我想部署16B的模型应该是可以的。", "A6000", "8.6"),
])
def test_a_gpu_a_report_says_it_ran_on_or_has_is_stated(line, name, cc, kb):
    facts = api.diagnose_texts([("prose.txt", line + "\n")], kb=kb).facts
    assert facts.stated_gpus[name]["compute_capability"] == cc
    assert facts.gpus == []
