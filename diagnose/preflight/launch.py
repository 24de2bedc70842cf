"""The launch command about to be run (`python -m sglang.launch_server ...`, `vllm serve ...`):
which framework, how many GPUs, and which backends (and so which kernels and JIT builds) it selects.

>>> cmd = parse_launch("NCCL_IB_DISABLE=1 nohup /root/ml-env/bin/python3 -m sglang.launch_server "
...                    "--model lukealonso/GLM-5-NVFP4 --trust-remote-code --tp 8 "
...                    "--attention-backend flashinfer --moe-runner-backend flashinfer_cutlass > log 2>&1 &")
>>> cmd.framework, cmd.model, cmd.tp, cmd.gpus_needed, cmd.trust_remote_code, cmd.python
('sglang', 'lukealonso/GLM-5-NVFP4', 8, 8, True, '/root/ml-env/bin/python3')
>>> sorted(cmd.jit_backends())
['--attention-backend flashinfer', '--moe-runner-backend flashinfer_cutlass']
>>> parse_launch(["vllm", "serve", "Qwen/Qwen3-8B", "--tensor-parallel-size=2", "-pp", "2"]).gpus_needed
4
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

from diagnose import lazy_re
from diagnose.errors import DiagnoseError

TP = ("--tp", "--tp-size", "--tensor-parallel-size", "-tp")
PP = ("--pp", "--pp-size", "--pipeline-parallel-size", "-pp")
DP = ("--dp", "--dp-size", "--data-parallel-size", "-dp")
MODEL = ("--model", "--model-path")
BACKENDS = ("--attention-backend", "--prefill-attention-backend", "--decode-attention-backend",
            "--moe-runner-backend", "--sampling-backend", "--fp8-gemm-backend", "--fp4-gemm-backend")
FLAGS = ("--trust-remote-code", "--enable-flashinfer-allreduce-fusion")
WRAPPERS = {"nohup", "exec", "time", "env", "sudo", "numactl", "taskset", "stdbuf"}
ENV = lazy_re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


@dataclass
class LaunchCommand:
    argv: list[str]
    framework: str | None = None  # sglang | vllm | None (another program)
    python: str | None = None  # the interpreter the command names, when it names one
    model: str | None = None
    tp: int = 1
    pp: int = 1
    dp: int = 1
    options: dict[str, str] = field(default_factory=dict)  # --name -> value ("" for a flag)
    env: dict[str, str] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return shlex.join(self.argv)

    @property
    def gpus_needed(self) -> int:
        """GPUs one node needs: tp x pp (SGLang and vLLM place both on the local GPUs)."""
        return self.tp * self.pp

    @property
    def trust_remote_code(self) -> bool:
        return "--trust-remote-code" in self.options

    def value(self, *names: str) -> str | None:
        return next((self.options[n] for n in names if n in self.options), None)

    def jit_backends(self) -> list[str]:
        """The options that select FlashInfer kernels, which FlashInfer JIT-compiles (with ninja) when
        no prebuilt kernel fits: `--attention-backend flashinfer`, VLLM_ATTENTION_BACKEND=FLASHINFER, ..."""
        found = [f"{name} {self.options[name]}" for name in BACKENDS
                 if "flashinfer" in self.options.get(name, "").lower()]
        if "--enable-flashinfer-allreduce-fusion" in self.options:
            found.append("--enable-flashinfer-allreduce-fusion")
        if "flashinfer" in self.env.get("VLLM_ATTENTION_BACKEND", "").lower():
            found.append(f"VLLM_ATTENTION_BACKEND={self.env['VLLM_ATTENTION_BACKEND']}")
        return found

    def visible_gpus(self) -> int | None:
        """How many GPUs CUDA_VISIBLE_DEVICES in the command leaves visible (None when not set)."""
        value = self.env.get("CUDA_VISIBLE_DEVICES")
        if value is None:
            return None
        return len([v for v in value.split(",") if v.strip() and v.strip() != "-1"])


def parse_launch(command: str | list[str]) -> LaunchCommand:
    """Parse a launch command given as one string or as argv (what followed `--`)."""
    if isinstance(command, str) or len(command) == 1:
        text = command if isinstance(command, str) else command[0]
        try:
            argv = shlex.split(text)
        except ValueError as exc:
            raise DiagnoseError(f"launch command: {exc}") from None
    else:
        argv = list(command)
    if not argv:
        raise DiagnoseError("launch command: empty")
    argv = _cut_shell_tail(argv)
    launch = LaunchCommand(argv=argv)
    rest = _strip_prefix(argv, launch.env)
    _framework(rest, launch)
    _options(rest, launch)
    return launch


def _cut_shell_tail(argv: list[str]) -> list[str]:
    """Drop redirections and backgrounding: `> log 2>&1 &`."""
    out: list[str] = []
    for token in argv:
        if token in ("&", "&&", ";", "|") or re.fullmatch(r"\d?>>?|&>", token):
            break
        if re.fullmatch(r"\d?>>?\S+|\d>&\d", token):
            break
        out.append(token)
    return out


def _strip_prefix(argv: list[str], env: dict[str, str]) -> list[str]:
    """Leading VAR=value assignments and wrappers (nohup, env, numactl ...) are not the program."""
    i = 0
    while i < len(argv):
        token = argv[i]
        if ENV.match(token):
            name, _, value = token.partition("=")
            env[name] = value
        elif token.rsplit("/", 1)[-1] in WRAPPERS or (token.startswith("-") and i and argv[i - 1] in WRAPPERS):
            pass
        else:
            break
        i += 1
    return argv[i:]


def _framework(rest: list[str], launch: LaunchCommand) -> None:
    if rest and re.search(r"(?:^|/)python[\d.]*$", rest[0]):
        launch.python = rest[0]
    joined = " ".join(rest[:4])
    if "sglang.launch_server" in joined or re.search(r"(?:^|/)sglang\s+serve\b", joined):
        launch.framework = "sglang"
    elif re.search(r"(?:^|/)vllm\s+serve\b", joined) or "vllm.entrypoints" in joined:
        launch.framework = "vllm"
        if re.search(r"(?:^|/)vllm\s+serve\b", joined):
            at = next(i for i, t in enumerate(rest) if t == "serve")
            if at + 1 < len(rest) and not rest[at + 1].startswith("-"):
                launch.model = rest[at + 1]


def _options(rest: list[str], launch: LaunchCommand) -> None:
    i = 0
    while i < len(rest):
        token = rest[i]
        if token.startswith("-") and token not in ("-m", "-c"):
            name, eq, value = token.partition("=")
            if not eq and i + 1 < len(rest) and not rest[i + 1].startswith("-") and name not in FLAGS:
                value = rest[i + 1]
                i += 1
            launch.options[name] = value
        i += 1
    launch.model = launch.value(*MODEL) or launch.model
    launch.tp = _int(launch.value(*TP), "tensor parallel size")
    launch.pp = _int(launch.value(*PP), "pipeline parallel size")
    launch.dp = _int(launch.value(*DP), "data parallel size")


def _int(value: str | None, what: str) -> int:
    if value is None or value == "":
        return 1
    try:
        return max(1, int(value))
    except ValueError:
        raise DiagnoseError(f"launch command: {what} {value!r} is not a number") from None
