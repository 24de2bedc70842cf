"""Facts from real GPU-host output (fixtures/healthy/host-h200x2-snapshot, captured on 2x H200)."""

from __future__ import annotations

import json
import sys
import tarfile
from pathlib import Path

import pytest
from conftest import FIXTURES, run_cli

from diagnose import api
from diagnose.artifacts import host

SNAP = FIXTURES / "healthy" / "host-h200x2-snapshot"


def facts_of(*names: str, kb=None):
    return api.diagnose([str(SNAP / n) for n in names], kb=kb).facts


@pytest.mark.parametrize("name", ["nvidia-smi.txt", "nvidia-smi-q.txt", "nvidia-smi-q-x.xml", "nvidia-smi-csv.txt",
                                  "nvidia-smi-csv-noheader.txt"])
def test_every_nvidia_smi_form_gives_the_two_gpus(name, kb):
    f = facts_of(name, kb=kb)
    assert [g.name for g in f.gpus] == ["NVIDIA H200", "NVIDIA H200"]
    assert [g.bus_id for g in f.gpus] == ["0000:00:06.0", "0000:00:07.0"]
    assert f.driver_version == "580.159.04"
    assert all(g.memory_total_mib == 143771 for g in f.gpus)
    assert all(g.compute_capability == "9.0" for g in f.gpus), "from the CSV or from the GPU-name table"


def test_query_forms_carry_ecc_and_remapping(kb):
    for name in ("nvidia-smi-q.txt", "nvidia-smi-q-x.xml"):
        f = facts_of(name, kb=kb)
        assert f.cuda_driver_version == "13.0"
        assert [g.ecc_uncorrected for g in f.gpus] == [0, 0]
        assert [g.remapped_rows_pending for g in f.gpus] == [False, False]


def test_csv_without_units_or_header(kb):
    f = facts_of("nvidia-smi-csv-nounits.txt", kb=kb)
    assert [g.compute_capability for g in f.gpus] == ["9.0", "9.0"] and f.driver_version == "580.159.04"


def test_topology_p2p_and_nvlink(kb):
    f = facts_of("nvidia-smi-topo-m.txt", "nvidia-smi-topo-p2p-r.txt", "nvidia-smi-nvlink-s.txt", kb=kb)
    assert f.topology == {"GPU0": {"GPU1": "NV18"}, "GPU1": {"GPU0": "NV18"}}
    assert f.p2p == {"GPU0": {"GPU1": "OK"}, "GPU1": {"GPU0": "OK"}}
    assert len(f.nvlink["GPU0"]) == 18 and set(f.nvlink["GPU0"].values()) == {"26.562 GB/s"}


def test_kernel_module_driver_and_release(kb):
    f = facts_of("proc-driver-nvidia-version.txt", "uname.txt", "dmesg.txt", kb=kb)
    assert f.kernel_module == "open" and f.driver_version == "580.159.04"
    assert f.kernel_release == "6.18.44-fc-v657-gpu"


def test_collect_env_and_packages(kb):
    f = facts_of("collect-env.txt", kb=kb)
    assert f.packages["torch"] == "2.11.0+cu130" and f.torch_cuda == "13.0"
    assert f.driver_version == "580.159.04" and [g.name for g in f.gpus] == ["NVIDIA H200"] * 2
    freeze = facts_of("pip-freeze.txt", kb=kb).packages
    listed = facts_of("pip-list.json", kb=kb).packages
    assert {k: v for k, v in freeze.items() if k != "pip"} == {k: v for k, v in listed.items() if k != "pip"}
    assert freeze["transformers"] == "5.17.0"


def test_xid_lines_in_every_timestamp_form():
    forms = [
        "[ 8341.513252] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU has fallen off the bus.",
        "[Tue Mar  4 10:01:02 2025] NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
        "Mar 04 10:01:02 gpu-node-7 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU has fallen off the bus.",
        "2025-03-04T10:01:02.123456+00:00 gpu-node-7 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU has fallen off the bus.",
    ]
    for line in forms:
        facts = host.line_facts(line)
        assert facts and facts.xids[0].xid == 79 and facts.xids[0].pci == "0000:3b:00", line
        assert host.kernel_time(line)[0], line


def test_collect_bundle_round_trips_on_a_host_without_gpu(tmp_path: Path):
    bundle = tmp_path / "b.tar.gz"
    proc = run_cli("collect", "-o", str(bundle), "--python", sys.executable, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode()
    with tarfile.open(bundle) as tar:
        names = [Path(m.name).name for m in tar.getmembers()]
        manifest = json.load(tar.extractfile(next(m for m in tar.getmembers() if m.name.endswith("manifest.json"))))
    assert "manifest.json" in names and "nvml.json" in names and "env.txt" in names
    assert {i["name"] for i in manifest["items"]} >= {"nvml.json", "nvidia-smi.txt", "dmesg.txt", "pip-list.json"}
    data = json.loads(run_cli("--format", "json", "--exit-zero", str(bundle)).stdout)
    assert data["facts"]["packages"].get("click"), "the packages of the chosen Python come back"
    notes = [n for i in data["inputs"] for n in i["notes"]]
    failed = [i for i in manifest["items"] if i["status"] != "ok"]
    for item in failed:
        assert any(item["name"] in n for n in notes), f"{item['name']} not collected, but not reported"


OTHER_HOSTS = [
    # (fixture folder, driver, CUDA, first GPU name, its compute capability, GPU count) - real tables
    # of hosts this project never ran on, from public threads (each folder's expected.yaml)
    ("fixtures/healthy/host-a100-nvidia-smi-580", "580.126.09", "13.0", "NVIDIA A100-SXM4-40GB", "8.0", 2),
    ("fixtures/healthy/host-gtx1050-nvidia-smi-460", "460.91.03", "11.2", "GeForce GTX 1050", "6.1", 1),
    ("fixtures/healthy/host-rtx4070-nvidia-smi-550", "550.40.07", "12.4", "NVIDIA GeForce RTX 4070", "8.9", 1),
    ("fixtures/healthy/host-rtx4090d-nvidia-smi-550", "550.107.02", "12.4", "NVIDIA GeForce RTX 4090 D", "8.9", 1),
    ("holdout/healthy/nvidia-smi-a100-miniweather-12", "515.65.01", "11.7", "NVIDIA A100-SXM...", "8.0", 2),
    ("holdout/healthy/nvidia-smi-gtx680-cbio-38", "331.62", None, "GeForce GTX 680", "3.0", 3),
]


@pytest.mark.parametrize("folder,driver,cuda,name,cc,count", OTHER_HOSTS, ids=[h[0].split("/")[-1] for h in OTHER_HOSTS])
def test_nvidia_smi_tables_of_other_hosts(folder, driver, cuda, name, cc, count, kb):
    from conftest import ROOT

    files = [str(p) for p in (ROOT / folder).iterdir() if p.name != "expected.yaml"]
    f = api.diagnose(files, kb=kb).facts
    assert (f.driver_version, f.cuda_driver_version) == (driver, cuda)
    assert f.gpus[0].name == name and f.gpus[0].compute_capability == cc
    assert len(f.gpus) == count


def test_sglang_check_env(kb):
    from conftest import ROOT

    folder = ROOT / "fixtures" / "healthy" / "server-sglang-check-env-3817-h200"
    f = api.diagnose([str(p) for p in folder.iterdir() if p.name != "expected.yaml"], kb=kb).facts
    assert len(f.gpus) == 8 and {g.compute_capability for g in f.gpus} == {"9.0"}
    assert f.driver_version == "550.127.05"  # check_env labels the driver "CUDA Driver Version"
    assert f.packages["torch"] == "2.5.1+cu124" and f.torch_cuda == "12.4"
    assert f.packages["sgl-kernel"] == "0.0.3.post6" and f.packages["flashinfer-python"].startswith("0.2.1.post2")


def test_vllm_collect_env(kb):
    from conftest import ROOT

    folder = ROOT / "fixtures" / "healthy" / "server-collect-env-vllm-pr9293-rtx4070"
    f = api.diagnose([str(p) for p in folder.iterdir() if p.name != "expected.yaml"], kb=kb).facts
    assert f.packages["torch"] == "2.4.0+cu121" and f.torch_cuda == "12.1"
    assert [g.name for g in f.gpus] == ["NVIDIA GeForce RTX 4070 Laptop GPU"] and f.gpus[0].compute_capability == "8.9"


def test_vllm_collect_env_with_framed_sections(kb):
    """vLLM 0.10+ prints `key      : value` under ===== section frames (a real SM120 host)."""
    from conftest import ROOT

    f = api.diagnose([str(ROOT / "fixtures" / "sm120-shared-memory-nan--vllm-46721" / "collect_env.txt")], kb=kb).facts
    assert [(g.name, g.compute_capability) for g in f.gpus] == [("NVIDIA RTX PRO 6000 Blackwell Server Edition", "12.0")]
    assert f.packages["torch"] == "2.11.0+cu130" and f.torch_cuda == "13.0"


# One GPU's section of `nvidia-smi -a` (driver 352.63, a 6 GB Maxwell GeForce running mcx at 100 %), as
# posted in https://github.com/fangq/mcx/issues/18 (fangq, 2016-02-17); the stored copy of the comment
# starts inside "PCIe Generation", so only the width is known here.
MCX_18_BUSY_X8 = """\
                Max                 : 2
                Current             : 2
            Link Width
                Max                 : 16x
                Current             : 8x
        Bridge Chip
            Type                    : N/A
            Firmware                : N/A
        Replays since reset         : 0
        Tx Throughput               : 0 KB/s
        Rx Throughput               : 0 KB/s
    Fan Speed                       : 0 %
    Performance State               : P2
    Clocks Throttle Reasons
        Idle                        : Not Active
        Applications Clocks Setting : Not Active
        SW Power Cap                : Not Active
        HW Slowdown                 : Not Active
        Unknown                     : Active
    FB Memory Usage
        Total                       : 6143 MiB
        Used                        : 144 MiB
        Free                        : 5999 MiB
    BAR1 Memory Usage
        Total                       : 256 MiB
        Used                        : 4 MiB
        Free                        : 252 MiB
    Compute Mode                    : Default
    Utilization
        Gpu                         : 100 %
        Memory                      : 0 %
        Encoder                     : 0 %
        Decoder                     : 0 %
"""


def test_pcie_link_of_a_busy_gpu_section_wherever_it_is_nested():
    from diagnose.artifacts import nvsmi_query
    from diagnose.engine import conditions
    from diagnose.model import GPU, Facts

    link = nvsmi_query._pcie(nvsmi_query._tree(MCX_18_BUSY_X8.splitlines()))
    assert link == {"pcie_gen_max": None, "pcie_gen_current": None, "pcie_width_max": 16,
                    "pcie_width_current": 8, "busy": True}
    holds, detail, _ = conditions.evaluate({"pcie_link": "degraded", "effect": "evidence", "weight": 0.7},
                                           Facts(gpus=[GPU(index=0, **link)]), {}, {})
    assert holds is True and "x8 of x16" in detail


def test_pcie_link_of_idle_gpus_is_not_judged(kb):
    # the H200 snapshot was taken idle (0 %): its x16 gen 5 link is read, but an idle link says nothing
    for name in ("nvidia-smi-q.txt", "nvidia-smi-q-x.xml"):
        f = facts_of(name, kb=kb)
        assert [(g.pcie_gen_current, g.pcie_gen_max, g.pcie_width_current, g.pcie_width_max, g.busy)
                for g in f.gpus] == [(5, 5, 16, 16, False)] * 2
        from diagnose.engine import conditions
        holds, detail, _ = conditions.evaluate({"pcie_link": "degraded", "effect": "evidence", "weight": 0.7},
                                               f, {}, {})
        assert holds is None and "idle" in detail
