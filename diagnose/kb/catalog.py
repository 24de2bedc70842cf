"""The catalogues beside the rules (rules/catalog/): NVIDIA's Xids and the CUDA error codes.

Plain data once compiled (it is pickled with the KB, so a warm run imports neither yaml nor
pydantic); kb/catalog_schema.py validates the files. Two jobs here:

- `signal_regex`: a rule signal that names CUDA errors (`cuda_error: [cudaErrorIllegalAddress]`)
  becomes one regex over the three ways a log says it: the enum names (runtime and driver), the
  message cudaGetErrorString prints, and the number, only in contexts that make it a CUDA error.
- `mentions`: which catalogued Xids and CUDA errors a line names (for the notes on findings and
  on unmatched errors).

>>> cat = Catalog(cuda={700: {"code": 700, "runtime": "cudaErrorIllegalAddress",
...     "driver": "CUDA_ERROR_ILLEGAL_ADDRESS", "message": "an illegal memory access was encountered"}})
>>> [mentions(cat, line) for line in ("RuntimeError: CUDA error: an illegal memory access was encountered",
...     "cudaErrorIllegalAddress", "CUDA error 700 at foo.cu:12", "took 700 ms")]
[[('cuda-error', 700)], [('cuda-error', 700)], [('cuda-error', 700)], []]
"""

from __future__ import annotations

import re
from typing import Any

from diagnose import lazy_re
from diagnose.record import field, record

XID_LINE = lazy_re.compile(r"NVRM: Xid \((?:PCI:)?[0-9A-Fa-f:.]+\): (\d{1,9}),")  # no int() of 5,000 digits
ENUM_NAME = lazy_re.compile(r"\b(cuda(?:Success|Error[A-Za-z0-9]+)|CUDA_(?:SUCCESS|ERROR_[A-Z0-9_]+))\b")
GENERIC_WORDS = 4  # a message of fewer words ("out of memory") counts only after a CUDA context
# what may stand before a bare message or number for it to be a CUDA error (never `cuda runtime
# error (N)`: PyTorch's THC printed the numbers of CUDA <= 10.0, which differ)
MESSAGE_BEFORE = (r"(?:(?i:\bCUDA(?: driver)? error)|(?i:\bcuda runtime error) \(\d+\)|\bCUresult|\bcudaError\w*"
                  r"|\bCUDA_ERROR_\w+)\s?[:=]\s?")
NUMBER_BEFORE = (
    r"(?:(?i:\bCUDA(?: driver)? error)(?: code)?[:=]?\s?\(?"
    r"|\bcudaError(?:_t)?[:=]?\s?\(?"
    r"|\bCUresult[:=]?\s?\(?"
    r"|\b(?:cuInit|cudaGetDeviceCount|cuDeviceGetCount|cudaSetDevice)(?:\(\))?(?: returned| failed(?: with)?)?(?: error)?[:=]?\s?\(?)"
)
NUMBER_FORMS = (NUMBER_BEFORE + r"(?:{codes})\b", r"\bError (?:{codes}):",
                r"(?i:cuda)[^\n]{{0,80}}?(?i:\berror code)[:=]?\s?\(?(?:{codes})\b",
                r"\b(?:cuInit|cudaGetDeviceCount)\b[^\n]{{0,60}}?\(error (?:{codes})\)")


@record
class Catalog:
    """Rows by number: `xids` (rules/catalog/xid.yaml), `cuda` (rules/catalog/cuda-errors.yaml)."""

    xids: dict[int, dict[str, Any]] = field(default_factory=dict)
    cuda: dict[int, dict[str, Any]] = field(default_factory=dict)
    actions: dict[str, str] = field(default_factory=dict)
    pending_rules: set[str] = field(default_factory=set)
    paths: dict[str, str] = field(default_factory=dict)
    _names: dict[str, int] | None = None
    _messages: list[tuple[str, int]] | None = None

    def cuda_by_name(self, name: str) -> dict[str, Any] | None:
        if self._names is None:
            self._names = {r[k]: c for c, r in self.cuda.items() for k in ("runtime", "driver") if r.get(k)}
        code = self._names.get(name)
        return self.cuda.get(code) if code is not None else None

    def messages(self) -> list[tuple[str, int]]:
        """(lower-case message, code), longest first; the first row wins a message two rows share."""
        if self._messages is None:
            seen: dict[str, int] = {}
            for code, row in sorted(self.cuda.items()):
                for key in ("message", "driver_message"):
                    if row.get(key) and code:
                        seen.setdefault(row[key].lower().rstrip("."), code)
            self._messages = sorted(seen.items(), key=lambda kv: -len(kv[0]))
        return self._messages


def escape(text: str) -> str:
    """`re.escape` that leaves spaces and words readable (the pattern shows in the rule docs)."""
    return re.sub(r"([.^$*+?{}\[\]\\|()])", r"\\\1", text)


def is_generic(message: str) -> bool:
    return len(message.split()) < GENERIC_WORDS


def signal_regex(catalog: Catalog, names: list[str]) -> str:
    """One regex for the CUDA errors `names` (enum names of either API); KeyError names an unknown one."""
    rows = []
    for name in names:
        row = catalog.cuda_by_name(name)
        if row is None:
            raise KeyError(name)
        rows.append(row)
    enums = sorted({r[k] for r in rows for k in ("runtime", "driver") if r.get(k)})
    texts = sorted({r[k].rstrip(".") for r in rows for k in ("message", "driver_message") if r.get(k)})
    codes = "|".join(str(c) for c in sorted({r["code"] for r in rows}))
    parts = [r"\b(?:" + "|".join(map(escape, enums)) + r")\b"]
    specific = [escape(t) for t in texts if not is_generic(t)]
    generic = [escape(t) for t in texts if is_generic(t)]
    if specific:
        parts.append("(?i:" + "|".join(specific) + ")")
    if generic:
        parts.append(MESSAGE_BEFORE + "(?i:" + "|".join(generic) + r")\b")
    parts += [form.format(codes=codes) for form in NUMBER_FORMS]
    return "|".join(parts)


_NUMBER = [lazy_re.compile(form.format(codes=r"(\d{1,3})")) for form in NUMBER_FORMS]
_GENERIC_MESSAGE = lazy_re.compile(MESSAGE_BEFORE + r"([A-Za-z][^.;,\n]{1,80})")


def mentions(catalog: Catalog, text: str) -> list[tuple[str, int]]:
    """The catalogued ("xid", n) and ("cuda-error", code) a line names, in order, each once.
    An Xid line counts whether or not the number is catalogued (a note then says it is not)."""
    found: list[tuple[str, int]] = []

    def add(kind: str, number: int | None) -> None:
        if number is not None and (kind, number) not in found:
            found.append((kind, number))

    for m in XID_LINE.finditer(text):
        add("xid", int(m[1]))
    if not catalog.cuda:
        return found
    for m in ENUM_NAME.finditer(text):
        row = catalog.cuda_by_name(m[1])
        add("cuda-error", row["code"] if row and row["code"] else None)
    lower = text.lower()
    for message, code in catalog.messages():
        if not is_generic(message) and message in lower:
            add("cuda-error", code)
    for m in _GENERIC_MESSAGE.finditer(text):
        said = m[1].lower()
        add("cuda-error", next((c for msg, c in catalog.messages() if is_generic(msg) and said.startswith(msg)), None))
    for pattern in _NUMBER:
        for m in pattern.finditer(text):
            code = int(m[1])
            add("cuda-error", code if code in catalog.cuda and code else None)
    return found


def compile_signal(catalog: Catalog | None, names: list[str], where: str) -> str:
    """`signal_regex` for a rule's `cuda_error` signal; an unknown name is the rule's error at load."""
    from diagnose.errors import RuleError

    try:
        return signal_regex(catalog or Catalog(), names)
    except KeyError as exc:
        raise RuleError(f"{where}: unknown CUDA error {exc.args[0]!r}: not in rules/catalog/cuda-errors.yaml") from None
