"""Signals that reason from knowledge: entities the KB's tables know, and excerpts cut short."""

from __future__ import annotations

import regex

from conftest import FIXTURES, ROOT

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
        # Python's warnings module prefixes the file and line it warns from
        "/opt/conda/lib/python3.9/site-packages/torchvision/io/image.py:13: UserWarning: Failed to load image Python"
        " extension: libtorch_cuda_cu.so: cannot open shared object file: No such file or directory",
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


def _ids(text, kb):  # type: ignore[no-untyped-def]
    return [f.rule_id for f in api.diagnose_texts([("paste", text)], kb=kb).findings]


def test_a_sigbus_in_nccl_frames_is_shared_memory_that_could_not_be_backed(kb):
    # UCX's handler (msr-fiddle/pipedream#76 wording) and gdb's, each with the NCCL frames it printed
    ucx = ("[8d6bf97c3bf4:3039 :0:3095] Caught signal 7 (Bus error: nonexistent physical address)\n"
           "==== backtrace (tid:   3095) ====\n"
           " 2 0x000000000007587d ncclGroupEnd()  ???:0\n"
           " 4 0x0000000000059e97 ncclGetUniqueId()  ???:0\n")
    gdb = ('Thread 787 "imagenet_fake_d" received signal SIGBUS, Bus error.\n'
           "#0 0x00007f6b59544f3b in ncclShmOpen(char*, unsigned long, void**, void**, int, void**) ()\n"
           "#1 0x00007f6b595436d7 in ncclProxyService(void*) ()\n")
    for text in (ucx, gdb):
        assert _ids(text, kb)[:1] == ["nccl-shm-too-small"], text


def test_nccl_frames_without_a_bus_error_are_not_the_shared_memory(kb):
    segv = ("[8d6bf97c3bf4:3039 :0:3095] Caught signal 11 (Segmentation fault: address not mapped to object)\n"
            " 2 0x000000000007587d ncclGroupEnd()  ???:0\n"
            " 4 0x0000000000059e97 ncclGetUniqueId()  ???:0\n")
    assert "nccl-shm-too-small" not in _ids(segv, kb)
    pcie = "[74889.542044] pcieport 0000:00:02.0: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer\n"
    assert "nccl-shm-too-small" not in _ids(pcie, kb)


def test_a_build_that_cannot_execute_its_nvcc_has_no_usable_toolkit(kb):
    # distutils' wording when CUDA_HOME holds a ':' list (facebookresearch/SparseConvNet#94), its double-quoted
    # form (MVIG-SJTU/AlphaPose#765), and the shell's (Microway/gpu-burn#8)
    for text in ("unable to execute ':/usr/local/cuda-8.0/bin/nvcc': No such file or directory\n"
                 "error: command ':/usr/local/cuda-8.0/bin/nvcc' failed with exit status 1\n",
                 "unable to execute \"'/usr/local/cuda'/bin/nvcc\": No such file or directory\n",
                 "/bin/sh: /bin/nvcc: No such file or directory\nmake: *** [Makefile:38: gpu_burn.cuda_kernel] Error 127\n"):
        assert _ids(text, kb)[:1] == ["cuda-toolkit-missing"], text


def test_a_report_that_the_process_was_oom_killed_is_host_memory(kb):
    assert _ids("[Bug] scheduler OOM-killed during weight load on two nodes\n", kb)[:1] == ["host-oom"]
    # Ray's list of what might have happened is not a statement that it did
    ray = ("Worker unexpectedly exits with a connection error code 2. End of file. There are some potential root "
           "causes. (1) The process is killed by SIGKILL by OOM killer due to high memory usage.\n")
    assert "host-oom" not in _ids(ray, kb)


def test_torchvisions_image_extension_warning_is_not_an_extension_built_for_another_torch(kb):
    warning = ("/opt/conda/lib/python3.9/site-packages/torchvision/io/image.py:13: UserWarning: Failed to load image "
               "Python extension: libtorch_cuda_cu.so: cannot open shared object file: No such file or directory\n")
    assert "torch-extension-abi-mismatch" not in _ids(warning, kb)
    # the same library missing when an extension is imported is
    imported = "ImportError: libtorch_cuda_cu.so: cannot open shared object file: No such file or directory\n"
    assert _ids(imported, kb)[:1] == ["torch-extension-abi-mismatch"]


def test_a_cache_path_denied_outside_pythons_errno_form_is_the_cache_dir(kb):
    text = ("On the media server, HuggingFace weight download crashed with `Permission denied: "
            "/home/container_app_user/cache_root/huggingface`; the server never became healthy.\n")
    assert _ids(text, kb)[:1] == ["cache-dir-not-writable"]
    assert "cache-dir-not-writable" not in _ids("bash: /usr/local/bin/run.sh: Permission denied\n", kb)


def test_an_xid_named_in_a_report_is_the_xid_its_number_says(kb):
    diagnosis = api.diagnose_texts([("title.txt", "Call of Duty: Black Ops 3 eventual XID 31 crash\n")], kb=kb)
    assert diagnosis.findings and diagnosis.findings[0].rule_id == "xid-other"
    assert "Xid 31" in " ".join(s["step"] for s in diagnosis.findings[0].fix)  # the catalogue row of that number
    assert _ids("We get Xid 79 on one node every few days\n", kb)[:1] == ["xid-fallen-off-bus"]
    # "caused by previous Xid 149" is the NVLink rule's, an Xid 45 is a clean-up, and no number is no Xid
    for text in ("NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch 00000001 caused by previous Xid 149\n",
                 "GPU 00000000:01:00.0: Detected Critical Xid Error\n"):
        assert "xid-other" not in _ids(text, kb), text


def test_a_gsp_timeout_named_beside_an_xid_is_the_gsp_with_the_xid_under_it(kb):
    diagnosis = api.diagnose_texts([("title.txt", "GPU hangs: GSP heartbeat timeout -> Xid 109/8 under load\n")], kb=kb)
    assert diagnosis.findings and diagnosis.findings[0].rule_id == "gsp-firmware-error"
    assert [s.rule_id for s in diagnosis.findings[0].symptoms] == ["xid-other"]
    # the driver's own banner is the banner's signal, not a second one from the same words
    banner = "NVRM: _kgspLogXid119: ********************************* GSP Timeout **********************************\n"
    hits = api.diagnose_texts([("dmesg", banner)], kb=kb).findings
    assert hits and hits[0].rule_id == "gsp-firmware-error"
    assert "gsp-timeout-named" not in {e.signal for e in hits[0].evidence}


HOLDOUT24 = FIXTURES.parent / "holdout24-c"


def test_a_kv_cache_set_up_frame_names_the_cause_only_where_the_cut_traceback_stops(kb):
    # real text (ray-project/ray#55209): vLLM's determine_available_memory runs profile_run and the model's dummy
    # forward; cut there, the failure was in the forward (a torch.compile cache issue), not in sizing the KV cache
    lines = (HOLDOUT24 / "torch-compile-failed--ray-55209" / "traceback.txt").read_text().splitlines(keepends=True)
    whole = api.diagnose_texts([("paste", "".join(lines))], kb=kb)
    assert "kv-cache-insufficient" not in [f.rule_id for f in whole.findings]
    stop = next(i for i, line in enumerate(lines) if "in determine_available_memory" in line)
    cut = api.diagnose_texts([("paste", "".join(lines[: stop + 2]))], kb=kb)  # the frame and its code line, then nothing
    first = _first(cut)
    assert first.rule_id == "kv-cache-insufficient" and first.confidence <= 0.55
    assert any("before its exception line" in r for r in first.reasons)


def test_windows_shows_in_paths_wheels_and_reports_and_turns_the_nccl_message_into_its_windows_cause(kb):
    from diagnose.artifacts import host

    windows = [
        '  File "C:\\Users\\me\\AppData\\Local\\Programs\\Python\\Python38\\lib\\site-packages\\torch\\distributed\\'
        'distributed_c10d.py", line 1013, in _new_process_group_helper',
        "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 (pid: 23152) of binary: "
        "U:\\Miniconda3\\envs\\llama2env\\python.exe",
        "  Downloading torch-2.1.0-cp311-cp311-win_amd64.whl (192.3 MB)",
        "OS: Microsoft Windows 11 Pro",
        "NCCL error with multi gpu on windows",
    ]
    for line in windows:
        assert (host.line_facts(line) or host.Facts()).os == "windows", line
    for line in ["sliding windows of 4096 tokens", '  File "/usr/lib/python3.10/site-packages/torch/x.py", line 1',
                 "OS: Ubuntu 22.04.4 LTS (x86_64)"]:
        assert (host.line_facts(line) or host.Facts()).os is None, line
    message = "RuntimeError: Distributed package doesn't have NCCL built in\n"
    assert _first(api.diagnose_texts([("paste", message)], kb=kb)).rule_id == "torch-cpu-build"  # Linux or unknown
    on_windows = api.diagnose_texts([("paste", message + windows[1] + "\n")], kb=kb)
    assert _first(on_windows).rule_id == "nccl-unavailable-on-windows"
    assert on_windows.facts.os == "windows"


def test_cuda_error_999_is_named_the_suspend_only_with_evidence_that_the_host_slept(kb):
    ollama = ('time=2024-09-05T09:20:35.624+08:00 level=DEBUG source=gpu.go:533 msg="Unable to load cudart" '
              'library=/opt/cuda/lib64/libcudart.so.12.6.37 error="cudart init failure: 999"\n')
    assert "uvm-broken-after-suspend" not in _ids(ollama, kb)  # 999 alone has other causes
    assert _ids("after gentoo linux sleep, ollama only use cpu\n" + ollama, kb)[0] == "uvm-broken-after-suspend"
    xla = ("E external/xla/xla/stream_executor/cuda/cuda_driver.cc:268] failed call to cuInit: CUDA_ERROR_UNKNOWN: "
           "unknown error\n")
    assert "uvm-broken-after-suspend" not in _ids(xla, kb)
    assert "uvm-broken-after-suspend" not in _ids("after resuming training from checkpoint the loss is NaN\n" + xla, kb)
    assert _ids("after resuming I typically get the following error:\n" + xla, kb)[0] == "uvm-broken-after-suspend"


def test_a_device_dump_with_the_display_watchdog_on_is_not_a_failure(kb):
    dump = (FIXTURES.parent / "holdout25-a" / "healthy--numba-pr6809-cuda-detect" / "cuda-detect.txt").read_text()
    assert "display-watchdog-timeout" not in _ids(dump, kb)
    assert _ids(dump + "numba.cuda.cudadrv.driver.CudaAPIError: [702] Call to cuMemcpyDtoH results in "
                "CUDA_ERROR_LAUNCH_TIMEOUT\n", kb)[0] == "display-watchdog-timeout"


def test_tritons_cuda_10_message_with_a_newer_cuda_is_a_triton_too_old_for_it(kb):
    line = ("torch._inductor.exc.InductorError: RuntimeError: Triton only support CUDA 10.0 or higher, but got CUDA "
            "version: {}\n")
    assert _ids(line.format("12.8"), kb)[0] == "triton-too-old-for-cuda"
    assert "triton-too-old-for-cuda" not in _ids(line.format("9.2"), kb)  # what the message is for
    old_header = "ptxas /tmp/t.ptx, line 5; fatal   : Unsupported .version {}; current version is '{}'\n"
    assert _ids(old_header.format("8.6", "8.5"), kb)[0] == "triton-too-old-for-cuda"
    assert _ids(old_header.format("8.7", "8.4"), kb)[0] == "triton-unsupported-arch"  # a Blackwell target's PTX


def test_a_report_that_lists_errors_it_did_not_see_names_none_of_them(kb):
    # the "GPU state after a failed P2P test" section of a real report (an RTX PRO 6000 pair whose NCCL P2P hangs):
    # the kernel log was clean, and the report says so by naming what was absent
    text = ("No related errors were observed in the kernel log:\n\n* No `NVRM: Xid`\n* No AER PCIe errors\n"
            "* No `GPU has fallen off the bus`\n")
    assert not api.diagnose_texts([("gpu-state.txt", text)], kb=kb).findings
    # the same words as the driver prints them are the failure
    seen = "NVRM: GPU 0000:06:00.0: GPU has fallen off the bus.\n"
    first = _first(api.diagnose_texts([("dmesg.txt", seen)], kb=kb))
    assert first is not None and first.rule_id == "xid-fallen-off-bus"


def test_a_negation_in_a_program_line_does_not_hide_the_error_after_it(kb):
    import regex

    from diagnose.engine import scope

    def negated(line: str, pattern: str) -> bool:  # the line's text up to the match, as the matcher keeps it
        return scope.negated(line[:regex.search(pattern, line).start()], line)

    assert negated("* No `GPU has fallen off the bus`", "has fallen off the bus")
    assert negated("We did not see any Xid 79 in dmesg on either node", "Xid 79")
    assert negated("- no `CUDA out of memory` errors since the upgrade", "CUDA out of memory")
    # a program's own words around the error: "No" and "not" belong to the message, not to a report
    assert not negated("ERROR: No matching distribution found for torch==2.1.0", "matching distribution found")
    assert not negated("RuntimeError: No CUDA GPUs are available", "No CUDA GPUs are available")
    assert not negated("OSError: could not load library libcudnn_ops.so.9", "load library")
    assert not negated("Could not find libcudart.so.12 in the library path", r"libcudart\.so")
    assert not negated("Error: there is no NVIDIA driver on your system", "NVIDIA driver on your system")


def test_a_help_screen_is_not_a_refused_command_line(kb):
    # `vllm --help`: argparse's banner, then the whole help; a refused command line prints the banner and an error
    banner = "usage: vllm [-h] [-v] {chat,complete,serve} ...\n"
    help_screen = (banner + "\nvLLM CLI\n\npositional arguments:\n  {chat,complete,serve}\n\noptions:\n"
                   "  -h, --help            show this help message and exit\n"
                   "  -v, --version         show program's version number and exit\n")
    assert not api.diagnose_texts([("console.log", help_screen)], kb=kb).findings
    refused = (FIXTURES / "unknown-launch-argument--repro-vllm-0.33" / "vllm-serve.log").read_text()
    first = _first(api.diagnose_texts([("vllm-serve.log", refused)], kb=kb))
    assert first is not None and first.rule_id == "unknown-launch-argument"


def test_a_model_class_missing_from_transformers_is_named_by_its_model_type_whatever_its_spelling(kb):
    # Qwen2VLForConditionalGeneration is the class of model_type qwen2_vl (open-compass/VLMEvalKit, transformers 4.44)
    line = ("ImportError: cannot import name 'Qwen2VLForConditionalGeneration' from 'transformers' "
            "(/root/miniconda3/envs/qwen/lib/python3.10/site-packages/transformers/__init__.py)\n")
    d = api.diagnose_texts([("traceback.txt", line), ("pip-freeze.txt", "transformers==4.44.2\ntorch==2.4.0\n")], kb=kb)
    top = d.findings[0]
    assert top.rule_id == "transformers-unknown-model-type"
    assert any("qwen2_vl needs transformers >=" in r and "4.44.2 is installed" in r for r in top.reasons)
    other = line.replace("Qwen2VLForConditionalGeneration", "NoSuchThingForConditionalGeneration")
    assert not api.diagnose_texts([("traceback.txt", other)], kb=kb).findings


def test_a_rank_at_or_above_the_processes_per_node_that_asks_for_a_missing_gpu_used_its_global_rank(kb):
    # scripts/repro_global_rank.sh: two torchrun "nodes" of one process each; rank 1 calls set_device(1) on a one-GPU node
    log = ("[rank1]: Traceback (most recent call last):\n"
           "[rank1]:   File \"/work/train.py\", line 9, in <module>\n"
           "[rank1]:     torch._C._cuda_setDevice(device)\n"
           "[rank1]: torch.AcceleratorError: CUDA error: invalid device ordinal\n"
           "[rank1]: GPU device may be out of range, do you have enough GPUs?\n")
    two_nodes = "+ torchrun --nnodes=2 --nproc_per_node=1 --node_rank=1 --master_addr=127.0.0.1 --master_port=29650 train.py\n"
    d = api.diagnose_texts([("server.log", log), ("command.txt", two_nodes)], kb=kb)
    assert d.facts.procs_per_node == "1"
    assert d.facts.script == "/work/train.py"  # torchrun's "[rank1]: " prefix does not hide the failing script
    assert d.findings[0].rule_id == "global-rank-as-device-index"
    assert any("at or above the processes started per node" in r for r in d.findings[0].reasons)
    # the same error where the launch starts more processes per node than the failing rank: too many for the GPUs
    one_node = "torchrun --nproc_per_node=8 train.py\n"
    d = api.diagnose_texts([("server.log", log), ("command.txt", one_node)], kb=kb)
    assert d.findings[0].rule_id == "tp-exceeds-gpu-count"


def test_an_older_arch_refused_by_nvcc_is_a_toolkit_too_old_unless_the_toolkit_is_cuda_13(kb):
    line = "nvcc fatal   : Unsupported gpu architecture 'compute_60'\n"  # caffe_rtpose#10: CUDA 7.5 on a Pascal GPU
    d = api.diagnose_texts([("build.log", line)], kb=kb)
    assert d.findings and d.findings[0].rule_id == "nvcc-too-old-for-gpu"
    # CUDA 13 dropped sm_50 - sm_72: the same refusal from a 13.0 nvcc means the toolkit is too new
    nvcc13 = "Cuda compilation tools, release 13.0, V13.0.48\n"
    d = api.diagnose_texts([("build.log", line), ("nvcc-version.txt", nvcc13)], kb=kb)
    assert not any(f.rule_id == "nvcc-too-old-for-gpu" for f in d.findings)


def test_macos_shows_in_collect_env_and_uname_and_a_mac_has_no_cuda_torch_to_blame(kb):
    from diagnose.artifacts import host

    # collect_env from a Mac where `pip install vllm` fell back to the sdist (vllm-project/vllm#7430, holdout52-e)
    case = ROOT / "holdout52-e" / "no-wheel-for-platform--vllm-macos-x86-torch"
    for line in ["OS: macOS 14.5 (x86_64)", "Python platform: macOS-14.5-x86_64-i386-64bit",
                 "Darwin mbp.local 23.5.0 Darwin Kernel Version 23.5.0: Wed May  1 20:09:52 PDT 2024; root:xnu",
                 "  Downloading torch-2.2.2-cp39-none-macosx_10_9_x86_64.whl (150.8 MB)"]:
        assert (host.line_facts(line) or host.Facts()).os == "macos", line
        # and the block prefilter selects it in a log too large for the per-line filter
        assert any(regex.search(p, line) for p in host.fact_line_patterns()), line
    for line in ["OS: Ubuntu 22.04.4 LTS (x86_64)", "the mac address of eth0 changed", "Platform: Linux-6.5.0-x86_64"]:
        assert (host.line_facts(line) or host.Facts()).os is None, line
    diagnosis = api.diagnose([str(p) for p in sorted(case.iterdir()) if p.name != "expected.yaml"], kb=kb)
    assert diagnosis.facts.os == "macos"
    assert _first(diagnosis).rule_id == "no-wheel-for-platform"
    assert "torch-cpu-build" not in [f.rule_id for f in diagnosis.findings]


def test_a_package_list_cut_before_a_name_does_not_rule_the_name_out(kb):
    from diagnose.engine.conditions import evaluate
    from diagnose.model import Facts

    # a pip freeze pasted only from accelerate to hf-xet beside flash_attn's undefined c10 symbol (ChenmienTan/RL2#8,
    # holdout52-b): torch sorts after the list's end, so the list cannot show it is missing
    case = ROOT / "holdout52-b" / "torch-extension-abi-mismatch--rl2-flash-attn-280-undefined-symbol"
    diagnosis = api.diagnose([str(p) for p in sorted(case.iterdir()) if p.name != "expected.yaml"], kb=kb)
    assert "torch" not in diagnosis.facts.packages
    first = _first(diagnosis)
    assert first.rule_id == "torch-extension-abi-mismatch" and first.confidence >= 0.85
    # a whole listing still rules a name out, and so does a cut one that the name sorts inside of
    cond = {"package": "torch", "installed": True, "effect": "require-if-known"}
    whole = Facts(packages={n: "1.0" for n in ["accelerate", "numpy", "safetensors", "transformers", "zipp"]})
    assert evaluate(cond, whole, {}, {})[0] is False
    cut = Facts(packages={n: "1.0" for n in ["accelerate", "aiohttp", "click", "datasets", "hf-xet"]})
    holds, said, _ = evaluate(cond, cut, {}, {})
    assert holds is None and "stops at hf-xet" in said
    shuffled = Facts(packages={n: "1.0" for n in ["numpy", "accelerate", "hf-xet", "click", "aiohttp", "datasets"]})
    assert evaluate(cond, shuffled, {}, {})[0] is False  # not a sorted listing: read as the whole environment


def test_curly_apostrophes_reach_the_signals_through_the_line_filter(kb):
    # Hyperscan scans bytes: a pattern's lone `.` (written for "doesn't" / "model's") met the three bytes of a curly
    # apostrophe and the line never reached the regex. Both lines are as reports pasted them (langchain-ai/langchain#17906,
    # holdout52-h; the nvidia-smi wording is one of nvidia-driver-not-loaded's examples)
    cases = {
        "The model’s max sew len (32768) is larger than the maximum number of tokens that can be stored in KV cache "
        "(18896). Try increasing ‘gpu_memory_utilization’ or decreasing ‘max_model_len’ when initializing the engine.":
            "kv-cache-insufficient",
        "NVIDIA-SMI has failed because it couldn‘t communicate with the NVIDIA driver.": "nvidia-driver-not-loaded",
    }
    for line, rule_id in cases.items():
        assert _first(api.diagnose_texts([("paste", line + "\n")], kb=kb)).rule_id == rule_id, line


def test_a_tensorrt_engine_from_another_gpu_or_release_is_named_and_its_fix_is_a_rebuild(kb):
    # NVIDIA/TensorRT#564 (TensorRT 7's wording) and NVIDIA/retinanet-examples#314 (TensorRT 8's, a library version)
    device = ("[TensorRT] ERROR: INVALID_CONFIG: The engine plan file is generated on an incompatible device, expecting "
              "compute 6.1 got compute 7.5, please rebuild.\n"
              "[TensorRT] ERROR: engine.cpp (1407) - Serialization Error in deserialize: 0 (Core engine deserialization "
              "failure)\n")
    release = ("6: The engine plan file is not compatible with this version of TensorRT, expecting library version 8.0.0 "
               "got 8.0.1, please rebuild.\n4: [runtime.cpp::deserializeCudaEngine::74] Error Code 4: Internal Error "
               "(Engine deserialization failed.)\n")
    for text in (device, release):
        finding = _first(api.diagnose_texts([("log.txt", text)], kb=kb))
        assert finding.rule_id == "tensorrt-engine-incompatible"
        assert any("--saveEngine" in (step.get("run") or "") for step in finding.fix)
    # an engine that loads is no failure, and a deserialization error alone is not enough to name it
    assert _ids("[10/10/2025-17:37:58] [TRT] [I] Loaded engine size: 161 MiB\n", kb) == []
    assert "tensorrt-engine-incompatible" not in _ids(
        "4: [runtime.cpp::deserializeCudaEngine::74] Error Code 4: Internal Error (Engine deserialization failed.)\n", kb)


def test_a_docker_run_without_gpus_supports_a_no_gpu_line_and_alone_names_nothing(kb):
    # anibali/docker-pytorch#27: the container was started without --gpus; inside it nvidia-smi is missing
    run = "docker run -it anibali/pytorch:1.4.0-cuda10.1 sh\n"
    symptom = "both nvcc and nvidia-smi not found.\n"
    alone = api.diagnose_texts([("command.txt", run)], kb=kb)
    assert alone.findings == []
    only_symptom = _first(api.diagnose_texts([("log.txt", symptom)], kb=kb))
    both = _first(api.diagnose_texts([("command.txt", run), ("log.txt", symptom)], kb=kb))
    assert both is not None and both.rule_id == "no-gpu-visible"
    assert any(e.text.startswith("docker run") for e in both.evidence)
    assert only_symptom is None or both.confidence > only_symptom.confidence
    # the same run asking for the GPUs is no support: the finding is only the symptom's
    with_gpus = _first(api.diagnose_texts([("command.txt", run.replace("-it", "-it --gpus all")),
                                           ("log.txt", symptom)], kb=kb))
    assert with_gpus is None or not any(e.text.startswith("docker run") for e in with_gpus.evidence)


def test_a_broken_torch_pin_is_a_dependency_conflict_unless_the_log_shows_torch_replaced(kb):
    # AUTOMATIC1111/stable-diffusion-webui#6871: pip's closing warning alone, an installed package's pin not met
    warning = ("ERROR: pip's dependency resolver does not currently take into account all the packages that are "
               "installed. This behaviour is the source of the following dependency conflicts.\n"
               "xformers 0.0.26.dev778 requires torch==2.2.2, but you have torch 2.2.1 which is incompatible.\n")
    first = _first(api.diagnose_texts([("pip.log", warning)], kb=kb))
    assert first is not None and first.rule_id == "pip-dependency-conflict"
    # facebookresearch/xformers#1049: the same warning after pip uninstalled the torch that was there
    swapped = ("      Successfully uninstalled torch-2.2.1+cu121\n" + warning.splitlines(keepends=True)[0]
               + "torchvision 0.17.1+cu121 requires torch==2.2.1, but you have torch 2.3.0+cu121 which is incompatible.\n"
               "Successfully installed nvidia-nccl-cu12-2.20.5 torch-2.3.0+cu121 triton-2.3.0 xformers-0.0.26.post1\n")
    first = _first(api.diagnose_texts([("pip.log", swapped)], kb=kb))
    assert first is not None and first.rule_id == "pip-resolver-replaced-torch"


def test_a_triton_kernel_over_the_gpus_shared_memory_is_named_and_sm120s_limit_stays_sm120s(kb):
    # sasha0552/pascal-pkgs-ci#50 (vLLM on Pascal, 48 KB per block): not the SM120 sizing problem
    pascal = ("triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 98304, Hardware limit: "
              "49152. Reducing block sizes or `num_stages` may help.\n")
    diagnosis = api.diagnose_texts([("log.txt", pascal)], kb=kb)
    assert diagnosis.findings and diagnosis.findings[0].rule_id == "triton-shared-memory-exceeds-gpu"
    assert all(f.rule_id != "sm120-shared-memory-nan" for f in diagnosis.findings)
    # the 99 KB limit (101376) is SM86 / SM89's and SM120's: on an SM120 GPU (nvidia-smi -q of the seed's RTX PRO 6000
    # Blackwell) it is sm120-shared-memory-nan and this rule is set aside; on the A6000 the report names, it is this rule
    smi = (FIXTURES / "sm120-shared-memory-nan--magik6k-kimi-k2-rtx6000bw" / "nvidia-smi-full.txt").read_text()
    report = (FIXTURES / "triton-shared-memory-exceeds-gpu--lmdeploy-2451" / "issue.txt").read_text()  # InternLM/lmdeploy#2451
    line = report.splitlines(keepends=True)[0]
    on_sm120 = api.diagnose_texts([("log.txt", line), ("nvidia-smi.txt", smi)], kb=kb)
    assert on_sm120.findings and on_sm120.findings[0].rule_id == "sm120-shared-memory-nan"
    on_a6000 = api.diagnose_texts([("issue.txt", report)], kb=kb)
    assert on_a6000.findings and on_a6000.findings[0].rule_id == "triton-shared-memory-exceeds-gpu"
    assert on_a6000.facts.stated_gpus["A6000"]["compute_capability"] == "8.6"


def test_a_cause_only_argued_against_is_set_aside_and_never_guessed(kb):
    # Dao-AILab/flash-attention#601: the build failed, but the command already ran with --no-build-isolation
    text = ("Install flash-attention error：ERROR: Could not build wheels for flash-attn, which is required to install "
            "pyproject.toml-based projects\n"
            "cmd：`MAX_JOBS=4 python -m pip install flash-attn --no-build-isolation`\n")
    diagnosis = api.diagnose_texts([("report.txt", text)], kb=kb)
    assert all(f.rule_id != "build-isolation-missing-torch" for f in diagnosis.findings)
    assert any(v.rule_id == "build-isolation-missing-torch" and "argued against" in v.reason for v in diagnosis.rejected)
