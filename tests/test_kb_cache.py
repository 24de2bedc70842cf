"""The compiled-KB cache: portable between checkouts, several KBs kept, where the platform keeps caches."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import ROOT

RULE = (
    "id: {id}\ntitle: A cache test rule\ncategory: server\nseverity: low\nsummary: a cache test rule\n"
    "description: a rule that exists for a cache test\n"
    "signals:\n  - {{id: s, regex: '{id} happened', weight: 0.5}}\n"
    "fix:\n  - step: do the thing to fix it\nverify:\n  - run: nvidia-smi\n"
    "verified_by:\n  - url: https://example.org/x\nexamples:\n  match: ['{id} happened']\n  no_match: ['zzz']\n"
)


def _clone(dest: Path) -> Path:
    """A fresh checkout: the package, the rules and the docs, at another path."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for part in ("diagnose", "rules", "docs"):
        shutil.copytree(ROOT / part, dest / part, ignore=ignore)
    return dest


def _run(checkout: Path, cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "DIAGNOSE_RULES_DIR"}
    env.update(PYTHONPATH=str(checkout), DIAGNOSE_CACHE_DIR=str(cache))
    return subprocess.run([sys.executable, "-m", "diagnose", *args], cwd=checkout, env=env,
                          capture_output=True, text=True, timeout=120)


def test_a_fresh_clone_uses_the_cache_of_another_checkout_with_its_own_files(tmp_path: Path):
    cache = tmp_path / "cache"
    first = _clone(tmp_path / "first")
    assert _run(first, cache, "rules", "docs").returncode == 0  # its docs current, whatever is being edited here
    assert len(list(cache.glob("kb-*.pickle"))) == 1
    second = Path(shutil.copytree(first, tmp_path / "second"))  # a clone of it, at another path
    shutil.rmtree(first)  # the checkout that built the cache is gone

    shown = _run(second, cache, "rules", "show", "xid-fallen-off-bus")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == (second / "rules" / "hardware" / "xid-fallen-off-bus.yaml").read_text()
    checked = _run(second, cache, "rules", "docs", "--check")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "out of date" not in checked.stdout
    assert len(list(cache.glob("kb-*.pickle"))) == 1  # served from the first checkout's cache, not rebuilt


def test_alternating_rules_dirs_keep_their_compiled_kbs(tmp_path: Path):
    from diagnose.kb import compiled

    dirs = []
    for name in ("team-a", "team-b"):
        (tmp_path / name / "server").mkdir(parents=True)
        (tmp_path / name / "server" / f"{name}-rule.yaml").write_text(RULE.format(id=f"{name}-rule"))
        dirs.append(tmp_path / name)
    cache = tmp_path / "cache"
    old = os.environ.get("DIAGNOSE_CACHE_DIR")
    os.environ["DIAGNOSE_CACHE_DIR"] = str(cache)
    try:
        a = compiled.load([dirs[0]])
        compiled.load([dirs[1]])
        built = sorted(cache.glob("kb-*.pickle"))
        again = compiled.load([dirs[0]])
    finally:
        os.environ.pop("DIAGNOSE_CACHE_DIR") if old is None else os.environ.update(DIAGNOSE_CACHE_DIR=old)
    assert len(built) == 2 and sorted(cache.glob("kb-*.pickle")) == built
    assert again.version == a.version and "team-a-rule" in again.rules and "team-b-rule" not in again.rules
    assert again.rules["team-a-rule"].path == str(dirs[0] / "server" / "team-a-rule.yaml")


def test_the_cache_lives_where_the_platform_keeps_caches(monkeypatch, tmp_path: Path):
    from diagnose.kb import cache

    monkeypatch.delenv("DIAGNOSE_CACHE_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("LOCALAPPDATA", str(tmp_path / "local"))
    monkeypatch.setattr(sys, "platform", "linux")
    assert cache.cache_dir() == tmp_path / "xdg" / "diagnose"
    monkeypatch.setattr(sys, "platform", "darwin")
    assert cache.cache_dir() == tmp_path / "Library" / "Caches" / "diagnose"
    monkeypatch.setattr(sys, "platform", "win32")
    assert cache.cache_dir() == tmp_path / "local" / "diagnose" / "Cache"


def test_prefilter_databases_are_pruned_like_the_kbs(tmp_path: Path) -> None:
    """Each KB compiles its own Hyperscan databases; only the most recently used few stay, per kind, and the other
    kinds' files (a prefix of theirs) are not touched."""
    from diagnose.artifacts.prefilter import prune_databases
    from diagnose.kb import cache

    def made(name: str, n: int, age: int) -> Path:
        db = tmp_path / f"{name}-{n:024x}.db"
        db.write_bytes(b"db")
        db.with_suffix(".slow").write_text("")
        os.utime(db, (1_000_000 + age, 1_000_000 + age))
        return db

    hs = [made("hs", n, age=n) for n in range(cache.KEEP + 3)]
    lines = [made("hs-lines", n, age=0) for n in range(cache.KEEP + 2)]
    prune_databases(tmp_path, "hs")
    kept = sorted(p.name for p in tmp_path.glob("hs-0*.db"))
    assert kept == sorted(p.name for p in hs[-cache.KEEP:])  # the newest, by use
    assert not hs[0].with_suffix(".slow").exists() and hs[-1].with_suffix(".slow").exists()
    assert all(p.exists() for p in lines)  # another kind of database: not this call's to prune
