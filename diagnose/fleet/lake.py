"""A log lake: LAKE/<node>/<source>.log[.gz] and bundles. Find its nodes and cut it into tasks."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

SPLIT_BYTES = 256 * 2**20  # plain files larger than this are diagnosed in byte ranges of about this size


@dataclass
class Task:
    """One unit of work: a node's files, or one byte range of one of its large files plus the others."""

    node: str
    files: list[str]
    part: tuple[str, int, int] | None = None  # (path, start, end): a range of one large plain file
    size: int = 0


@dataclass
class Node:
    name: str
    files: list[str] = field(default_factory=list)
    size: int = 0
    error: str | None = None  # the node cannot be read: why


def nodes(lake: str | Path) -> list[Node]:
    """Every node of the lake, in name order; one whose folder cannot be listed carries the reason."""
    root = Path(lake)
    if not root.is_dir():
        raise NotADirectoryError(f"{lake}: not a directory (a lake is LAKE/<node>/<source>.log[.gz])")
    out = []
    for entry in sorted(root.iterdir()):
        if not entry.is_dir():
            continue
        node = Node(entry.name)
        try:
            for dirpath, _, names in os.walk(entry, onerror=_raise):
                for name in sorted(names):
                    path = os.path.join(dirpath, name)
                    node.files.append(path)
                    node.size += _size(path)
        except OSError as e:
            node.error = f"{e.strerror or e}: {e.filename or entry}"
        if not node.files and not node.error:
            node.error = "no files"
        out.append(node)
    return out


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0  # a dangling link: the engine lists it as skipped, with the reason


def _raise(error: OSError) -> None:
    raise error


def tasks(node: Node, split_bytes: int = SPLIT_BYTES) -> list[Task]:
    """The node as one task, or, when it has plain files over `split_bytes`, one task per byte range
    of each (the node's small files ride along with each range so its facts stay the node's)."""
    large = [f for f in node.files if not f.endswith((".gz", ".tar", ".tgz", ".zst", ".zip"))
             and _size(f) > split_bytes]
    if not large:
        return [Task(node.name, node.files, None, node.size)]
    small = [f for f in node.files if f not in large]
    out = []
    for path in large:
        size = os.path.getsize(path)
        for start in range(0, size, split_bytes):
            out.append(Task(node.name, small, (path, start, min(size, start + split_bytes)), split_bytes))
    return out


def read_range(path: str, start: int, end: int) -> bytes:
    """The whole lines that begin in [start, end): a line that straddles `end` belongs to this range."""
    with open(path, "rb") as f:
        if start:
            f.seek(start - 1)
            if f.read(1) != b"\n":
                f.readline()  # the line in progress belongs to the range before
        begin = f.tell()
        data = f.read(max(0, end - begin))
        if data and not data.endswith(b"\n"):
            data += f.readline()
    return data
