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


def test_an_error_quoted_in_prose_is_named_a_little_less_surely_and_says_so(kb):
    as_log = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
    in_prose = "vLLM 启动时报错 CUDA out of memory. Tried to allocate 2.00 GiB，怎么解决？\n"
    log_first = _first(api.diagnose_texts([("paste", as_log)], kb=kb))
    prose_first = _first(api.diagnose_texts([("paste", in_prose)], kb=kb))
    assert log_first is not None and prose_first is not None
    assert log_first.rule_id == prose_first.rule_id == "cuda-oom"
    assert prose_first.confidence < log_first.confidence
    assert any("quoted in prose" in r for r in prose_first.reasons)
    assert not any("quoted in prose" in r for r in log_first.reasons)


def test_log_lines_are_not_prose():
    from diagnose.engine.scope import looks_like_prose

    assert looks_like_prose("the server dies with GLIBCXX_3.4.30 not found when it loads the model")
    assert looks_like_prose("[Bug]: KeyError: 'qwen3_next' when loading Qwen3-Next with transformers 4.55 and it fails")
    for line in (
        "ERROR 05-01 12:00:00 [core.py:12] ValueError: The checkpoint you are trying to load has model type x",
        "(VllmWorker rank=0 pid=12) ERROR: the process is not responding and it was killed by the watchdog",
        "RuntimeError: The NVIDIA driver on your system is too old (found version 11040). Please update it",
        "Feb 24 11:16:31 host systemd[1]: ollama.service: A process of this unit has been killed by the OOM killer.",
    ):
        assert not looks_like_prose(line), line


def test_a_glibc_version_the_line_needs_is_compared_with_the_reported_one(kb):
    line = ("ImportError: /lib64/libc.so.6: version `GLIBC_2.32' not found (required by "
            "/opt/venv/lib/python3.10/site-packages/vllm/_C.abi3.so)\n")
    older = api.diagnose_texts([("paste", line + "Libc version: glibc-2.17\n")], kb=kb)
    alone = api.diagnose_texts([("paste", line)], kb=kb)
    assert older.facts.glibc_version == "2.17"
    assert older.findings[0].rule_id == alone.findings[0].rule_id == "glibc-libstdcxx-too-old"
    assert any("needs 2.32; glibc version is 2.17" in r for r in older.findings[0].reasons)
    assert not any("glibc version is" in r for r in alone.findings[0].reasons)


def test_the_platform_string_of_a_collect_manifest_gives_the_glibc_version():
    from diagnose.artifacts import host

    facts = host.line_facts("Platform: Linux-6.18.44-fc-v657-gpu-x86_64-with-glibc2.39")
    assert facts is not None and facts.glibc_version == "2.39"


ISSUE_FORM = (  # the form fields of https://github.com/NVIDIA/open-gpu-kernel-modules/issues/276 (2022-06-01)
    "### NVIDIA Open GPU Kernel Modules Version\n\n515.48.07\n\n"
    "### Does this happen with the proprietary driver (of the same version) as well?\n\nNo\n\n"
    "### Operating System and Version\n\nGentoo\n\n### Kernel Release\n\n5.15.41-gentoo\n\n"
    "### Hardware: GPU\n\nNVIDIA GeForce GTX 1660 Ti\n"
)


def test_an_issue_forms_fields_are_facts(kb):
    facts = api.diagnose_texts([("issue.md", ISSUE_FORM)], kb=kb).facts
    assert facts.kernel_release == "5.15.41-gentoo"
    assert facts.driver_version == "515.48.07"
    assert facts.kernel_module == "open"


# a report's setup list and pip's build failure (Dao-AILab/flash-attention#1759, verbatim lines)
SETUP = ("- PyTorch: 2.2.0 (installed via conda, compiled with CUDA 11.8)\n- System CUDA (nvcc): {nvcc}\n"
         "- Python: 3.10\n\n  Building wheel for flash-attn (setup.py): finished with status 'error'\n"
         "  Running setup.py clean for flash-attn\nFailed to build flash-attn\n")


def test_a_build_failure_beside_a_toolkit_of_another_major_than_torchs_is_the_toolkit_mismatch(kb):
    first = _first(api.diagnose_texts([("report", SETUP.format(nvcc="12.9"))], kb=kb))
    assert first is not None and first.rule_id == "cuda-toolkit-mismatch"
    assert any("12.9" in r and "11.8" in r for r in first.reasons)


def test_the_same_build_failure_with_a_toolkit_of_torchs_major_is_not(kb):
    diagnosis = api.diagnose_texts([("report", SETUP.format(nvcc="11.8"))], kb=kb)
    assert all(f.rule_id != "cuda-toolkit-mismatch" for f in diagnosis.findings)


def test_nvcc_version_output_and_collect_env_give_the_toolkit(kb):
    nvcc = "nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 10.1, V10.1.243\n"
    env = "PyTorch version: 2.3.1+cu121\nCUDA runtime version: 12.1.105\n"
    assert api.diagnose_texts([("nvcc.txt", nvcc)], kb=kb).facts.toolkit_cuda == "10.1"
    facts = api.diagnose_texts([("env.txt", env)], kb=kb).facts
    assert (facts.toolkit_cuda, facts.torch_cuda) == ("12.1", "12.1")


def test_a_missing_submodule_shows_its_package_is_installed(kb):
    # TensorRT-LLM's Qwen build on transformers 4.33 (a two-line version list that names no transformers)
    text = ("Traceback (most recent call last):\n  File \"build.py\", line 13, in <module>\n"
            "    from transformers.models.qwen2 import Qwen2Config, Qwen2ForCausalLM\n"
            "ModuleNotFoundError: No module named 'transformers.models.qwen2'\n")
    first = _first(api.diagnose_texts([("error.log", text), ("versions.txt", "tensorrt_llm==0.7.0\n")], kb=kb))
    assert first is not None and first.rule_id == "transformers-unknown-model-type"


def test_a_setup_list_naming_torch_does_not_make_other_packages_absent(kb):
    # "- PyTorch: 2.2.0" states one version; it is not a listing that shows torchvision missing
    text = "- PyTorch: 2.5.1+cu124\n\nRuntimeError: operator torchvision::nms does not exist\n"
    diagnosis = api.diagnose_texts([("report", text)], kb=kb)
    assert diagnosis.facts.packages.get("torch") == "2.5.1+cu124" and diagnosis.facts.torch_cuda == "12.4"
    assert _first(diagnosis) is not None and _first(diagnosis).rule_id == "torchvision-torch-mismatch"
