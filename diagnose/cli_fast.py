"""`diagnose crash.log` and `cat crash.log | diagnose` without click.

Most runs are a pipe or a few files with at most --format / -q / --exit-zero / --explain. Importing click
and defining its commands was a quarter of a small log's time, so the entry point parses exactly those
invocations here and gives every other one to click (cli.py): any other flag, a command word first, a
path that does not exist (click's words for that), run settings from a config file or the environment,
no input on a terminal. Both call the same cli_run.run; a test checks they write the same bytes and exit
codes on the fixtures.
"""

from __future__ import annotations

import os
import sys
from typing import Any

FLAGS = {"-q": "quiet", "--quiet": "quiet", "--exit-zero": "exit_zero", "--explain": "explain"}
FORMATS = ("text", "json", "markdown", "slack", "html", "svg")  # --format's choices (cli.py takes them from here)
# every command name of cli.py's group (tests keep it equal to the group's list): a first word that names
# one is a command, not a file
COMMANDS = frozenset({"collect", "config", "export", "feedback", "fleet", "help", "preflight", "rules", "run",
                      "schema", "serve", "slack", "verify", "version"})
RUN_SETTINGS = ("format", "extra-rules")  # settings that are defaults of `diagnose run`'s options


def plan(argv: list[str]) -> dict[str, Any] | None:
    """cli_run.run's arguments when `argv` is a plain run this module can do; None: click parses it."""
    if any(k.startswith("_") and k.endswith("_COMPLETE") for k in os.environ):
        return None  # click's shell completion (`_<PROG>_COMPLETE=bash_complete`) is click's
    opts: dict[str, Any] = {"paths": [], "fmt": "text"}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in FLAGS:
            opts[FLAGS[arg]] = True
        elif arg == "--format" and i + 1 < len(argv):
            i += 1
            opts["fmt"] = argv[i]
        elif arg.startswith("--format="):
            opts["fmt"] = arg.partition("=")[2]
        elif arg == "-":
            opts["paths"].append(arg)
        elif arg.startswith("-") or (i == 0 and arg in COMMANDS) or not os.path.exists(arg):
            return None
        else:
            opts["paths"].append(arg)
        i += 1
    if opts["fmt"] not in FORMATS:
        return None
    if not opts["paths"]:
        try:
            if sys.stdin is None or sys.stdin.isatty():
                return None  # click says what to give
        except (AttributeError, ValueError):
            return None
        opts["paths"] = ["-"]
    from diagnose.settings import current

    settings = current()
    if any(settings.source(key) != "default" for key in RUN_SETTINGS):
        return None  # a config file or DIAGNOSE_* variable sets run defaults: click's default_map applies them
    return opts


def main() -> None:
    """The `diagnose` command: the plain runs here, everything else through click."""
    import gc

    # start-up allocates every module's objects and the KB's, none of them garbage: the collector ran about 30
    # times over them (a fortieth of a small log's run). cli_run.run turns it back on once the KB is loaded.
    gc.disable()
    from diagnose.cli_errors import guarded

    options = guarded(lambda: plan(sys.argv[1:]))  # settings files that do not parse: the click path's one line
    if options is None:
        gc.enable()  # click's commands include the long-running service
        from diagnose.cli import main as click_main

        click_main()
        return
    from diagnose import cli_run

    try:
        guarded(lambda: cli_run.run(**options))
    except SystemExit as done:
        quick_exit(done.code)
        raise


def quick_exit(code: object) -> None:
    """End the process now with `code` when nothing is left to do at exit: the interpreter's teardown (freeing
    the KB and every module, one object at a time) was a tenth of a small log's run. Anything registered to
    run at exit (a worker pool, logging) or a thread still running, or output that will not flush, and this
    returns and the normal exit runs."""
    import atexit
    import threading

    count = getattr(atexit, "_ncallbacks", None)
    if not isinstance(code, int) or count is None or count() or threading.active_count() > 1:
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return  # the normal exit reports it as it always has
    os._exit(code)
