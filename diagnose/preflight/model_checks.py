"""Predictions from the model's config.json against the environment and the launch: a model_type the
installed transformers does not know, remote code without --trust-remote-code, and packages the
config or the launch needs (flash-attn, accelerate) that are not installed.
"""

from __future__ import annotations

from typing import Any

from diagnose.kb import compat
from diagnose.preflight.environment import Environment
from diagnose.preflight.predict import Predictions


def check(env: Environment, kb: Any, out: Predictions) -> None:
    known = model_type_known(env, kb, out)
    remote_code(env, known, out)
    flash_attn(env, out)
    accelerate(env, out)


def model_type_known(env: Environment, kb: Any, out: Predictions) -> bool | None:
    """Does the installed transformers know the config's model_type? None when it cannot be told."""
    model = env.model
    transformers = env.facts.packages.get("transformers")
    if model is None or not model.model_type:
        return None
    if not transformers:
        if env.facts.packages:
            out.skip("transformers-unknown-model-type", f"{model.model_type}: transformers is not installed")
        return None
    mt = model.model_type
    state, detail, values = compat.model_type_transformers(kb.compat.get("model-type-transformers"), env.facts,
                                                           {"model_type": mt})
    probed = env.probe.transformers_model_types if env.probe is not None else None
    if probed is not None:
        state = mt not in probed
        detail = (f"{mt} is {'not ' if state else ''}among the {len(probed)} model types transformers "
                  f"{transformers} registers (read from its configuration_auto.py)"
                  + (f"; {detail}" if values else ""))
    if state is None:
        return None
    if state:
        weight = 0.85
        reasons: tuple[str, ...] = ()
        if model.auto_config and env.launch is not None and env.launch.trust_remote_code:
            weight = 0.25  # below reporting: shown by --explain
            reasons = ("- the checkpoint ships its own config class (auto_map.AutoConfig) and the launch passes "
                       "--trust-remote-code, which may load it without transformers knowing the type",)
        out.add("transformers-unknown-model-type", weight, f"config.json model_type {mt}: {detail}", model.source,
                "compat:model-type-transformers", reasons=reasons, groups={"model_type": mt},
                values={f"compat.model-type-transformers.{k}": v for k, v in values.items()})
    return not state


def remote_code(env: Environment, known: bool | None, out: Predictions) -> None:
    """transformers refuses a config class from the repo without trust_remote_code, unless it knows the type."""
    model, launch = env.model, env.launch
    if model is None or launch is None or not model.auto_config or launch.trust_remote_code:
        return
    if known is None:
        out.skip("trust-remote-code", f"{model.source} has auto_map.AutoConfig and the launch lacks "
                 "--trust-remote-code; whether transformers knows the model type itself is not known")
        return
    if not known:
        text = (f"config.json has auto_map.AutoConfig ({model.auto_map['AutoConfig']}), the installed transformers "
                f"does not know model_type {model.model_type}, and the launch has no --trust-remote-code")
        out.add("trust-remote-code", 0.85, text, model.source, "auto-map")


def flash_attn(env: Environment, out: Predictions) -> None:
    model, launch, packages = env.model, env.launch, env.facts.packages
    if not packages or "flash-attn" in packages:
        return
    wanted = launch.value("--attn-implementation", "--attn_implementation") if launch is not None else None
    if wanted == "flash_attention_2" or (model is not None and model.attn_implementation == "flash_attention_2"):
        where = "the launch passes --attn-implementation flash_attention_2" if wanted else \
            f"{model.source} sets attn_implementation flash_attention_2"  # type: ignore[union-attr]
        out.add("flash-attn-missing", 0.8, f"{where}; flash-attn is not installed",
                "launch command" if wanted else model.source, "attn-implementation")  # type: ignore[union-attr]
    elif model is not None and "flash_attn" in model.remote_imports and (launch is None or launch.trust_remote_code):
        file = model.remote_imports["flash_attn"]
        out.add("flash-attn-missing", 0.75, f"the model's remote code {file} imports flash_attn outside a "
                "try/except (transformers checks such imports before loading it); flash-attn is not installed",
                model.source, "remote-code-imports")


def accelerate(env: Environment, out: Predictions) -> None:
    launch, packages = env.launch, env.facts.packages
    if launch is None or not packages or "accelerate" in packages:
        return
    device_map = launch.value("--device-map", "--device_map")
    if device_map and device_map.lower() not in ("none", "cpu"):
        out.add("accelerate-missing", 0.8, f"the launch passes --device-map {device_map}, which transformers "
                "hands to accelerate; accelerate is not installed", "launch command", "device-map")
