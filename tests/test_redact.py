"""Redaction: secrets planted in real fixture text never reach any output format; evidence stays readable."""

from __future__ import annotations

import json
import re

import pytest
from conftest import FIXTURES, run_cli

from diagnose import api
from diagnose.model import Diagnosis
from diagnose.redact import Redactor, redact_diagnosis
from diagnose.render import RENDERERS

HF = "hf_Qm7xYtR2pLk9WvZs4NcBd8HgTf3JeUa6Xo"
SK = "sk-proj-4fJ9kL2mN8pQ1rS6tU3vW7xY0zA5bC2dE9fG"
GH = "ghp_R8sT2uV5wX9yZ1aB4cD7eF0gH3iJ6kL9mN2p"
XOX = "xoxb-2718281828-3141592653589-Zq8Wx7Vc6Bn5Mm4Ll3Kk2Jj1"
AKIA = "AKIAZ7QX4MPLE2RT9WQA"
AWS_SECRET = "k9Wq2Er5Ty8Ui1Op4As7Df0Gh3Jk6Lz9Xc2Vb5Nm"
BEARER = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLXNpZ25hdHVyZQ"
SECRETS = [HF, SK, GH, XOX, AKIA, AWS_SECRET, BEARER, "10.42.7.19", "10.42.7.1", "2001:db8:85a3::8a2e:370:7334",
           "alice", "alice.smith@acme-corp.com", "gpu-node-17", "proxy.acme-corp.internal", "gitlab.acme-corp.com"]
SOURCE = "/home/alice/incident-4412/server.log"


def planted_log() -> str:
    """The real gated-repo failure of fixtures/hf-auth-or-offline--llm2vec-130, pasted as a user would:
    with the shell prompt, an `env` dump, the launch command and a second failure, secrets and all."""
    real = (FIXTURES / "hf-auth-or-offline--llm2vec-130" / "error.log").read_text()
    real = real.replace(
        "OSError: You are trying to access a gated repo.",
        f"OSError: You are trying to access a gated repo. (token {HF} read from /home/alice/.cache/huggingface/token "
        "for alice.smith@acme-corp.com)",
    )
    first, rest = real.split("\n", 1)
    rest = rest.replace("5159a703-3843-4fbb-81cb-7896ada5c5c3)",
                        "5159a703-3843-4fbb-81cb-7896ada5c5c3) via http://proxy.acme-corp.internal:3128 (10.42.7.1)")
    return (
        "(sgl) alice@gpu-node-17:~/serve$ env | grep -E '^(HF_|CUDA_)'\n"
        f"HF_TOKEN={HF}\n"
        "CUDA_VISIBLE_DEVICES=0,1\n"
        "(sgl) alice@gpu-node-17:~/serve$ python -m sglang.launch_server --model-path "
        f"mistralai/Mistral-7B-Instruct-v0.2 --host 10.42.7.19 --port 30000 --api-key {SK}\n"
        f"{first}\n{rest}"
        "Traceback (most recent call last):\n"
        '  File "/home/alice/serve/client.py", line 12, in <module>\n'
        f"openai.AuthenticationError: Error code: 401 - Incorrect API key provided: {SK} "
        f"(sent to gpu-node-17:30000 at 10.42.7.19 with Authorization: Bearer {BEARER})\n"
        "Traceback (most recent call last):\n"
        '  File "/home/alice/serve/push.py", line 3, in <module>\n'
        f"RuntimeError: push to git@gitlab.acme-corp.com failed for {GH} from 2001:db8:85a3::8a2e:370:7334 "
        f"(slack {XOX}, aws {AKIA} aws_secret_access_key={AWS_SECRET})\n"
    )


@pytest.fixture(scope="module")
def planted(kb) -> Diagnosis:
    return api.diagnose_texts([(SOURCE, planted_log())], kb=kb)


def test_the_planted_secrets_do_reach_the_diagnosis(planted):
    """Otherwise the tests below would prove nothing."""
    raw = RENDERERS["json"](planted)
    assert planted.findings[0].rule_id == "hf-auth-or-offline"
    for secret in SECRETS:
        assert secret in raw, secret
    assert planted.facts.env["HF_TOKEN"] == HF


@pytest.mark.parametrize("fmt", ["text", "json", "markdown", "slack"])
def test_no_planted_secret_in_any_format(planted, fmt):
    out = RENDERERS[fmt](redact_diagnosis(planted))
    for secret in SECRETS:
        assert secret not in out, f"{secret} leaked into {fmt}"
    assert "Qm7x" not in out and "R8sT2" not in out  # nor a fragment (an unmatched line's template)


def test_evidence_stays_readable(planted):
    redacted = redact_diagnosis(planted)
    top = redacted.findings[0]
    assert top.rule_id == planted.findings[0].rule_id
    assert [e.line for e in top.evidence] == [e.line for e in planted.findings[0].evidence]
    first = top.evidence[0].text
    assert first.startswith("OSError: You are trying to access a gated repo. (token <token-1> read from "
                            "/home/<user-1>/.cache/huggingface/token for <email-1>)")
    assert top.evidence[0].source == "/home/<user-1>/incident-4412/server.log"
    assert "https://huggingface.co/mistralai/Mistral-7B-Instruct-v0.2" in RENDERERS["markdown"](redacted)
    assert redacted.facts.env == {"HF_TOKEN": "<token-1>", "CUDA_VISIBLE_DEVICES": "0,1"}


def test_same_value_same_mask_across_the_output(planted):
    data = json.loads(RENDERERS["json"](redact_diagnosis(planted)))
    text = json.dumps(data)
    assert text.count("<token-1>") >= 2  # the HF token in the evidence and in the env facts
    assert "<user-1>" in data["findings"][0]["evidence"][0]["text"] and "<user-1>" in data["inputs"][0]["source"]


def test_fix_and_references_of_every_rule_survive_redaction(kb):
    """The KB's own text holds no secret: redaction must not touch a fix, a verify command or a link."""
    for rule in kb.rules.values():
        r = Redactor()
        texts = [rule.title, rule.summary]
        for step in rule.fix:
            texts += [v for v in (step.get("step"), step.get("run"), step.get("caution")) if v]
        texts += [v["run"] for v in rule.verify] + list(rule.references)
        for text in texts:
            assert r.redact(text) == text, f"{rule.id}: {text}"


@pytest.mark.parametrize("text", [
    "torch==2.9.1.post1 torchvision 0.24.1 nvidia-cublas-cu12==12.4.5.8 nvidia-cudnn-cu12 9.1.0.70",
    "Requirement already satisfied: nvidia-cudnn-cu13 in ./venv (from torch==2.14.1) (9.24.0.43)",
    "CUDA Version: 12.8   Driver Version: 570.86.15   cuDNN version: 9.1.0.70",
    "NVRM: Xid (PCI:0000:3b:00): 79, GPU at 00000000:3B:00.0 has fallen off the bus; bus 0000:3b:00.0",
    "torch.cuda.OutOfMemoryError: CUDA out of memory on cuda:0 while loading model.safetensors (config.json)",
    "from torchvision.io import read_image; torch.distributed.elastic.multiprocessing.errors.ChildFailedError",
    "c10::Error: torchvision::nms at::Tensor std::vector; [rank0]:[E1129 19:50:56.183 ProcessGroupNCCL.cpp:689]",
    "pad_token=</s> eos_token_id: 2 max_tokens=512 api_key=None HF_TOKEN=$HF_TOKEN",
    "listening on http://127.0.0.1:30000 and 0.0.0.0:8000 and [::1]:8080",
    "pip install torch --index-url https://download.pytorch.org/whl/cu128 # see github.com/pytorch/pytorch",
    "Linux version 6.8.0-45-generic (buildd@lcy02-amd64-075) #45-Ubuntu; Linux-5.15.153.1-microsoft-standard",
    "systemd[1]: user@1000.service: Main process exited; dmesg [ 1843.439669] NVRM: loading 570.158.01",
])
def test_what_a_reader_needs_is_kept(text):
    assert Redactor().redact(text) == text.replace("buildd@lcy02-amd64-075", "<user-1>@<host-1>")


@pytest.mark.parametrize("text, masked", [
    (f"export HUGGING_FACE_HUB_TOKEN={HF}", "export HUGGING_FACE_HUB_TOKEN=<token-1>"),
    (f"curl -H 'Authorization: Bearer {BEARER}' https://api.acme.ai/v1", "curl -H 'Authorization: Bearer <token-1>' https://<host-1>/v1"),
    ("Authorization: Bearer abcdefghijklmnop1234", "Authorization: Bearer <token-1>"),
    (f"SLACK_BOT_TOKEN={XOX}", "SLACK_BOT_TOKEN=<token-1>"),
    (f"git clone https://{GH}@github.com/acme/x", "git clone https://<token-1>@github.com/acme/x"),
    ("github_pat_11ABCDEFG0abcdefghijkl_MNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789AB",
     "<token-1>"),
    (f"AWS_ACCESS_KEY_ID={AKIA}\naws_secret_access_key = {AWS_SECRET}", "AWS_ACCESS_KEY_ID=<token-1>\naws_secret_access_key = <secret-1>"),
    ("--password hunter22 and password=s3cr3t!", "--password <secret-2> and password=<secret-1>"),  # numbered by pattern, then position
    ("https://bob:pa55word@pypi.acme-corp.com/simple", "https://<user-1>:<secret-1>@<host-1>/simple"),
    ("connect to [fe80::1ff:fe23:4567:890a%eth0]:29500 and 10.0.0.5:29500", "connect to [<ip-1>]:29500 and <ip-2>:29500"),
    ("MASTER_ADDR=trainer-0 node-0:349:2588 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.5<0>",
     "MASTER_ADDR=<host-2> <host-1>:349:2588 [0] NCCL INFO Bootstrap : Using eth0:<ip-1><0>"),
    ("Dec  2 11:38:27 gpu-box-3 kernel: NVRM: Xid", "Dec  2 11:38:27 <host-1> kernel: NVRM: Xid"),
    ("ssh root@login01 then gpu-node-1.cluster.internal:29500", "ssh root@<host-1> then <host-2>:29500"),
    (r"C:\Users\bob\AppData and C:\\Users\\bob\\x and /Users/carol/miniconda3 and /home/dave/",
     r"C:\Users\<user-1>\AppData and C:\\Users\\<user-1>\\x and /Users/<user-2>/miniconda3 and /home/<user-3>/"),
    ("write to jane.doe@example-corp.org failed; jane.doe@example-corp.org again", "write to <email-1> failed; <email-1> again"),
])
def test_masks(text, masked):
    assert Redactor().redact(text) == masked


def test_a_learned_name_is_masked_where_it_stands_alone():
    r = Redactor()
    assert r.redact("alice@gpu-node-17:~$ ls") == "<user-1>@<host-1>:~$ ls"
    assert r.redact("rsync to gpu-node-17 as alice failed") == "rsync to <host-1> as <user-1> failed"


def test_redaction_of_fixture_logs_keeps_every_finding(kb):
    """Masking the evidence does not change what it proves: the real fixtures' findings stay."""
    from diagnose.kb.selftest import find_cases

    for case in find_cases(FIXTURES)[::6]:
        diagnosis = api.diagnose(case.artifacts(), kb=kb)
        redacted = redact_diagnosis(diagnosis)
        assert [f.rule_id for f in redacted.findings] == [f.rule_id for f in diagnosis.findings]
        for before, after in zip(diagnosis.findings, redacted.findings, strict=True):
            assert [e.line for e in after.evidence] == [e.line for e in before.evidence]


# --- the command line --------------------------------------------------------------------------

def test_slack_output_is_redacted_by_default_and_no_redact_turns_it_off():
    log = planted_log().encode()
    slack = run_cli("--format", "slack", input=log)
    assert slack.returncode == 1
    assert HF not in slack.stdout.decode() and "&lt;token-1&gt;" in slack.stdout.decode()
    unredacted = run_cli("--format", "slack", "--no-redact", input=log)
    assert HF in unredacted.stdout.decode()


def test_redact_flag_masks_json_and_markdown():
    log = planted_log().encode()
    assert HF in run_cli("--format", "json", input=log).stdout.decode()  # off by default for json
    for fmt in ("json", "markdown", "text"):
        out = run_cli("--format", fmt, "--redact", input=log).stdout.decode()
        assert not any(s in out for s in SECRETS), fmt
        assert re.search(r"<token-\d+>", out)


@pytest.mark.parametrize("text, secret", [
    ('{"AccessKeyId": "ASIAIOSFODNN7EXAMPLE", "SecretAccessKey": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}',
     "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ('{"db_password": "hunter2secret"}', "hunter2secret"),
    ('{"openai_api_key": "abcd1234efgh"}', "abcd1234efgh"),
    ("connecting to redis://:s3cr3tpw@cache-01:6379/0", "s3cr3tpw"),
    ("pod vllm-server-7d9f8c6b5d-x2k4p was OOMKilled", "vllm-server-7d9f8c6b5d-x2k4p"),
    ('"private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSj\\n-----END PRIVATE KEY-----\\n"',
     "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSj"),
    ("GPU 0: NVIDIA H200 (UUID: GPU-5f2b1c3a-8d4e-4f6a-9b0c-1d2e3f4a5b6c)", "5f2b1c3a-8d4e-4f6a-9b0c-1d2e3f4a5b6c"),
    ("    Serial Number                         : 1654922001234", "1654922001234"),
])
def test_masks_cloud_keys_pods_and_gpu_identities(text, secret):
    masked = Redactor().redact(text)
    assert secret not in masked and "<" in masked


def test_gpu_names_versions_and_statefulset_pods_stay():
    text = "NVIDIA H200 torch==2.9.1 flash-attn-2.8.3 worker-0 Minor Number : 3"
    assert Redactor().redact(text) == text
