"""`pip check` from metadata: the declared requirements (Requires-Dist) that the installed
distributions do not satisfy, evaluated with the target interpreter's environment markers.

>>> from diagnose.preflight.probe import Distribution
>>> dists = {"sglang": Distribution("sglang", "0.5.9", ["torch==2.9.1", "pytest; extra == 'test'"]),
...          "torch": Distribution("torch", "2.10.0+cu128")}
>>> [str(c) for c in conflicts(dists, {"python_version": "3.12", "sys_platform": "linux"})]
['sglang 0.5.9 requires torch==2.9.1, but torch 2.10.0+cu128 is installed']
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from diagnose.preflight.probe import Distribution

SHOWN = 80  # characters of a requirement or version a note shows


@dataclass
class Conflict:
    requirer: str
    requirer_version: str
    requirement: str  # as declared, without its marker
    name: str  # canonical name of the required distribution
    installed: str | None  # None: not installed
    exact: bool  # the requirement pins one version (== / ===)

    def __str__(self) -> str:
        if self.installed is None:
            return f"{self.requirer} {self.requirer_version} requires {self.requirement}, which is not installed"
        return f"{self.requirer} {self.requirer_version} requires {self.requirement}, but {self.name} {self.installed} is installed"


def conflicts(dists: dict[str, Distribution], markers: dict[str, str],
              notes: list[str] | None = None) -> list[Conflict]:
    """The unsatisfied requirements; what cannot be judged (a requirement or version packaging cannot
    compare) is a line in `notes` instead, never an exception."""
    from packaging.requirements import InvalidRequirement
    from packaging.utils import canonicalize_name

    found = []
    env = {**markers, "extra": ""}
    said = notes if notes is not None else []
    for dist in sorted(dists.values(), key=lambda d: d.name):
        for text in dist.requires:
            try:
                req = parse(text)
                if req.marker is not None and not req.marker.evaluate(env):
                    continue
            except InvalidRequirement as exc:
                said.append(f"{short(f'{dist.name} {dist.version}')} declares {short(text)!r}: not judged ({exc})")
                continue
            except Exception:  # noqa: BLE001 - markers raise their own errors on odd environments
                continue
            name = canonicalize_name(req.name)
            shown = short(f"{req.name}{req.specifier}" if req.specifier else req.name)
            exact = any(s.operator in ("==", "===") and "*" not in s.version for s in req.specifier)
            target = dists.get(name)
            if target is None:
                found.append(Conflict(dist.name, dist.version, shown, name, None, exact))
            elif req.specifier and (holds := contains(req.specifier, target.version)) is None:
                said.append(f"{dist.name} requires {shown}: {name} {short(target.version)} is not a version "
                            "it can be compared with; not judged")
            elif req.specifier and not holds:
                found.append(Conflict(dist.name, dist.version, shown, name, target.version, exact))
    return found


def parse(text: str) -> Any:
    """A `packaging` Requirement whose every version can be compared, else InvalidRequirement with a
    one-line reason (packaging reads a specifier's version only when it compares, and `int()` refuses a
    number of over 4,300 digits: `torch==999...9` would raise ValueError there)."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.version import InvalidVersion, Version

    try:
        req = Requirement(text)
    except InvalidRequirement:
        raise InvalidRequirement("not a PEP 508 requirement") from None
    for spec in req.specifier:
        if spec.operator == "===":  # arbitrary equality compares strings
            continue
        try:
            Version(spec.version.removesuffix(".*"))
        except (InvalidVersion, ValueError):
            raise InvalidRequirement(f"the version {short(spec.version)} cannot be compared") from None
    return req


def judged(texts: Any, who: str, notes: list[str]) -> list[str]:
    """The requirements in `texts` (a report's requires_dist) that can be judged; a note for each other."""
    from packaging.requirements import InvalidRequirement

    kept = []
    for text in map(str, texts if isinstance(texts, list) else []):
        try:
            parse(text)
            kept.append(text)
        except InvalidRequirement as exc:
            notes.append(f"{short(who)} declares {short(text)!r}: not judged ({exc})")
    return kept


def contains(specifier: Any, version: str) -> bool | None:
    """Does the installed `version` satisfy `specifier`? None: it is no version packaging can compare."""
    from packaging.version import InvalidVersion, Version

    try:
        parsed = Version(version)
        if parsed.local and not any(s.operator == "===" for s in specifier):
            # `torch==2.9.1` accepts 2.9.1+cu128 (PEP 440: a public spec ignores the local label)
            return bool(specifier.contains(parsed, prereleases=True)
                        or specifier.contains(Version(parsed.public), prereleases=True))
        return bool(specifier.contains(parsed, prereleases=True))
    except (InvalidVersion, ValueError):  # ValueError: a number of over 4,300 digits
        return None  # not judged: pip check skips what it cannot parse


def short(text: str) -> str:
    """`text` as a note shows it: a 5,000-digit version is cut, with its length."""
    return text if len(text) <= SHOWN else f"{text[:SHOWN]}... ({len(text):,} characters)"
