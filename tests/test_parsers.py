"""Parsers on real shapes of output: pip freeze forms, pip list JSON, tracebacks with prefixes."""

from __future__ import annotations

import io

from diagnose.artifacts import pip, pylog, reader, sniff


def scan_text(text: str):
    lines = []
    source = reader.TextSource("paste", io.BufferedReader(io.BytesIO(text.encode())))  # type: ignore[arg-type]
    result = sniff.scan(source, lambda n, k, t, hints: lines.append((n, k, t)))
    return result, lines


def test_pip_freeze_forms():
    assert pip.parse_freeze_line("torch==2.9.1+cu128") == ("torch", "2.9.1+cu128")
    assert pip.parse_freeze_line("Flash_Attn==2.8.3") == ("flash-attn", "2.8.3")
    assert pip.parse_freeze_line("sglang[all]==0.5.8.post1") == ("sglang", "0.5.8.post1")
    assert pip.parse_freeze_line(
        "flashinfer-python @ https://github.com/flashinfer-ai/flashinfer/releases/download/v0.6.3/flashinfer_python-0.6.3-cp39-abi3-linux_x86_64.whl"
    ) == ("flashinfer-python", "0.6.3")
    assert pip.parse_freeze_line("-e git+https://github.com/sgl-project/sglang.git@abc#egg=sglang&subdirectory=python") == ("sglang", None)
    assert pip.parse_freeze_line("INFO: Started server process [1234]") is None


def test_pip_list_json_and_install_logs():
    assert pip.parse_list_json('[{"name": "Torch", "version": "2.10.0"}]') == {"torch": "2.10.0"}
    assert pip.parse_install_line("Successfully installed torch-2.10.0+cu128 torchvision-0.25.0 triton-3.6.0") == {
        "torch": "2.10.0+cu128", "torchvision": "0.25.0", "triton": "3.6.0"}
    assert pip.parse_install_line(" + torch==2.10.0+cu128") == {"torch": "2.10.0+cu128"}
    assert pip.parse_install_line(" - torch==2.9.1+cu128") == {}
    assert pip.torch_cuda_tag("2.9.1+cu128") == "12.8"
    assert pip.torch_cuda_tag("2.2.1+cpu") is None


def test_a_paste_with_traceback_and_freeze_is_split():
    text = (
        "\x1b[31m[2026-02-19 04:01:02 TP3] Traceback (most recent call last):\x1b[0m\n"
        '[2026-02-19 04:01:02 TP3]   File "/root/ml-env/lib/python3.12/site-packages/sglang/srt/x.py", line 5, in f\n'
        "[2026-02-19 04:01:02 TP3]     import sgl_kernel\n"
        "[2026-02-19 04:01:02 TP3] ImportError: [sgl_kernel] CRITICAL: Could not load any common_ops library\n"
        "INFO: next\n"
        "torch==2.10.0+cu128\n"
        "torchvision==0.25.0\n"
        "sgl-kernel==0.3.21\n"
    )
    result, lines = scan_text(text)
    assert result.facts.packages == {"torch": "2.10.0+cu128", "torchvision": "0.25.0", "sgl-kernel": "0.3.21"}
    assert result.facts.torch_cuda == "12.8"
    [tb] = result.tracebacks
    assert tb.exception_line == 4 and tb.exception.startswith("ImportError: [sgl_kernel]")
    kinds = [k for _, k, _ in lines]
    assert kinds[:4] == ["traceback"] * 4 and kinds[4] == "server-log" and kinds[5:] == ["pip-freeze"] * 3
    assert "\x1b" not in lines[0][2]
    assert [s.kind for s in result.segments] == ["server-log", "pip-freeze"]


def test_chained_traceback_keeps_both_exceptions():
    text = (
        "Traceback (most recent call last):\n"
        '  File "a.py", line 1, in <module>\n'
        "KeyError: 'glm_moe_dsa'\n"
        "\n"
        "During handling of the above exception, another exception occurred:\n"
        "\n"
        "Traceback (most recent call last):\n"
        '  File "b.py", line 2, in <module>\n'
        "ValueError: The checkpoint you are trying to load has model type `glm_moe_dsa` but Transformers does not recognize this architecture.\n"
    )
    result, _ = scan_text(text)
    assert [t.exception_line for t in result.tracebacks] == [3, 9]


def test_ansi_is_stripped_everywhere():
    assert pylog.strip_ansi("\x1b[1;31mERROR\x1b[0m boom") == "ERROR boom"


def test_collect_env_lines_give_facts():
    text = (
        "PyTorch version: 2.9.1+cu128\n"
        "CUDA used to build PyTorch: 12.8\n"
        "Nvidia driver version: 570.86.15\n"
        "[pip3] torchvision==0.24.1+cu128\n"
    )
    result, _ = scan_text(text)
    f = result.facts
    assert f.packages["torch"] == "2.9.1+cu128" and f.packages["torchvision"] == "0.24.1+cu128"
    assert f.torch_cuda == "12.8" and f.driver_version == "570.86.15"


def test_a_pip_list_without_its_header_is_a_package_list(kb):
    # `pip list | grep torch` as people paste it: the rows without the `Package  Version` header
    from diagnose import api

    text = "torch                    2.11.0+cu130\ntorchvision              0.25.0+cu130\n"
    facts = api.diagnose_texts([("paste", text)], kb=kb).facts
    assert facts.packages == {"torch": "2.11.0+cu130", "torchvision": "0.25.0+cu130"}
    assert facts.torch_cuda == "13.0"


def test_a_traceback_whose_line_prefixes_differ_in_digits_is_one_traceback_cut_before_its_exception():
    # kubectl logs --timestamps over vLLM's own prefix (OpenRLHF/OpenRLHF#336): each line carries its own nanoseconds
    text = (
        "2024-06-28T06:11:52.685302801Z (LLMRayActor pid=20770) ERROR 06-28 06:11:45 worker_base.py:145] Error executing"
        " method initialize_cache. This might cause deadlock in distributed execution.\n"
        "2024-06-28T06:11:52.685304690Z (LLMRayActor pid=20770) ERROR 06-28 06:11:45 worker_base.py:145] Traceback"
        " (most recent call last):\n"
        "2024-06-28T06:11:52.685306698Z (LLMRayActor pid=20770) ERROR 06-28 06:11:45 worker_base.py:145]   File"
        ' "/usr/local/lib/python3.10/dist-packages/vllm/worker/worker_base.py", line 137, in execute_method\n'
        "2024-06-28T06:11:52.685308737Z (LLMRayActor pid=20770) ERROR 06-28 06:11:45 worker_base.py:145]     return"
        " executor(*args, **kwargs)\n"
    )
    result, _ = scan_text(text)
    assert [(tb.start, tb.exception_line) for tb in result.tracebacks] == [(2, None)]
    assert result.cut_at == 2


def test_a_crash_loop_keeps_a_bounded_number_of_tracebacks_and_reports_the_same_unexplained_errors(tmp_path, kb):
    # real text: the H200 device-side-assert reproduction's traceback, 300 restarts of it with other numbers; a
    # traceback cut by the next one's start is dropped, and past PER_TEMPLATE tracebacks of one exception template
    # the rest are not kept (memory grew with the log), while the report stays that of keeping them all
    from conftest import FIXTURES

    from diagnose import api
    from diagnose.artifacts import pylog, reader, sniff

    crash = (FIXTURES / "device-side-assert--repro-h200-embedding" / "fail-device-assert.log").read_text()
    log = tmp_path / "loop.log"
    log.write_text("".join(crash.replace("pid=", f"pid={i}") for i in range(300)))
    source = reader.open_inputs([str(log)]).sources[0]
    result = sniff.scan(source, lambda *a: None)
    assert 0 < len(result.tracebacks) <= pylog.PER_TEMPLATE * 2
    bounded = api.diagnose([str(log)], kb=kb)
    original = pylog.TracebackTracker._keep_bounded
    try:
        pylog.TracebackTracker._keep_bounded = lambda self, tb: None  # every traceback kept
        every = api.diagnose([str(log)], kb=kb)
    finally:
        pylog.TracebackTracker._keep_bounded = original
    assert [f.rule_id for f in bounded.findings] == [f.rule_id for f in every.findings]
    assert [(e.line, e.text) for e in bounded.unmatched_errors] == [(e.line, e.text) for e in every.unmatched_errors]


def test_an_aligned_package_list_keeps_the_row_of_its_longest_name():
    # `pip list | grep` output pasted without its header (vllm-project/vllm#56829): the longest name is followed by
    # one space only, and it was the one package the report was about
    result, _ = scan_text("vllm        0.29.1rc1.dev47+gdc36fcce9\ntorch       2.14.0+cu130\n"
                          "torchvision 0.28.0+cu129\ntorchaudio  2.11.0+cu129\n")
    assert result.facts.packages["torchvision"] == "0.28.0+cu129"
    assert result.facts.packages["torch"] == "2.14.0+cu130"


def test_a_sentence_with_a_version_is_not_a_package_row():
    result, _ = scan_text("Running on host a1\nrelease 2.1.0 was fine\n")
    assert "release" not in result.facts.packages


def test_the_next_commands_output_after_a_csv_query_is_not_a_gpu_row():
    # fixtures/no-kernel-image--repro-h200-torch-ext-sm80/env.txt: the nvidia-smi query, then a torch one-liner whose
    # output has commas too; it was read as a GPU "2.11.0+cu130 13.0 ['sm_75'" with driver 'sm_86'
    text = (
        "name, compute_cap, driver_version\n"
        "NVIDIA H200, 9.0, 580.159.04\n"
        "NVIDIA H200, 9.0, 580.159.04\n"
        "2.11.0+cu130 13.0 ['sm_75', 'sm_80', 'sm_86', 'sm_90', 'sm_100', 'sm_120']\n"
    )
    result, _ = scan_text(text)
    assert [(g.name, g.compute_capability) for g in result.facts.gpus] == [("NVIDIA H200", "9.0")] * 2
    assert result.facts.driver_version == "580.159.04"


def test_a_traceback_pasted_inside_pip_output_ends_at_its_less_indented_exception_line():
    # flashinfer-ai/flashinfer#371 as posted: pip indents the build's traceback, the paste lost the first line's indent
    text = (
        "Traceback (most recent call last):\n"
        '        File "<string>", line 2, in <module>\n'
        '        File "<pip-setuptools-caller>", line 34, in <module>\n'
        '        File "/xxx/flashinfer/python/setup.py", line 42, in <module>\n'
        '          raise RuntimeError("FlashInfer requires sm75+")\n'
        "      RuntimeError: FlashInfer requires sm75+\n"
    )
    result, _ = scan_text(text)
    assert [(tb.start, tb.exception_line) for tb in result.tracebacks] == [(1, 6)]
    assert result.cut_at is None
    # the same frames without their exception line are still a traceback cut short
    cut, _ = scan_text("".join(text.splitlines(keepends=True)[:5]))
    assert cut.cut_at == 1
