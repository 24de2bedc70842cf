"""Where diagnose keeps what it can rebuild (the compiled KB, Hyperscan databases), by platform.

Linux and other Unix: `$XDG_CACHE_HOME/diagnose` (default `~/.cache/diagnose`); macOS:
`~/Library/Caches/diagnose`; Windows: `%LOCALAPPDATA%\\diagnose\\Cache`. `DIAGNOSE_CACHE_DIR`
overrides all of them. Everything there is safe to delete.
"""

from __future__ import annotations

import os
import pickle
import sys
from pathlib import Path
from typing import Any

KEEP = 4  # compiled KBs kept: alternating `--rules` dirs (or checkouts) each find their own


def key(data: bytes) -> str:
    """A cache file's name for `data` (what its content depends on): two CRC-32s and the length, not a
    cryptographic hash - the files are ours, in our folder, and hashlib's OpenSSL load is a few ms of every run."""
    import zlib

    return f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}{len(data) & 0xFFFFFFFF:08x}"


def cache_dir() -> Path:
    if os.environ.get("DIAGNOSE_CACHE_DIR"):
        return Path(os.environ["DIAGNOSE_CACHE_DIR"])
    home = Path(os.path.expanduser("~"))
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(home / "AppData" / "Local")
        return Path(base) / "diagnose" / "Cache"
    if sys.platform == "darwin":
        return home / "Library" / "Caches" / "diagnose"
    return Path(os.environ.get("XDG_CACHE_HOME") or home / ".cache") / "diagnose"


def read(path: Path) -> Any:
    """The object pickled at `path`, or None when it is missing or unreadable."""
    try:
        with open(path, "rb") as fh:
            obj = pickle.load(fh)
        os.utime(path)  # the newest use counts, so the KBs in use are the ones kept
        return obj
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, ValueError, TypeError):
        return None


def write(path: Path, obj: Any, pattern: str = "kb-*.pickle", keep: int = KEEP) -> None:
    """Write atomically, then keep only the `keep` most recently used files matching `pattern`."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        import tempfile  # only when the cache is written: importing it costs every run a few ms

        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".kb-")
        with os.fdopen(fd, "wb") as fh:
            pickle.dump(obj, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
        prune(path.parent, pattern, keep, path)
    except OSError:
        pass  # a read-only home is fine: we just rebuild next time


def prune(folder: Path, pattern: str, keep: int = KEEP, current: Path | None = None,
          companions: tuple[str, ...] = ()) -> None:
    """Keep the `keep` most recently used files of `folder` matching `pattern` (and `current`, just written); a
    dropped file's `companions` (other suffixes of the same name) go with it."""
    for stale in sorted(folder.glob(pattern), key=_mtime, reverse=True)[keep:]:
        if stale != current:
            stale.unlink(missing_ok=True)
            for suffix in companions:
                stale.with_suffix(suffix).unlink(missing_ok=True)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0
