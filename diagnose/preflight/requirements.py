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

from diagnose.preflight.probe import Distribution


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


def conflicts(dists: dict[str, Distribution], markers: dict[str, str]) -> list[Conflict]:
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    found = []
    env = {**markers, "extra": ""}
    for dist in sorted(dists.values(), key=lambda d: d.name):
        for text in dist.requires:
            try:
                req = Requirement(text)
                if req.marker is not None and not req.marker.evaluate(env):
                    continue
            except (InvalidRequirement, Exception):  # noqa: B014 - markers raise their own errors on odd envs
                continue
            name = canonicalize_name(req.name)
            shown = f"{req.name}{req.specifier}" if req.specifier else req.name
            exact = any(s.operator in ("==", "===") and "*" not in s.version for s in req.specifier)
            target = dists.get(name)
            if target is None:
                found.append(Conflict(dist.name, dist.version, shown, name, None, exact))
            elif req.specifier and not _satisfies(req.specifier, target.version):
                found.append(Conflict(dist.name, dist.version, shown, name, target.version, exact))
    return found


def _satisfies(specifier, version: str) -> bool:  # type: ignore[no-untyped-def]
    from packaging.version import InvalidVersion, Version

    try:
        parsed = Version(version)
    except InvalidVersion:
        return True  # not judged: pip check skips what it cannot parse
    if parsed.local and not any(s.operator == "===" for s in specifier):
        # `torch==2.9.1` accepts 2.9.1+cu128 (PEP 440: a public spec ignores the local label)
        return specifier.contains(parsed, prereleases=True) or specifier.contains(Version(parsed.public), prereleases=True)
    return specifier.contains(parsed, prereleases=True)
