"""How every command ends on an error the user can fix, or one of ours: one line on stderr and an exit
code, never a traceback. Click-free, so the plain `diagnose crash.log` path (cli_fast.py) shares it."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TypeVar

from diagnose.errors import EXIT_CLEAN, EXIT_USAGE, DiagnoseError


def say(line: str) -> None:
    """One line on stderr (a stderr that cannot take it is not worth a traceback)."""
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


T = TypeVar("T")


def guarded(run: Callable[[], T]) -> T:
    """Run a command (and return what it returns); what escapes it becomes one `diagnose: error:` line and
    its exit code."""
    try:
        return run()
    except DiagnoseError as exc:
        say(f"diagnose: error: {exc}")
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:  # Ctrl-C: the shell's prompt comes back on a line of its own (as click does it)
        say("")
        sys.exit(130)
    except BrokenPipeError:  # `diagnose big.log | head`: the reader left; not an error
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(EXIT_CLEAN)
    except (MemoryError, RecursionError) as exc:  # input too deep or too big for this machine
        say(f"diagnose: error: the input is too large or too deeply nested ({type(exc).__name__})")
        sys.exit(EXIT_USAGE)
    except OSError as exc:  # writing --output, reading a file that vanished
        say(f"diagnose: error: {exc.strerror or exc}: {getattr(exc, 'filename', '') or ''}".rstrip(": "))
        sys.exit(EXIT_USAGE)
    except Exception as exc:  # our bug: one line and exit 2, not a traceback that exits 1 ("found")
        if os.environ.get("DIAGNOSE_DEBUG"):
            raise
        say(f"diagnose: error: internal error ({type(exc).__name__}: {str(exc)[:300]}); "
            "DIAGNOSE_DEBUG=1 shows the traceback; please report it")
        sys.exit(EXIT_USAGE)
