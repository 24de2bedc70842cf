"""The model about to be served: its `config.json` (a file, a local model folder, or a repo id
already in the Hugging Face cache), and the imports of the remote code it ships.

>>> info = model_from_dict({"model_type": "glm_moe_dsa", "architectures": ["GlmMoeDsaForCausalLM"],
...                         "quantization_config": {"quant_method": "modelopt"}}, "config.json")
>>> info.model_type, info.architectures, info.quant_method, info.auto_config
('glm_moe_dsa', ['GlmMoeDsaForCausalLM'], 'modelopt', False)
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from diagnose import lazy_re
from diagnose.errors import DiagnoseError

TRY_BLOCK = lazy_re.compile(r"\s*try\s*:.*?except.*?:", re.DOTALL)  # transformers' get_imports drops these
IMPORT = lazy_re.compile(r"^\s*(?:import\s+([\w.]+)|from\s+([\w.]+)\s+import)", re.MULTILINE)


@dataclass
class ModelInfo:
    source: str  # where the config was read, as shown in evidence
    model_type: str | None = None
    architectures: list[str] = field(default_factory=list)
    quant_method: str | None = None
    auto_map: dict[str, Any] = field(default_factory=dict)
    attn_implementation: str | None = None
    folder: Path | None = None  # the model folder, when the config sits in one
    remote_imports: dict[str, str] = field(default_factory=dict)  # module -> the .py file importing it

    @property
    def auto_config(self) -> bool:
        """The checkpoint ships its own config class (auto_map.AutoConfig): transformers needs trust_remote_code."""
        return "AutoConfig" in self.auto_map


def model_from_dict(data: dict[str, Any], source: str, folder: Path | None = None) -> ModelInfo:
    quant = data.get("quantization_config")
    raw_map = data.get("auto_map")
    auto_map: dict[str, Any] = raw_map if isinstance(raw_map, dict) else {}
    info = ModelInfo(
        source=source,
        model_type=str(data["model_type"]) if data.get("model_type") else None,
        architectures=[str(a) for a in data.get("architectures") or []],
        quant_method=str(quant.get("quant_method")) if isinstance(quant, dict) and quant.get("quant_method") else None,
        auto_map=dict(auto_map),
        attn_implementation=data.get("attn_implementation") or data.get("_attn_implementation"),
        folder=folder,
    )
    if folder is not None:
        info.remote_imports = remote_code_imports(folder, auto_map)
    return info


def read_model(spec: str, required: bool = True) -> ModelInfo | None:
    """`spec` is a config.json, a model folder, or a repo id found in the HF cache.

    DiagnoseError when `required` and nothing readable is there; None when not required.
    """
    path = Path(spec).expanduser()
    candidates = [path] if path.is_file() else [path / "config.json"] if path.is_dir() else []
    if not candidates and re.fullmatch(r"[\w.-]+/[\w.-]+", spec):
        candidates = hf_cache_configs(spec)
    for config in candidates:
        if config.is_file():
            return _load(config)
    if required:
        where = f"{path}/config.json" if path.is_dir() else spec
        raise DiagnoseError(f"--model {spec}: no config.json at {where} (give the file, the model folder, "
                            "or a repo id already in the Hugging Face cache)")
    return None


def _load(config: Path) -> ModelInfo:
    try:
        data = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise DiagnoseError(f"{config}: cannot read: {exc}") from None
    except ValueError as exc:
        raise DiagnoseError(f"{config}: not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise DiagnoseError(f"{config}: a config.json holds one JSON object")
    return model_from_dict(data, str(config), config.parent)


def hf_cache_configs(repo_id: str) -> list[Path]:
    """config.json of each cached snapshot of `repo_id`, newest first (HF_HUB_CACHE, HF_HOME, ~/.cache)."""
    roots = [os.environ.get("HF_HUB_CACHE"), os.environ.get("HUGGINGFACE_HUB_CACHE")]
    if os.environ.get("HF_HOME"):
        roots.append(os.path.join(os.environ["HF_HOME"], "hub"))
    roots.append(os.path.join(os.path.expanduser("~"), ".cache", "huggingface", "hub"))
    folder = "models--" + repo_id.replace("/", "--")
    found = [p for root in roots if root for p in Path(root, folder, "snapshots").glob("*/config.json")]
    return sorted(found, key=lambda p: p.stat().st_mtime, reverse=True)


def remote_code_imports(folder: Path, auto_map: dict[str, Any]) -> dict[str, str]:
    """Top-level modules imported by the .py files auto_map names (outside try/except, as transformers checks)."""
    files = set()
    for ref in auto_map.values():
        for item in ref if isinstance(ref, list) else [ref]:
            if isinstance(item, str) and "." in item and "--" not in item:
                files.add(item.rsplit(".", 1)[0] + ".py")
    found: dict[str, str] = {}
    for name in sorted(files):
        try:
            text = (folder / name).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        text = TRY_BLOCK.sub("", text)
        text = re.sub(r"if is_flash_attn[\w]*available\(\):.*?\n(?=\S)", "", text, flags=re.DOTALL)
        for m in IMPORT.finditer(text):
            module = (m[1] or m[2]).split(".")[0]
            if module:
                found.setdefault(module, name)
    return found
