"""The container image, built from the Dockerfile and run on a real fixture, where a docker daemon answers.

Skipped (with the reason) where `docker info` fails: no docker command, no daemon, or no permission. The
build needs the python base image (from a registry, or already pulled)."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from conftest import FIXTURES, ROOT

LOG = FIXTURES / "torch-extension-abi-mismatch--seed-002" / "verify.log"
TAG = "gpu-diagnose:test"


def _docker_unusable() -> str | None:
    if shutil.which("docker") is None:
        return "no docker command on PATH"
    try:
        info = subprocess.run(["docker", "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True,
                              timeout=30)
    except subprocess.TimeoutExpired:
        return "docker info did not answer in 30 s"
    if info.returncode != 0:
        return "docker info fails: " + (info.stderr.strip().splitlines() or ["no daemon"])[-1][:200]
    return None


UNUSABLE = _docker_unusable()
pytestmark = pytest.mark.skipif(UNUSABLE is not None, reason=f"docker is not usable here ({UNUSABLE})")


@pytest.fixture(scope="module")
def image() -> str:
    built = subprocess.run(["docker", "build", "-q", "-t", TAG, str(ROOT)], capture_output=True, text=True, timeout=900)
    assert built.returncode == 0, built.stderr[-2000:]
    return TAG


def test_the_image_diagnoses_a_log_on_stdin(image: str):
    done = subprocess.run(["docker", "run", "--rm", "-i", image, "--format", "json"], input=LOG.read_bytes(),
                          capture_output=True, timeout=120)
    assert done.returncode == 1, done.stderr.decode()[-2000:]
    report = json.loads(done.stdout)
    assert report["findings"][0]["rule_id"] == "torch-extension-abi-mismatch"
    assert report["findings"][0]["evidence"][0]["source"] == "<stdin>"


def test_the_image_reads_a_mounted_file_and_has_the_service_and_slack_app(image: str):
    mount = f"{LOG.parent}:/work:ro"
    done = subprocess.run(["docker", "run", "--rm", "-v", mount, image, "verify.log"], capture_output=True, timeout=120)
    assert done.returncode == 1 and b"torch-extension-abi-mismatch" in done.stdout
    for command in (["serve", "--help"], ["slack", "--help"], ["collect", "--help"]):
        shown = subprocess.run(["docker", "run", "--rm", image, *command], capture_output=True, timeout=120)
        assert shown.returncode == 0, shown.stderr.decode()[-2000:]
    refused = subprocess.run(["docker", "run", "--rm", image, "serve", "--host", "0.0.0.0"], capture_output=True,
                             timeout=120)  # the server extra is installed: it starts, and refuses without a token
    assert refused.returncode == 2 and b"DIAGNOSE_API_TOKEN" in refused.stderr
