"""What `diagnose [INPUT ...]` does once its options are known: load the KB, diagnose, render, write, exit
with the promised code. Click-free: cli.py (the click command) and cli_fast.py (the plain path without
click) both call it, so the two cannot drift."""

from __future__ import annotations

import gc
import os
import sys
from typing import Any

from diagnose.cli_errors import say
from diagnose.errors import EXIT_CLEAN, EXIT_FOUND, EXIT_UNEXPLAINED
from diagnose.model import is_guess


def run(paths: list[str], fmt: str = "text", output: str | None = None, top: int | None = None,
        extra_rules: tuple[str, ...] = (), explain: bool = False, color: str = "auto", no_cache: bool = False,
        exit_zero: bool = False, redact: bool | None = None, template: str | None = None,
        quiet: bool = False) -> None:
    """Diagnose `paths` ("-" is stdin) and exit: 1 a cause found, 3 errors no rule explains, 0 clean."""
    from diagnose import api
    from diagnose.cli_progress import for_terminal

    kb = api.load_kb(extra_rules, use_cache=not no_cache)
    if not gc.isenabled():  # the plain path (cli_fast) started with the collector off
        gc.freeze()  # the modules and the KB live as long as the run: later collections need not walk them
        gc.enable()
    progress = for_terminal(quiet)  # bytes, rate, time left: on a terminal only, cleared even on Ctrl-C
    try:
        diagnosis = api.diagnose(paths, kb=kb, progress=progress)
    finally:
        if progress is not None:
            progress.clear()
    if not quiet:
        warn_skipped(diagnosis)  # an input that could not be read: on stderr as well as in the report
    emit(diagnosis, "template:" + template if template else fmt, output, color, explain, redact, exit_zero, top=top)


def warn_skipped(diagnosis: Any) -> None:
    """Each input (or part of one) that could not be used, one `diagnose: warning:` line on stderr."""
    for skipped in diagnosis.skipped:
        say(f"diagnose: warning: {skipped.source}: {skipped.reason}")


def emit(diagnosis: Any, fmt: str, output: str | None, color: str, explain: bool, redact: bool | None,
         exit_zero: bool, top: int | None = None, predicted: bool = False) -> None:
    """Render a diagnosis (or a preflight) in `fmt`, write it, and exit with the promised code."""
    from diagnose.render import RENDERERS

    opts: dict[str, Any] = {}
    if fmt == "text":
        opts = {"colour": colour(color, output), "explain": explain, "top": top, "predicted": predicted}
    elif top:
        diagnosis.findings = diagnosis.findings[:top]
    if not explain:
        diagnosis.drop_explanations()
    if redact or (redact is None and fmt == "slack"):
        from diagnose.redact import redact_diagnosis

        diagnosis = redact_diagnosis(diagnosis)
    if fmt.startswith("template:"):  # --template FILE: a team's own post-mortem form
        from diagnose.render import template

        write(template.render(diagnosis, fmt.partition(":")[2]), output)
    else:
        write(RENDERERS[fmt](diagnosis, **opts), output)
    sys.exit(EXIT_CLEAN if exit_zero else exit_code(diagnosis, predicted))


def exit_code(diagnosis: Any, predicted: bool = False) -> int:
    """1 a cause found (predicted); 3 none, but errors no rule explains (a preflight: checks it was asked
    for could not run), also when the only finding is a guess by wording; 0 clean. A CI gate can trust 0."""
    if diagnosis.findings and not all(is_guess(f) for f in diagnosis.findings):
        return EXIT_FOUND
    if predicted:
        unchecked = [s for s in diagnosis.skipped if s.source.startswith(("preflight:", "model "))]
        return EXIT_UNEXPLAINED if unchecked else EXIT_CLEAN
    return EXIT_UNEXPLAINED if diagnosis.unmatched_errors else EXIT_CLEAN


def colour(choice: str, output: str | None) -> bool:
    """--color auto: on a terminal (not into --output); NO_COLOR, CLICOLOR=0 and TERM=dumb turn it off,
    FORCE_COLOR / CLICOLOR_FORCE turn it on anywhere. --color always / never win over all of them."""
    if choice != "auto":
        return choice == "always"
    env = os.environ
    if env.get("NO_COLOR"):
        return False
    if any(env.get(k, "") not in ("", "0") for k in ("FORCE_COLOR", "CLICOLOR_FORCE")):
        return True
    if env.get("TERM") == "dumb" or env.get("CLICOLOR") == "0":
        return False
    return output is None and sys.stdout.isatty()


def write(text: str, output: str | None) -> None:
    if output:
        with open(output, "w", encoding="utf-8") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
