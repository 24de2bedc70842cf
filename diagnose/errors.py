"""Errors a user can cause, and the exit codes the command line promises."""

from __future__ import annotations

EXIT_CLEAN = 0  # nothing found / nothing predicted
EXIT_FOUND = 1  # a root cause found (or a problem predicted)
EXIT_USAGE = 2  # usage or input error
EXIT_UNEXPLAINED = 3  # no known cause, yet error lines no rule explains (a preflight: asked checks not run)


class DiagnoseError(Exception):
    """An error the user can fix; shown as one line, exit code 2."""

    exit_code = EXIT_USAGE


class InputError(DiagnoseError):
    """No input could be read."""


class RuleError(DiagnoseError):
    """A rule file is invalid; the message starts with `file:line`. `problems` lists every one."""

    def __init__(self, message: str, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.problems = problems or [message]
