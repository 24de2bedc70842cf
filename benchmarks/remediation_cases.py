"""The causes benchmarks/remediation.py reproduces: each breaks a throwaway venv with real packages.

A case's `program` fails before the fix and must work after it. Where the printed fix is an
install, the harness runs it; where it is a changed call (load with SDPA, pass trust_remote_code,
stop the leftover server), the harness runs the printed step itself and then `after`, the program
with the change the step names (`fix_says` must be in the printed fix, so the change is the rule's,
not ours). Packages come from PyPI and the machine's wheel folders; torch 2.13.0+cpu only from
/opt/wheels (the CPU index, download.pytorch.org, is not reachable here).
"""

from __future__ import annotations

from dataclasses import dataclass, field

TINY_LLAMA = (
    "from transformers import LlamaConfig, LlamaForCausalLM;"
    "LlamaForCausalLM(LlamaConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1,"
    " num_attention_heads=2, num_key_value_heads=2, vocab_size=64)).save_pretrained('tiny')"
)
LOAD_FA2 = (
    "import torch\nfrom transformers import AutoModelForCausalLM\n"
    "AutoModelForCausalLM.from_pretrained('tiny', attn_implementation='flash_attention_2', torch_dtype=torch.bfloat16)\n"
    "print('loaded')\n"
)
CUSTOM_CONFIG = {
    "custom-model/config.json": '{"model_type": "mycustom", "auto_map": {"AutoConfig": "configuration_mycustom.MyCustomConfig"}}\n',
    "custom-model/configuration_mycustom.py": (
        "from transformers import PretrainedConfig\n\n\nclass MyCustomConfig(PretrainedConfig):\n"
        "    model_type = 'mycustom'\n"),
    "load_config.py": "from transformers import AutoConfig\nprint(type(AutoConfig.from_pretrained('custom-model')).__name__)\n",
}
SPM_TRAIN = (
    "import sentencepiece as spm, random, os; os.makedirs('llamadir', exist_ok=True);"
    "random.seed(0); w = ['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta', 'eta', 'theta'];"
    "open('corpus.txt', 'w').write(chr(10).join(' '.join(random.choice(w) for _ in range(12)) for _ in range(400)));"
    "spm.SentencePieceTrainer.train(input='corpus.txt', model_prefix='llamadir/tokenizer', vocab_size=30,"
    " model_type='unigram')"
)
LOAD_TOKENIZER = "from transformers import AutoTokenizer\nt = AutoTokenizer.from_pretrained('llamadir')\nprint(type(t).__name__, t('alpha beta')['input_ids'])\n"
HEALTH_APP = "from fastapi import FastAPI\napp = FastAPI()\n\n\n@app.get('/health')\ndef health():\n    return {'ok': True}\n"
UVICORN = "timeout 6 uvicorn app:app --host 127.0.0.1 --port 18000"
FORK = (
    "import multiprocessing as mp\nimport torch\n\n\ndef child():\n    print(torch.randn(8, device='cuda').sum().item())\n\n\n"
    "if __name__ == '__main__':\n    torch.randn(8, device='cuda')\n    p = mp.get_context('fork').Process(target=child)\n"
    "    p.start()\n    p.join()\n    raise SystemExit(p.exitcode)\n"
)
RANKS = (
    "import os\nimport torch\n\nrank = int(os.environ['LOCAL_RANK'])\ntorch.cuda.set_device(rank)\n"
    "print(rank, torch.ones(1, device='cuda').item())\n"
)
OOB = (
    "import torch\nimport triton\nimport triton.language as tl\n\n\n@triton.jit\ndef poke(p):\n"
    "    tl.store(p + (1 << 34), 1.0)\n\n\nx = torch.zeros(16, device='cuda')\npoke[(1,)](x)\ntorch.cuda.synchronize()\n"
)
LOAD_FA2_GPU = LOAD_FA2.replace("torch_dtype=torch.bfloat16)", "dtype=torch.bfloat16, device_map='cuda')")


@dataclass
class Case:
    name: str
    cause: str
    setup: list[str]  # shell commands run in the venv (PATH starts with its bin/)
    program: str  # fails before the fix, succeeds after
    venv_args: list[str] = field(default_factory=list)
    needs_torch: bool = False  # torch 2.13.0+cpu from /opt/wheels
    hide: str | None = None  # a program to keep off PATH (a system ninja would hide the failure)
    files: dict[str, str] = field(default_factory=dict)  # written into the work folder first
    after: str | None = None  # the program as the printed fix changes it (a changed call, not an install)
    fix_says: str | None = None  # the printed fix must hold this for `after` to be the rule's change
    background: str | None = None  # started before the program (its pid in holder.pid), stopped at the end
    inputs: list[str] = field(default_factory=list)  # logs the setup wrote that diagnose reads too (an install log)
    works: tuple[int, ...] = (0,)  # exit codes of a program that works (124: a server still up at its timeout)
    gpu: bool = False  # runs in the GPU host's own environment (no venv: nothing can be installed there)
    locates: str | None = None  # a bug in the program itself: the printed step must find it (this in its output)


CASES = [
    Case("numpy-2-under-pandas-1.5", "numpy-abi-mismatch",
         ["pip install -q pandas==1.5.3 'numpy<2'", "pip install -q numpy==2.1.3"],
         "python -c 'import pandas; print(pandas.__version__)'"),
    Case("venv-without-pip", "venv-missing-pip", [], "python -m pip --version", venv_args=["--without-pip"]),
    Case("device-map-without-accelerate", "accelerate-missing",
         ["pip install -q torch==2.13.0+cpu transformers==4.51.3", f'python -c "{TINY_LLAMA}"'],
         "python -c \"from transformers import AutoModelForCausalLM; "
         "AutoModelForCausalLM.from_pretrained('tiny', device_map='cpu'); print('loaded')\"",
         needs_torch=True),
    Case("jit-extension-without-ninja", "ninja-missing-jit",
         ["pip install -q torch==2.13.0+cpu", "pip uninstall -q -y ninja || true"],
         "python -c \"from torch.utils.cpp_extension import load_inline; "
         "m = load_inline('probe', 'int one() { return 1; }', functions=['one'], verbose=False); print(m.one())\"",
         needs_torch=True, hide="ninja"),
    Case("flash-attention-2-requested-not-installed", "flash-attn-missing",
         ["pip install -q torch==2.13.0+cpu transformers==4.51.3 'numpy<2'", f'python -c "{TINY_LLAMA}"'],
         "python load_fa2.py", files={"load_fa2.py": LOAD_FA2}, needs_torch=True,
         fix_says="attn_implementation='sdpa'",
         after="sed s/flash_attention_2/sdpa/ load_fa2.py > load_sdpa.py && python load_sdpa.py"),
    Case("custom-config-without-trust-remote-code", "trust-remote-code",
         ["pip install -q transformers==4.57.1"], "python load_config.py < /dev/null", files=CUSTOM_CONFIG,
         fix_says="trust_remote_code=True",
         after="sed \"s/'custom-model')/'custom-model', trust_remote_code=True)/\" load_config.py > load_trusted.py"
               " && python load_trusted.py < /dev/null"),
    Case("llama-tokenizer-without-sentencepiece", "tokenizer-dependency-missing",
         ["pip install -q sentencepiece==0.2.1", f'python -c "{SPM_TRAIN}"', "pip uninstall -q -y sentencepiece",
          "pip install -q transformers==5.24.0 tokenizers", "pip uninstall -q -y sentencepiece protobuf tiktoken || true"],
         "python load_tok.py", files={"load_tok.py": LOAD_TOKENIZER,
                                      "llamadir/tokenizer_config.json": '{"tokenizer_class": "LlamaTokenizer"}\n'}),
    Case("second-uvicorn-on-a-held-port", "port-in-use",
         ["pip install -q uvicorn fastapi"], UVICORN, files={"app.py": HEALTH_APP},
         background="exec uvicorn app:app --host 127.0.0.1 --port 18000",
         fix_says="ss -ltnp 'sport = :18000'",  # then stop the leftover it lists, by its pid, and start again
         after="kill $(ss -Hltnp 'sport = :18000' | grep -o 'pid=[0-9]*' | cut -d= -f2); sleep 1; " + UVICORN,
         works=(124,)),
    Case("torchsort-in-an-isolated-build", "build-isolation-missing-torch",
         ["pip install -q -U pip==25.1.1", "pip install -q torch==2.13.0+cpu"], "pip install torchsort==0.1.9",
         needs_torch=True),
    Case("torchvision-0.28-over-torch-2.14", "torchvision-torch-mismatch",
         ["pip install -q torch==2.14.1", "pip install -q --no-deps torchvision==0.28.0"],
         "python -c \"import torch, torchvision; from torchvision.ops import nms; "
         "nms(torch.zeros(1, 4), torch.zeros(1), 0.5); print(torch.__version__, torchvision.__version__)\""),
    Case("torchvision-0.28-install-moves-torch-2.14", "pip-resolver-replaced-torch",
         ["pip install -q torch==2.14.1 'torchvision==0.29.1' numpy", "pip install torchvision==0.28.0 > install.log 2>&1"],
         "python -c \"import torch, torchvision; from torchvision.ops import nms; "
         "nms(torch.zeros(1, 4), torch.zeros(1), 0.5); print(torch.__version__)\"", inputs=["install.log"]),
    Case("xformers-for-torch-2.9-under-torch-2.14", "torch-extension-abi-mismatch",
         ["pip install -q torch==2.14.1 numpy", "pip install -q --no-deps xformers==0.0.33.post2"],
         "python -c \"import xformers; assert xformers._has_cpp_library, 'xFormers C++ extensions not loaded'\""),
    # the GPU host (torch 2.11.0+cu130, transformers 5.17, no network): python benchmarks/remediation.py --gpu
    Case("cuda-tensor-then-fork", "cuda-fork-reinit", [], "python fork_mp.py", files={"fork_mp.py": FORK}, gpu=True,
         fix_says='set_start_method("spawn"', after="sed \"s/get_context('fork')/get_context('spawn')/\" fork_mp.py > "
         "spawn_mp.py && python spawn_mp.py"),
    Case("flash-attention-2-on-an-h200-without-flash-attn", "flash-attn-missing", [f'python -c "{TINY_LLAMA}"'],
         "python load_fa2.py", files={"load_fa2.py": LOAD_FA2_GPU}, gpu=True, fix_says="attn_implementation='sdpa'",
         after="sed s/flash_attention_2/sdpa/ load_fa2.py > load_sdpa.py && python load_sdpa.py"),
    Case("two-ranks-on-one-gpu", "tp-exceeds-gpu-count", ["nvidia-smi > nvidia-smi.txt"],
         "torchrun --nproc_per_node 2 ranks.py", files={"ranks.py": RANKS}, inputs=["nvidia-smi.txt"], gpu=True,
         fix_says="--tensor-parallel-size 1", after="torchrun --nproc_per_node 1 ranks.py"),
    Case("triton-store-out-of-bounds", "cuda-illegal-memory-access", [], "python oob.py", files={"oob.py": OOB},
         gpu=True, fix_says="compute-sanitizer", locates=r"Invalid __global__ write"),
]
