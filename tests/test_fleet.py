"""`diagnose fleet` on a real local Ray cluster over a simulated lake made from the real fixtures."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

from diagnose.fleet import lake as lake_mod  # noqa: E402
from diagnose.fleet import runner, simlake  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):  # type: ignore[no-untyped-def]
    ray.init(num_cpus=2, include_dashboard=False, _temp_dir="/tmp/ray-tests", logging_level="ERROR",
             log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def lake(tmp_path_factory) -> tuple[Path, dict[str, str]]:  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("lake")
    injected = simlake.build(root, FIXTURES, nodes=14, gzip_every=4)
    (root / "node-gone").mkdir()
    (root / "node-gone" / "server.log").symlink_to(root / "no-such-file")
    return root, injected


def _by_cause(report: dict) -> dict[str, set[str]]:  # type: ignore[type-arg]
    return {c["rule_id"]: set(c["nodes"]) for c in report["causes"]}


def test_every_injected_cause_on_exactly_its_nodes(cluster, lake) -> None:  # type: ignore[no-untyped-def]
    root, injected = lake
    report, results = runner.run(str(root), timeout=120)
    expected: dict[str, set[str]] = {}
    for node, rule in injected.items():
        expected.setdefault(rule, set()).add(node)
    assert len(expected) >= 4
    assert _by_cause(report) == expected  # no cause missed, none on another node, no other cause
    healthy = {r["node"] for r in results} - set(injected) - {"node-gone"}
    assert set(report["clean"]) == healthy and len(healthy) >= 8
    for cause in report["causes"]:  # the strongest line per node is a line of that node's files
        for node, evidence in cause["evidence"].items():
            assert evidence["source"].startswith(str(root / node))
            assert cause["first"] and cause["first"] <= cause["last"]


def test_unreadable_node_is_listed_with_its_reason(cluster, lake) -> None:  # type: ignore[no-untyped-def]
    root, _ = lake
    report, _ = runner.run(str(root), timeout=120)
    [gone] = report["unreadable"]
    assert gone["node"] == "node-gone" and "dangling symlink" in gone["reason"]


def test_byte_ranges_give_the_same_report(cluster, tmp_path) -> None:  # type: ignore[no-untyped-def]
    injected = simlake.build(tmp_path, FIXTURES, nodes=6, bytes_per_node=400_000)
    node = lake_mod.nodes(tmp_path)[1]
    assert len(lake_mod.tasks(node, split_bytes=100_000)) >= 4
    whole, _ = runner.run(str(tmp_path), timeout=120)
    split, _ = runner.run(str(tmp_path), split_bytes=100_000, timeout=120)
    assert _by_cause(split) == _by_cause(whole) == {rule: {n} for n, rule in injected.items()}


def test_read_range_keeps_every_line_once(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "a.log"
    lines = [f"line {i} " + "x" * (i % 37) for i in range(2000)]
    path.write_text("\n".join(lines) + "\n")
    size = path.stat().st_size
    got = b"".join(lake_mod.read_range(str(path), s, min(size, s + 997)) for s in range(0, size, 997))
    assert got.decode().splitlines() == lines


def _task_pids() -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                title = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")[0]
            except OSError:
                continue
            if title.startswith(b"ray::_task"):
                pids.append(int(entry))
    return pids


def test_a_killed_worker_does_not_lose_a_node(cluster, tmp_path) -> None:  # type: ignore[no-untyped-def]
    injected = simlake.build(tmp_path, FIXTURES, nodes=4, failing={1: simlake.FAILURES[0], 2: simlake.FAILURES[1]},
                             bytes_per_node=25_000_000)  # tasks that run for seconds
    out: dict[str, object] = {}
    thread = threading.Thread(target=lambda: out.update(zip(("report", "results"), runner.run(str(tmp_path), timeout=120))))
    thread.start()
    killed = 0
    deadline = time.monotonic() + 60
    while not killed and time.monotonic() < deadline and thread.is_alive():
        for pid in _task_pids():
            os.kill(pid, signal.SIGKILL)
            killed += 1
        time.sleep(0.2)
    thread.join(timeout=150)
    assert killed, "no running task was seen to kill"
    report = out["report"]
    assert _by_cause(report) == {rule: {n} for n, rule in injected.items()}  # type: ignore[arg-type]
    assert len(report["clean"]) == 2 and not report["failed"]  # type: ignore[index]


def test_a_task_that_keeps_dying_is_reported(cluster, tmp_path) -> None:  # type: ignore[no-untyped-def]
    simlake.build(tmp_path, FIXTURES, nodes=2, failing={}, bytes_per_node=15_000_000)
    out: dict[str, object] = {}
    thread = threading.Thread(target=lambda: out.update(zip(("report", "results"),
                                                            runner.run(str(tmp_path), retries=0, timeout=120))))
    thread.start()
    killed: set[int] = set()
    deadline = time.monotonic() + 60
    while not killed and time.monotonic() < deadline and thread.is_alive():
        for pid in _task_pids():
            os.kill(pid, signal.SIGKILL)
            killed.add(pid)
        time.sleep(0.05)
    thread.join(timeout=150)
    assert killed, "no running task was seen to kill"
    report = out["report"]
    failed = report["failed"]  # type: ignore[index]
    assert 1 <= len(failed) <= len(killed) and all("failed 1 times" in f["reason"] for f in failed)
    # never dropped: each node is failed (its worker was killed, no retry left) or diagnosed clean
    assert sorted([f["node"] for f in failed] + report["clean"]) == ["node-0000", "node-0001"]  # type: ignore[index]


def test_fleet_command_writes_the_report_and_each_node(cluster, lake, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from click.testing import CliRunner

    from diagnose.fleet.cli import fleet_cmd

    root, injected = lake
    result = CliRunner().invoke(fleet_cmd, [str(root), "--format", "json", "--per-node", str(tmp_path)])
    assert result.exit_code == 1, result.output
    report = json.loads(result.output)
    assert {n for c in report["causes"] for n in c["nodes"]} == set(injected)
    per_node = json.loads((tmp_path / "node-0001.json").read_text())
    assert per_node["findings"][0]["rule_id"] == injected["node-0001"]
    markdown = CliRunner().invoke(fleet_cmd, [str(root), "--format", "markdown"]).output
    assert "## Unreadable nodes" in markdown and "node-gone" in markdown


def test_cli_start_up_imports_neither_ray_nor_pysigma() -> None:
    code = "import sys, diagnose.cli; print(sorted(m for m in sys.modules if m.split('.')[0] in ('ray', 'sigma')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"


def test_causes_on_one_node_co_occur_only_within_the_window(cluster, tmp_path) -> None:  # type: ignore[no-untyped-def]
    import datetime as dt

    from diagnose.fleet import reduce

    simlake.build(tmp_path, FIXTURES, nodes=3, failing={1: "cuda-fork-reinit--vllm-12189"})
    # the same node also loses a GPU, months apart in its logs
    xid = (FIXTURES / "xid-fallen-off-bus--nvsentinel-155" / "dmesg.log").read_text()
    with open(tmp_path / "node-0001" / "dmesg.log", "a") as f:
        f.write(xid)
    report, results = runner.run(str(tmp_path), timeout=120)
    causes = {c["rule_id"]: c for c in report["causes"]}
    assert set(causes) == {"cuda-fork-reinit", "xid-fallen-off-bus"}
    assert causes["cuda-fork-reinit"]["first"][:7] != causes["xid-fallen-off-bus"]["first"][:7]
    assert causes["cuda-fork-reinit"]["co_occurs"] == {}  # one node, but not the same window
    wide = reduce.report(str(tmp_path), results, window=dt.timedelta(days=400))
    assert {c["rule_id"]: c["co_occurs"] for c in wide["causes"]}["cuda-fork-reinit"] == {"xid-fallen-off-bus": ["node-0001"]}
