"""What `redact` masks: one pattern per kind of secret or identity, applied in this order.

Each pattern's named groups are the parts masked; the group name (less a `_2` suffix) is the
mask's kind. `keep` says when a match is not a secret after all (a version, a module name, a
public host). Secrets go first, so that a token inside a URL or an e-mail is masked as a token.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from dataclasses import dataclass

from diagnose import lazy_re


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# names that identify nobody; never masked where they stand alone
GENERIC_NAMES = frozenset({
    "root", "user", "users", "ubuntu", "admin", "runner", "jovyan", "nobody", "ec2-user", "centos", "debian",
    "shared", "public", "default", "guest", "localhost", "host", "hostname", "your-host", "example", "node",
})
# hosts whose names are public knowledge: the fixes and references of the KB point at them
PUBLIC_DOMAINS = (
    "github.com", "githubusercontent.com", "github.io", "gitlab.com", "pytorch.org", "huggingface.co", "hf.co",
    "nvidia.com", "nvcr.io", "pypi.org", "pythonhosted.org", "python.org", "pypa.io", "vllm.ai", "sglang.ai",
    "ray.io", "readthedocs.io", "readthedocs.org", "mail-archive.com", "anaconda.com", "anaconda.org", "conda.io",
    "conda-forge.org", "ubuntu.com", "debian.org", "kernel.org", "docker.com", "docker.io", "ghcr.io", "quay.io",
    "stackoverflow.com", "microsoft.com", "google.com", "googleapis.com", "openai.com", "anthropic.com",
    "slack.com", "gnu.org", "example.com", "example.org", "example.net", "astral.sh", "modelscope.cn", "nccl.dev",
    "kubernetes.io", "git-lfs.com", "git-scm.com", "llvm.org", "numpy.org", "jax.readthedocs.io", "ollama.com",
)
# top-level domains that end a host name in logs; file extensions that are also TLDs (.py, .sh, .so,
# .md, .pt, .cc, .in) are left out on purpose
TLDS = _words(
    "com net org edu gov mil int io ai dev app cloud co info biz xyz tech site online me local localdomain "
    "internal intranet lan corp home svc arpa cn de uk jp kr fr ru us ca au sg nl ch se tw hk eu br it es pl "
    "fi no dk at be cz il"
)
# first labels of dotted Python names that end in a TLD-like label (torchvision.io, tf.io)
MODULE_ROOTS = _words(
    "torch torchvision torchaudio tensorflow tf jax jnp np numpy os sys io sglang vllm transformers triton "
    "flashinfer xformers deepspeed accelerate megatron apex ray cv2 pil scipy pandas pd sklearn"
)
HOST_PORT_WORDS = _words(
    "cuda cpu gpu mps xpu npu hpu xla meta rank line lines port pid tid step steps epoch layer layers device "
    "dev id seq error warning info debug note http https tcp udp file time size iter batch sm total used free "
    "mem memory swap max min count code exit signal status version worker process utc gmt at in on to from "
    "localhost tensor shape dim index pci uid gid euid irq ioport"
)
VERSION_WORDS = lazy_re.compile(
    r"(?i)(version|ver\b|cudnn|cublas|cufft|curand|cusolver|cusparse|nccl|cuda|driver|release|build|vbios)"
)
PIP_ROW = lazy_re.compile(r"(?i)^\s*(?:\[\w+\]\s+)?[a-z][\w.-]*(?:nvidia|cu\d|cuda|nccl|nvjitlink|cufile|tensorrt)[\w.-]*\s+$")
SECRET_KEY = lazy_re.compile(
    r"(?i)(?:api[_-]?key|access[_-]?key|secret|token|password|passwd|credential)(?![a-z])"
)


@dataclass(frozen=True)
class Pattern:
    regex: re.Pattern[str]
    keep: Callable[[re.Match[str], str], bool] | None = None
    hint: tuple[str, ...] | None = None  # lower-case substrings a text must hold for the regex to be worth running


def is_public(host: str, extra: frozenset[str] = frozenset()) -> bool:
    host = host.lower().rstrip(".")
    return host in ("localhost", "localhost.localdomain") or any(
        host == d or host.endswith("." + d) for d in (*PUBLIC_DOMAINS, *extra)
    )


def _looks_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text.strip("[]").split("%", 1)[0])
    except ValueError:
        return False
    return True


def _keep_value(m: re.Match[str], kind: str) -> bool:
    """`password=None`, `token: 50256`, `api_key=$OPENAI_API_KEY` and masks are no secrets."""
    value = m[kind]
    return (
        value.lower() in ("none", "null", "nil", "false", "true", "empty", "unset", "***", "<redacted>")
        or value.isdigit()
        or set(value) <= set(".*xX")
        or value.startswith(("<", "$", "%", "{", "*"))
    )


def _keep_userinfo(m: re.Match[str], kind: str) -> bool:
    return _keep_user_host(m, kind) if kind == "user" else _keep_value(m, kind)


def _keep_email(m: re.Match[str], kind: str) -> bool:
    local, _, domain = m[kind].partition("@")
    if domain.lower().endswith((".service", ".slice", ".scope", ".socket", ".target", ".mount", ".timer")):
        return True  # systemd units: user@1000.service
    return local.lower() in ("git", "noreply") and is_public(domain)


def _keep_url_host(m: re.Match[str], kind: str) -> bool:
    return is_public(m[kind]) or _looks_ip(m[kind])


# an address by its shape and context: a port (`<53312>`, `:29500`), a prefix length, or an interface or
# connection word right before it (`peer`, `eth0:`, `via`); a version by a version word right before it
ADDRESS_AFTER = lazy_re.compile(r"(?:<\d{1,5}>|:\d{1,5}(?![\d.])|/\d{1,2}(?!\d))")
ADDRESS_BEFORE = lazy_re.compile(
    r"(?i)(?:\b(?:peer|addr|address|ip|inet6?|host|via|using|src|dst|remote|local|bind|gateway|gw|server|client|"
    r"nameserver)\b|\b(?:eth|ib|en[ops]?|bond|docker|br|vlan|mlx5_|hsn|bond)\w*|\[\d+\]|@)\s*[:=]?\s*$"
)
VERSION_BEFORE = lazy_re.compile(VERSION_WORDS.pattern + r"[\w.-]*\s*(?:version)?\s*[:=]?\s*v?$")


def _keep_ip(m: re.Match[str], kind: str) -> bool:
    """Loopback and unspecified addresses, and dotted quads that are package versions."""
    value = m[kind]
    if value.startswith("127.") or value == "0.0.0.0":
        return True
    line_start = m.string.rfind("\n", 0, m.start()) + 1
    before = m.string[line_start : m.start()]
    if ADDRESS_AFTER.match(m.string, m.end()) or ADDRESS_BEFORE.search(before[-24:]):
        return False
    return (
        before.endswith(("==", ">=", "<=", "~=", "!=", ") ("))
        or bool(VERSION_BEFORE.search(before[-40:]))
        or bool(PIP_ROW.match(before))
    )


def _keep_ipv6(m: re.Match[str], kind: str) -> bool:
    value = m[kind]
    groups = [g for g in value.split("%", 1)[0].split(":") if g]
    if len(groups) < 2 or ("::" not in value and value.count(":") != 7) or not _looks_ip(value):
        return True
    return ipaddress.ip_address(value.split("%", 1)[0]).is_loopback


def _keep_fqdn(m: re.Match[str], kind: str) -> bool:
    host = m[kind]
    labels = host.lower().split(".")
    return labels[-1] not in TLDS or labels[0] in MODULE_ROOTS or is_public(host)


def _keep_user_host(m: re.Match[str], kind: str) -> bool:
    return m[kind].lower() in GENERIC_NAMES


def _keep_host_port(m: re.Match[str], kind: str) -> bool:
    return m[kind].lower() in HOST_PORT_WORDS or m[kind].lower() in GENERIC_NAMES


def _p(pattern: str, keep=None, hint=None, flags: int = 0) -> Pattern:  # type: ignore[no-untyped-def]
    return Pattern(re.compile(pattern, flags), keep, hint)


LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"

PATTERNS: list[Pattern] = [
    # tokens with a recognisable shape
    _p(r"(?<![\w-])(?P<token>hf_[A-Za-z0-9]{30,})(?![\w-])", hint=("hf_",)),
    _p(r"(?<![\w-])(?P<token>sk-[A-Za-z0-9_-]{20,})", hint=("sk-",)),
    _p(r"(?<![\w-])(?P<token>xox[abprs]-[A-Za-z0-9-]{10,}|xapp-\d-[A-Za-z0-9-]{10,})", hint=("xox", "xapp-")),
    _p(r"(?<![\w-])(?P<token>gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})", hint=("gh", "github_pat_")),
    _p(r"(?<![A-Z0-9])(?P<token>(?:AKIA|ASIA)[A-Z0-9]{16})(?![A-Z0-9])", hint=("akia", "asia")),
    _p(r"(?P<token>eyJ[\w-]{8,}\.eyJ[\w-]{8,}\.[\w-]{8,})", hint=("eyj",)),
    _p(r"hooks\.slack\.com/(?:services|workflows)/(?P<token>[A-Za-z0-9/_-]+)", hint=("hooks.slack.com",)),
    # secrets named by what precedes them
    _p(r"(?i)(?:aws_)?secret_?access_?key[\"']?\s*[=:]\s*[\"']?(?P<secret>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])",
       hint=("ecret",)),
    # PEM private keys (a GCP service account's "private_key", one line with \n escapes, or a PEM block)
    _p(r"(?P<secret>-----BEGIN [A-Z ]{0,20}PRIVATE KEY-----(?:[A-Za-z0-9+/=\s]|\\n){0,8192}"
       r"(?:-----END [A-Z ]{0,20}PRIVATE KEY-----)?)", hint=("private key-----",)),
    _p(r"(?m)^\s*(?P<secret>[A-Za-z0-9+/]{60,}={0,2})\s*$", hint=None),  # a line of a PEM body or a raw key
    # GPU identities: UUIDs (GPU-..., MIG-..., the old MIG-GPU-<uuid>/<gi>/<ci>, and the prefixes that
    # CUDA_VISIBLE_DEVICES accepts) and board serial numbers (`Serial Number : ...`, `<serial>` in -q -x)
    _p(r"(?i)(?<![\w-])(?P<gpu>(?:MIG-GPU|GPU|MIG)-[0-9a-f]{8}(?:-[0-9a-f]{4}){0,3}(?:-[0-9a-f]{12})?(?:/\d+/\d+)?)"
       r"(?![\w-])", hint=("gpu-", "mig-")),
    _p(r"(?i)\bserial(?:[ _-]?(?:number|no))?[\"']?\s*[=:]\s*[\"']?(?P<serial>[A-Za-z0-9-]{4,64})(?![\w-])",
       hint=("serial",)),
    _p(r"(?i)<(?:\w{1,40}_)?serial(?:_number)?>\s*(?P<serial>[A-Za-z0-9-]{4,64})\s*</", hint=("serial",)),
    # Kubernetes pod names: <deployment>-<replica set hash>-<5 characters>, of the alphabet they are drawn from
    _p(r"(?<![\w.-])(?P<pod>[a-z0-9](?:[a-z0-9-]{0,200}[a-z0-9])?-[bcdfghjklmnpqrstvwxz2456789]{6,10}"
       r"-[bcdfghjklmnpqrstvwxz2456789]{5})(?![\w-])", hint=("-",)),
    _p(r"(?i)\b(?:authorization[\"']?\s*[:=]\s*[\"']?(?:bearer|token|basic)?|bearer)\s+(?P<token>[A-Za-z0-9._~+/-]{8,}=*)",
       _keep_value, hint=("bearer", "authorization")),
    _p(r"(?i)(?<![\w-])(?:[A-Za-z0-9]+[_-])*(?:api[_-]?key|access[_-]?token|auth[_-]?token|hf[_-]?token|token|"
       r"client[_-]?secret|secret[_-]?key|private[_-]?key(?:[_-]?id)?|secret|password|passwd)[\"']?\s*[=:]\s*[\"']?(?P<secret>[^\s\"'`,;)}\]]{4,})",
       _keep_value, hint=("key", "token", "secret", "passw")),
    _p(r"(?<![\w-])--(?:api-key|hf-token|token|password|secret)(?:=|\s+)[\"']?(?P<secret>[^\s\"']{4,})", _keep_value,
       hint=("--",)),
    _p(r"://(?P<user>[^:/@\s<>]+)?:(?P<secret>[^@/\s<>]+)@", _keep_userinfo, hint=("://",)),
    # identities
    _p(r"(?<![\w.%+-])(?P<email>[A-Za-z0-9._%+-]+@(?:[A-Za-z0-9-]+\.)+[A-Za-z]{2,24})(?![\w-]|\.[\w-])", _keep_email,
       hint=("@",)),
    _p(r"://(?:[^@/\s]+@)?(?P<host>" + LABEL + r"(?:\." + LABEL + r")*)", _keep_url_host, hint=("://",)),
    _p(r"(?<![\w:.])(?P<ip>(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?:%[\w.]+)?)(?![\w:]|\.\d)", _keep_ipv6,
       hint=(":",)),
    _p(r"(?<![\w.+~-])(?P<ip>(?:" + OCTET + r"\.){3}" + OCTET + r")(?![\w]|\.\d)", _keep_ip, hint=(".",)),
    _p(r"(?:/home/|/Users/|[A-Za-z]:(?:\\\\|\\|/)Users(?:\\\\|\\|/))(?P<user>[A-Za-z0-9._-]+)(?=[/\\\s\"':]|$)",
       _keep_user_host,
       hint=("/home/", "users")),
    _p(r"(?<![\w.%+-])(?P<user>[A-Za-z_][A-Za-z0-9_.-]{0,31})@(?P<host>[A-Za-z][A-Za-z0-9-]{0,62})(?=[:\s)\],;]|$)",
       _keep_user_host, hint=("@",)),
    # syslog / journal: `Dec  1 14:05:06 host prog[pid]: msg` (the time is part of it: "line 2 of /tmp/a.log: x",
    # which the diagnosis itself writes, is no syslog line) or an ISO time first
    _p(r"(?m)^(?:\S{1,4} +\d{1,2} \d\d:\d\d:\d\d|\d{4}-\d\d-\d\dT[\d:.+-]+Z?) (?P<host>[A-Za-z][\w.-]{0,62}) "
       r"(?=[\w./-]+(?:\[\d+\])?: )", _keep_user_host, hint=(": ",)),
    _p(r"(?m)(?:^|\s)(?P<host>[A-Za-z][\w.-]{0,62}):\d+:\d+ \[\d+\] NCCL", _keep_user_host, hint=("nccl",)),
    _p(r"(?i)\b(?:master_addr|hostname|host_name|node_name|--master[_-]addr|--dist-init-addr|--host)[\"']?(?:\s*[=:]\s*|\s+)"
       r"[\"']?(?P<host>[A-Za-z](?:[A-Za-z0-9-]{0,61})(?:\." + LABEL + r")*)(?![\w.-])", _keep_host_port,
       hint=("addr", "host", "node_name")),
    _p(r"(?<![\w.@/\\-])(?P<host>(?:" + LABEL + r"\.)+[A-Za-z]{2,24})(?![\w-]|\.[\w-])", _keep_fqdn, hint=(".",)),
    _p(r"(?<![\w.@/\\:<-])(?P<host>[A-Za-z][A-Za-z0-9-]{0,62})(?=:[1-9]\d{1,4}(?!\w))", _keep_host_port, hint=(":",)),
    # user names outside home paths: `USER=alice`, `uid=1000(alice)`, `sudo -u alice`, scratch folders
    _p(r"(?i)(?<![\w-])(?:user|username|logname|sudo_user|login|owner)[\"']?\s*[=:]\s*[\"']?"
       r"(?P<user>[A-Za-z_][A-Za-z0-9_.-]{1,31})(?![\w@.(-])", _keep_user_host, hint=("user", "login", "owner")),
    _p(r"\b(?:uid|gid|euid|groups)=\d+\((?P<user>[A-Za-z_][A-Za-z0-9_.-]{0,31})\)", _keep_user_host, hint=("id=",)),
    _p(r"(?<![\w-])(?:sudo -u|runuser -u|su -|su -l|chown|as user|by user|for user)\s+"
       r"(?P<user>[A-Za-z_][A-Za-z0-9_.-]{1,31})(?![\w@.-])", _keep_user_host, hint=("su", "chown", "user")),
    _p(r"(?:/scratch|/export/home|/nfs/home|/lustre/home|/gpfs/home|/var/mail|/var/spool/cron)/"
       r"(?P<user>[A-Za-z_][A-Za-z0-9._-]{1,31})(?=[/\\\s\"':]|$)", _keep_user_host,
       hint=("/scratch/", "/export/home/", "/nfs/home/", "/lustre/home/", "/gpfs/home/", "/var/")),
]
