"""Diagnoses run in worker processes, so that one request cannot hold the others.

A thread past its deadline can only be abandoned, and it keeps the interpreter lock while it
finishes; a process past its deadline is killed and a fresh one takes its place. Each worker
holds the knowledge base, reads one job at a time from its pipe (artifacts, redaction, format)
and answers the rendered diagnosis, or the one-line error a client should see.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import time
from dataclasses import dataclass
from typing import Any

from diagnose.kb.compiled import KnowledgeBase


@dataclass
class Job:
    artifacts: list[tuple[str, bytes]]
    redact: bool
    fmt: str  # a renderer's name, or "slack-command" (the Block Kit message of the slash command)
    max_inflated: int


class JobError(Exception):
    """What the worker could not do, as (HTTP status, one line for the client)."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status, self.detail = status, detail


def run_job(kb: KnowledgeBase, job: Job) -> tuple[Any, int, str]:
    """(answer, number of findings, top rule id): what a worker does with one job."""
    from diagnose import api
    from diagnose.artifacts.streams import InflateBudget, TooMuchInflated
    from diagnose.errors import InputError
    from diagnose.redact import redact_diagnosis
    from diagnose.render import RENDERERS, slack

    budget = InflateBudget(per_input=job.max_inflated, total=job.max_inflated * 4)
    try:
        diagnosis = api.diagnose_texts(list(job.artifacts), kb=kb, budget=budget)
    except TooMuchInflated as exc:
        raise JobError(413, str(exc)) from None
    except InputError as exc:
        raise JobError(422, str(exc)) from None
    except (RecursionError, MemoryError):
        raise JobError(413, "the input is too large or too deeply nested to diagnose") from None
    if job.redact:
        diagnosis = redact_diagnosis(diagnosis)
    answer = slack.message(diagnosis) if job.fmt == "slack-command" else RENDERERS[job.fmt](diagnosis)
    top = diagnosis.findings[0].rule_id if diagnosis.findings else "-"
    return answer, len(diagnosis.findings), top


def _worker_main(conn: Any, kb: KnowledgeBase) -> None:
    run_job(kb, Job([("warm-up", b"RuntimeError: warm-up\n")], True, "json", 1 << 20))  # imports, caches
    conn.send(("ready", None))
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):  # the server went away
            return
        try:
            conn.send(("ok", run_job(kb, job)))
        except JobError as exc:
            conn.send(("error", (exc.status, exc.detail)))
        except Exception as exc:  # our bug: the client gets one line, the worker lives on
            conn.send(("error", (500, f"internal error ({type(exc).__name__})")))


class Worker:
    def __init__(self, context: Any, kb: KnowledgeBase) -> None:
        self.conn, child = context.Pipe(duplex=True)
        self.process = context.Process(target=_worker_main, args=(child, kb), daemon=True)
        self.process.start()
        child.close()

    def kill(self) -> None:
        self.process.kill()
        self.process.join(timeout=5)
        self.conn.close()


async def _readable(conn: Any, timeout: float) -> bool:
    """Wait until the pipe has something to read (or the worker died), at most `timeout` seconds."""
    loop = asyncio.get_running_loop()
    ready: asyncio.Future[None] = loop.create_future()
    fd = conn.fileno()
    def wake() -> None:
        if not ready.done():
            ready.set_result(None)

    loop.add_reader(fd, wake)
    try:
        await asyncio.wait_for(ready, max(timeout, 0.001))
        return True
    except asyncio.TimeoutError:
        return False
    finally:
        loop.remove_reader(fd)


class WorkerPool:
    """`size` worker processes; `await run(job, deadline)` gives the job to an idle one, and kills
    (and replaces) it if the deadline passes first."""

    def __init__(self, kb: KnowledgeBase, size: int = 0) -> None:
        self.kb = kb
        self.size = size or min(8, os.cpu_count() or 1)
        self.context = multiprocessing.get_context("spawn")  # a clean interpreter, not a fork of the server
        self.idle: asyncio.Queue[Worker] | None = None
        self.busy = 0
        self.killed = 0
        self.workers: list[Worker] = []

    def _start_one(self) -> None:
        worker = Worker(self.context, self.kb)
        self.workers.append(worker)
        asyncio.get_running_loop().create_task(self._when_ready(worker))

    async def _when_ready(self, worker: Worker) -> None:
        if await _readable(worker.conn, 120) and worker.conn.recv()[0] == "ready":
            assert self.idle is not None
            self.idle.put_nowait(worker)
        else:
            self._replace(worker)

    def _replace(self, worker: Worker) -> None:
        worker.kill()
        if worker in self.workers:
            self.workers.remove(worker)
        self._start_one()

    def start(self) -> None:
        if self.idle is None:
            self.idle = asyncio.Queue()
            for _ in range(self.size):
                self._start_one()

    async def run(self, job: Job, deadline: float) -> tuple[Any, int, str]:
        self.start()
        assert self.idle is not None
        try:
            worker = await asyncio.wait_for(self.idle.get(), max(deadline - time.perf_counter(), 0.001))
        except asyncio.TimeoutError:
            raise JobError(503, "busy: every worker was diagnosing until the time limit; retry shortly") from None
        self.busy += 1
        try:
            try:
                worker.conn.send(job)
                ready = await _readable(worker.conn, deadline - time.perf_counter())
                answer = worker.conn.recv() if ready else None
            except (EOFError, OSError, BrokenPipeError):
                answer = None
                ready = True
            if answer is None:
                self.killed += not ready
                self._replace(worker)
                if not ready:
                    raise JobError(503, "the diagnosis ran over the time limit and was stopped")
                raise JobError(500, "the worker diagnosing this request died")
            self.idle.put_nowait(worker)
        finally:
            self.busy -= 1
        status, value = answer
        if status == "error":
            raise JobError(*value)
        return value  # type: ignore[no-any-return]

    def close(self) -> None:
        for worker in self.workers:
            worker.kill()
        self.workers = []
