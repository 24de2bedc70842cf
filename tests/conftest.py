"""Rule examples and fixture folders become test items by themselves (`pytest -k <rule-id>`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"


@pytest.fixture(scope="session", autouse=True)
def _no_settings_of_this_machine(tmp_path_factory: pytest.TempPathFactory):
    """A developer's ~/.config/diagnose/config.toml or DIAGNOSE_FORMAT must not change what the tests see."""
    patch = pytest.MonkeyPatch()
    patch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("xdg-config")))
    for name in ("DIAGNOSE_CONFIG", "DIAGNOSE_FORMAT", "DIAGNOSE_PYTHON", "DIAGNOSE_EXTRA_RULES", "DIAGNOSE_REDACT_REGEXES"):
        patch.delenv(name, raising=False)
    yield
    patch.undo()


@pytest.fixture(scope="session")
def kb():
    from diagnose import api

    return api.load_kb(use_cache=False)


def run_cli(*args: str, input: bytes | None = None, env: dict[str, str] | None = None, timeout: float = 60):
    """Run the real `python -m diagnose` and return the CompletedProcess (bytes)."""
    full_env = {**os.environ, **(env or {})}
    full_env.pop("NO_COLOR", None) if env is None or "NO_COLOR" not in env else None
    return subprocess.run(
        [sys.executable, "-m", "diagnose", *args],
        input=input,
        capture_output=True,
        timeout=timeout,
        env=full_env,
        cwd=ROOT,
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "fixture_case" in metafunc.fixturenames:
        from diagnose.kb.selftest import find_cases

        cases = find_cases(FIXTURES)
        metafunc.parametrize("fixture_case", cases, ids=[c.name for c in cases])
    if "rule_example" in metafunc.fixturenames:
        from diagnose import api

        kb = api.load_kb()
        items = []
        for rule in sorted(kb.rules.values(), key=lambda r: r.id):
            items += [(rule.id, "match", line) for line in rule.examples["match"]]
            items += [(rule.id, "no_match", line) for line in rule.examples["no_match"]]
        metafunc.parametrize("rule_example", items, ids=[f"{r}-{k}-{i}" for i, (r, k, _) in enumerate(items)])


def tar_with_link(name: str, data: bytes, link: str) -> bytes:
    """An uncompressed tar of one file and a symlink member pointing at it (as support bundles carry)."""
    import io
    import tarfile

    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        member = tarfile.TarInfo(name)
        member.size = len(data)
        tar.addfile(member, io.BytesIO(data))
        symlink = tarfile.TarInfo(link)
        symlink.type, symlink.linkname = tarfile.SYMTYPE, name.rsplit("/", 1)[-1]
        tar.addfile(symlink)
    return out.getvalue()
