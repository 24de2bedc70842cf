"""Run a lake's tasks on Ray: embedded (`ray.init()` on this machine) or on a cluster (`--address`).

Each task is diagnose.fleet.work.run in a Ray worker; a worker that dies is retried by Ray
(`retries` times), and a node whose task keeps failing is reported as failed with Ray's reason."""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Callable
from typing import Any

from diagnose.fleet import lake as lake_mod
from diagnose.fleet import reduce, work

RETRIES = 3


def start(address: str | None = None, workers: int | None = None) -> None:
    """Join the cluster at `address`, or start a private one on this machine (no dashboard)."""
    import ray

    if ray.is_initialized():
        return
    if address:
        ray.init(address=address, logging_level=logging.WARNING, log_to_driver=False)
        return
    temp = os.path.join(tempfile.gettempdir(), "ray")  # Ray's sockets need a short path
    ray.init(num_cpus=workers or os.cpu_count() or 1, include_dashboard=False, _temp_dir=temp,
             logging_level=logging.WARNING, log_to_driver=False,
             runtime_env={"env_vars": {"DIAGNOSE_RULES_DIR": os.environ.get("DIAGNOSE_RULES_DIR", "")}}
             if os.environ.get("DIAGNOSE_RULES_DIR") else None)


def _task(task: lake_mod.Task, keep: bool) -> dict[str, Any]:
    return work.run(task, keep)


def run(lake: str, address: str | None = None, workers: int | None = None, keep_diagnoses: bool = False,
        split_bytes: int = lake_mod.SPLIT_BYTES, retries: int = RETRIES,
        on_result: Callable[[dict[str, Any]], None] | None = None,
        timeout: float | None = None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(fleet report, per-node results) for the lake; TimeoutError when no task ends in `timeout` seconds."""
    import ray

    start(address, workers)
    remote = ray.remote(num_cpus=1, max_retries=retries)(_task)
    results: list[dict[str, Any]] = []
    pending: dict[Any, lake_mod.Task] = {}
    for node in lake_mod.nodes(lake):
        if node.error:
            results.append(_result(node.name, "unreadable", node.error, node.size))
            continue
        for task in lake_mod.tasks(node, split_bytes):
            pending[remote.remote(task, keep_diagnoses)] = task
    parts: dict[str, list[dict[str, Any]]] = {}
    while pending:
        done, _ = ray.wait(list(pending), num_returns=1, timeout=timeout)
        if not done:
            raise TimeoutError(f"no task of {len(pending)} ended in {timeout} s")
        task = pending.pop(done[0])
        try:
            part = ray.get(done[0])
        except ray.exceptions.RayError as e:
            part = _result(task.node, "failed", f"task failed {retries + 1} times: {_first_line(e)}", task.size)
        parts.setdefault(task.node, []).append(part)
    for node_parts in parts.values():
        failed = [p for p in node_parts if p["status"] == "failed"]
        merged = failed[0] if failed else work.merge(node_parts)
        results.append(merged)
        if on_result:
            on_result(merged)
    return reduce.report(str(lake), results), sorted(results, key=lambda r: r["node"])


def _result(node: str, status: str, reason: str, size: int) -> dict[str, Any]:
    return {"node": node, "status": status, "reason": reason, "bytes": size, "skipped": [], "findings": []}


def _first_line(error: Exception) -> str:
    text = str(error).strip().splitlines()
    return text[0][:300] if text else type(error).__name__
