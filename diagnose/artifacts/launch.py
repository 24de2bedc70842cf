"""How the failing program was started, as its own log says: the model it loads, the script it ran,
the source distribution pip was building.

A fix step such as `vllm serve <model> --quantization ...` or `compute-sanitizer python <script>` is
only pasteable with these filled in; the log usually names them once, in a line no rule matches:

>>> launch_facts("INFO 12-01 [startup.py:96] non-default args: {'model_tag': './tiny-llama-q', 'model': './tiny-llama-q'}").model_path
'./tiny-llama-q'
>>> launch_facts("$ python3 -m fastchat.serve.vllm_worker --model-path /home/tskj/MOD/Qwen/Qwen-7B-Chat").model_path
'/home/tskj/MOD/Qwen/Qwen-7B-Chat'
>>> launch_facts("$ vllm serve Qwen/Qwen3-8B --port 8000").model_path
'Qwen/Qwen3-8B'
>>> launch_facts('  File "/work/kern/misaligned.py", line 15, in <module>').script
'/work/kern/misaligned.py'
>>> launch_facts('  File "/venv/lib/python3.11/site-packages/vllm/entrypoints/cli/main.py", line 7, in <module>') is None
True
>>> launch_facts("  Downloading flash_attn-2.8.3.post2.tar.gz (8.5 MB)").sdist
'flash_attn'
>>> launch_facts("    AutoModelForCausalLM.from_pretrained('tiny', attn_implementation='flash_attention_2')").model_path
'tiny'
>>> launch_facts("model = AutoModelForCausalLM.from_pretrained(sys.argv[1])") is None
True
"""

from __future__ import annotations

from diagnose import lazy_re
from diagnose.model import Facts

# values become words of fix commands a person pastes: only plain path / id characters are taken
# a quoted value after `'model': `, `model=`, `model_path=`, `from_pretrained(`; or a command line's --model X
QUOTED_MODEL = lazy_re.compile(
    r"""(?:['"]model(?:_path)?['"]\s*:\s*|\bmodel(?:_path|_name_or_path)?=|from_pretrained\(\s*)(['"])(?P<m>[\w./~:@+-]{1,200})\1"""
)
FLAG_MODEL = lazy_re.compile(r"(?:^|\s)--model(?:-path)?[ =](?P<m>[\w./~:@+][\w./~:@+-]{0,199})(?![^\s'\"])")
# `vllm serve MODEL ...`: the model is the first word after the subcommand
SERVE_MODEL = lazy_re.compile(r"(?:^|[\s$#>])vllm serve\s+(?P<m>[\w./~:@+][\w./~:@+-]{0,199})(?![^\s'\"])")
# (torchrun prefixes each line of a rank's output with "[rank1]: ")
MODULE_FRAME = lazy_re.compile(r'^(?:\[rank\d{1,5}\]:)?\s*File "(?P<s>[\w./~+-]{1,300}\.py)", line \d+, in <module>')
# pip fetching a source distribution, the one a failed build is of: `Downloading flash_attn-2.8.3.post2.tar.gz (8.5 MB)`
SDIST = lazy_re.compile(r"^\s*(?:Downloading|Using cached) (?:\S*/)?(?P<p>[A-Za-z0-9][\w.]{0,80}?)-\d[\w.+!-]*\.(?:tar\.gz|zip)\b")
UV_BUILD = lazy_re.compile(r"Failed to build `(?P<p>[A-Za-z0-9][\w.-]{0,80}?)(?: @ |==|`)")
NOT_A_SCRIPT = ("-packages/", "/lib/python3", "\\lib\\", "runpy")
# (pattern, anchored): what host.fact_line_patterns gives the block prefilter for these facts
FACT_PATTERNS = [(QUOTED_MODEL, False), (FLAG_MODEL, False), (SERVE_MODEL, False), (MODULE_FRAME, True), (SDIST, True),
                 (UV_BUILD, False)]


def has_cue(line: str) -> bool:
    """The substring tests that let the patterns below run only on the lines that can match (every
    line of a log passes here: 0.34 us a line on this machine, 0.58 for a regex alternation)."""
    return ("model" in line or "<module>" in line or "from_pretrained(" in line or ".tar.gz" in line
            or ".zip" in line or "Failed to build `" in line)


def launch_facts(line: str) -> Facts | None:
    """The model path, the top-level script or the source distribution one line names, or None."""
    if ".tar.gz" in line or ".zip" in line or "Failed to build `" in line:
        m = SDIST.match(line) or UV_BUILD.search(line)
        return Facts(sdist=m["p"]) if m else None
    if "<module>" in line:
        m = MODULE_FRAME.match(line)
        if m and not any(part in m["s"] for part in NOT_A_SCRIPT):
            return Facts(script=m["s"])
        return None
    if "vllm serve " in line and (m := SERVE_MODEL.search(line)) and not m["m"].startswith("-"):
        return Facts(model_path=m["m"])
    if "model" not in line and "from_pretrained(" not in line:
        return None
    m = QUOTED_MODEL.search(line) or FLAG_MODEL.search(line)
    if m and m["m"] not in ("None", "auto"):
        return Facts(model_path=m["m"])
    return None
