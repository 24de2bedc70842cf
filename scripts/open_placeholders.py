"""Fix and verify commands that still hold a blank whose value the inputs give: the "done when" of issue 18.

For every fixture with more than one artifact file (fixtures/<case>/, fixtures/healthy/<case>/) it
diagnoses the folder and reads every `run` of the fixes, the verifies and the plan, of causes and of
the symptoms folded under them. Each blank left open (a `{facts.X}` that stayed `<X>`, a rule's own
`<model_dir>` or `/path/to/venv`) is named by what it stands for (GIVEN_BY below), and that value is
looked for in the inputs themselves, independently of the resolvers in diagnose/remedy/values.py:
the raw text of the fixture's files and the facts parsed from them. A blank whose value is there is
a failure; a blank for a choice the person makes (a driver branch to move to, the next package to
install, a commit they reviewed) or a value the inputs lack is listed as open, with no blame.

    python scripts/open_placeholders.py             # a line per open blank; exit 1 if any value was given
    python scripts/open_placeholders.py --all       # the open choices too
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from diagnose import api
from diagnose.kb.compiled import KnowledgeBase
from diagnose.model import Diagnosis, walk

ROOT = Path(__file__).resolve().parent.parent
BLANK = re.compile(r"<([A-Za-z][\w .+/-]{0,60})>|(/path/to/[\w./-]*)")
FRAME = re.compile(r'File "(/[^"]+?)/lib/python3\.\d+/site-packages/')
MODULE = re.compile(r'File "([^"<>]+\.py)", line \d+, in <module>')
MODEL = re.compile(r"""--model(?:-path)?[ =]\S|['"]model['"]\s*:\s*['"]|\bmodel(?:_path)?=['"]|"""
                   r"""from_pretrained\(\s*['"]|Loading \S+ requires you to execute|The repository (?:for )?\S+ contains""")
PORT = re.compile(r"(?:--port[ =]|\bport[ =:]+|address \S+:)\d{2,5}\b", re.I)
EXTENSION = re.compile(r"\b(?:sgl_kernel|flash_attn\w*|xformers|vllm\._C|flashinfer|deepspeed|deep_gemm)\b")
SDIST = re.compile(r"(?:Downloading|Using cached) \S+\.tar\.gz|Failed to build `")
OLD_TORCH = re.compile(r"^\s*- torch==\S+|Attempting uninstall: torch$|Successfully uninstalled torch-", re.M)


@dataclass
class Inputs:
    text: str
    diagnosis: Diagnosis
    tables: dict[str, Any]


# what a blank stands for -> whether the inputs hold its value
GIVEN_BY: dict[str, Callable[[Inputs], bool]] = {
    "facts.torch_index_url": lambda i: "torch" in i.diagnosis.facts.packages or bool(i.diagnosis.facts.torch_cuda),
    "facts.torch_release": lambda i: "torch" in i.diagnosis.facts.packages,
    "facts.gpu_index": lambda i: any(x.pci for x in i.diagnosis.facts.xids) or len(i.diagnosis.facts.gpus) == 1,
    "facts.extension": lambda i: bool(EXTENSION.search(i.text)),
    "facts.python": lambda i: bool(FRAME.search(i.text)),
    "facts.model": lambda i: bool(MODEL.search(i.text)),
    "facts.script": lambda i: any("-packages/" not in m for m in MODULE.findall(i.text)),
    "facts.port": lambda i: bool(PORT.search(i.text)),
    "facts.torch_of_torchvision": lambda i: "torchvision" in i.diagnosis.facts.packages,
    "facts.torchvision_of_old_torch": lambda i: bool(OLD_TORCH.search(i.text)),
    "facts.driver_version": lambda i: bool(i.diagnosis.facts.driver_version),
    "facts.old_torch_index_url": lambda i: bool(OLD_TORCH.search(i.text)),
    "facts.build_package": lambda i: bool(SDIST.search(i.text)),
    "compat.extension-torch.expected": lambda i: any(
        i.diagnosis.facts.packages.get(str(r.get("package"))) == str(r.get("version"))
        for r in i.tables.get("extension-torch", {}).get("rows", []) if isinstance(r, dict)),
    "compat.torch-torchvision.expected": lambda i: "torch" in i.diagnosis.facts.packages,
}
# the same values under their other names: fact aliases, and the blanks rules wrote by hand
ALIASES = [
    (r"^facts\.python_bin$|^/path/to/(?:venv|python|env)|^python(?: interpreter)?$|interpreter|venv", "facts.python"),
    (r"^facts\.extension_module$|^extension$", "facts.extension"),
    (r"gpu[_ -]?index|^gpu$", "facts.gpu_index"),
    (r"index[_ -]url|cuda index", "facts.torch_index_url"),
    (r"version without \+cpu|installed torch", "facts.torch_release"),
    (r"^(?:groups\.)?model(?:_dir|_path| dir| folder| path)?$|model folder|model dir", "facts.model"),
    (r"\.py$|^script$|your script", "facts.script"),
    (r"^(?:groups\.)?port$", "facts.port"),
    (r"^driver version$|installed driver", "facts.driver_version"),
    (r"^facts\.driver_branch$", "facts.driver_version"),
    (r"^facts\.build_module$", "facts.build_package"),
    (r"pair of that torch", "facts.torchvision_of_old_torch"),
    (r"release your stack pins", "facts.torch_of_torchvision"),
]


def stands_for(blank: str) -> str:
    for pattern, name in ALIASES:
        if re.search(pattern, blank, re.I):
            return name
    return blank


def multi_artifact_fixtures(root: Path = ROOT / "fixtures") -> list[Path]:
    def files(d: Path) -> list[Path]:
        return [p for p in d.iterdir() if p.is_file() and p.name != "expected.yaml"]

    dirs = [d for d in sorted(root.iterdir()) if d.is_dir() and d.name != "healthy" and len(files(d)) > 1]
    healthy = root / "healthy"
    return dirs + [d for d in sorted(healthy.iterdir()) if d.is_dir() and len(files(d)) > 1]


def open_blanks(diagnosis: Diagnosis) -> list[tuple[str, str, str]]:
    """(where, blank, command) for every blank left open in a command of the diagnosis; a `{facts.X}`
    left open is named as the rule wrote it (the step's `unresolved`), a rule's own blank by its text."""
    out = []
    steps = [(f"plan step {i + 1}", s) for i, s in enumerate(diagnosis.plan.steps if diagnosis.plan else [])]
    for finding in walk(diagnosis.findings):
        for part in ("fix", "verify"):
            steps += [(f"{finding.rule_id} {part} {i + 1}", s) for i, s in enumerate(getattr(finding, part))]
    for where, step in steps:
        run, named = step.get("run", ""), [n for n in step.get("unresolved", []) if "." in n and "<" not in n]
        for m in BLANK.finditer(run):
            blank = m[1] or m[2]
            out.append((where, next((n for n in named if n.rsplit(".", 1)[-1] == blank), blank), run))
    return out


def is_given(name: str, inputs: Inputs) -> bool:
    if name.startswith("packages."):
        return name.split(".", 1)[1] in inputs.diagnosis.facts.packages
    probe = GIVEN_BY.get(name)
    return bool(probe and probe(inputs))


def audit(folder: Path, kb: KnowledgeBase) -> tuple[list[str], list[str]]:
    """(blanks whose value the inputs give, blanks left to the person) as printable lines."""
    diagnosis = api.diagnose([str(folder)], kb=kb)
    text = "\n".join(p.read_text(errors="replace") for p in sorted(folder.iterdir()) if p.is_file())
    inputs = Inputs(text, diagnosis, kb.compat)
    given: list[str] = []
    left: list[str] = []
    for where, blank, run in open_blanks(diagnosis):
        name = stands_for(blank)
        line = f"{folder.name}: {where}: {name}: {run}"
        (given if is_given(name, inputs) else left).append(line)
    return given, left


def main(argv: list[str]) -> int:
    kb = api.load_kb()
    folders = multi_artifact_fixtures()
    given_all, left_all = [], []
    for folder in folders:
        given, left = audit(folder, kb)
        given_all += given
        left_all += left
    for line in given_all:
        print("GIVEN BUT OPEN  " + line)
    if "--all" in argv:
        for line in left_all:
            print("open (a choice, or not in the inputs)  " + line)
    print(f"{len(folders)} multi-artifact fixtures: {len(given_all)} blanks whose value the inputs give, "
          f"{len(left_all)} left to the person")
    return 1 if given_all else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
