"""Record classes for the types a plain run builds: `@record` writes `__init__`, `__repr__` and `__eq__` from
the class's annotations, as `dataclasses.dataclass` does for the subset the engine uses (defaults,
`field(default_factory=...)`, `field(repr=False)`, `eq=False`, `__post_init__`), with `fields`, `replace`,
`asdict` and `is_record` beside it.

Why not dataclasses: importing it (it imports `inspect`, which imports `ast`, `dis` and `tokenize`) and
generating its methods, one `exec` per method, took about 40 ms of a small crash log's run, for 26 classes:
a quarter of the time the run took beyond Python's own start. Here only `__init__` is generated source (one
small `exec` a class: it runs for every evidence line, so it is plain attribute stores), and nothing is
imported. Modules off that path (the service, the Slack app, preflight) keep dataclasses.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:  # type checkers read `@record` classes as dataclasses
    from typing_extensions import dataclass_transform
else:
    def dataclass_transform(**_: Any) -> Callable[[Any], Any]:
        return lambda decorator: decorator

T = TypeVar("T")


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


class Field:
    """One field of a record: its name, default (or factory) and whether repr and == show it."""

    __slots__ = ("name", "default", "default_factory", "repr", "compare")

    def __init__(self, default: Any = MISSING, default_factory: Any = MISSING, repr: bool = True,  # noqa: A002
                 compare: bool = True) -> None:
        if default is not MISSING and default_factory is not MISSING:
            raise ValueError("cannot specify both default and default_factory")
        self.name = ""
        self.default = default
        self.default_factory = default_factory
        self.repr = repr
        self.compare = compare

    def __repr__(self) -> str:
        return f"Field({self.name!r})"


def field(*, default: Any = MISSING, default_factory: Any = MISSING, repr: bool = True,  # noqa: A002
          compare: bool = True) -> Any:
    """A field's options, as `dataclasses.field` takes them."""
    return Field(default, default_factory, repr, compare)


FIELDS = "__record_fields__"


@dataclass_transform(field_specifiers=(field,))
def record(cls: Any = None, /, *, eq: bool = True) -> Any:
    """`@record` or `@record(eq=False)`: the class with `__init__`, `__repr__` and (unless eq=False) `__eq__`
    written from its annotations; an eq=True record is unhashable, as a dataclass is."""

    def wrap(cls: type[T]) -> type[T]:
        return _process(cls, eq)

    return wrap if cls is None else wrap(cls)


def _is_classvar(annotation: Any) -> bool:
    text = annotation if isinstance(annotation, str) else getattr(annotation, "_name", "") or ""
    return text.startswith(("ClassVar", "typing.ClassVar"))


def _process(cls: Any, eq: bool) -> Any:
    fields: dict[str, Field] = {}
    for base in reversed(cls.__mro__[1:]):
        fields.update(getattr(base, FIELDS, {}))
    for name, annotation in cls.__dict__.get("__annotations__", {}).items():
        if _is_classvar(annotation):
            continue
        value = cls.__dict__.get(name, MISSING)
        spec = value if isinstance(value, Field) else Field(default=value)
        spec.name = name
        if isinstance(spec.default, (list, dict, set)):  # one object shared by every instance: as dataclasses, refuse
            raise ValueError(f"mutable default {type(spec.default)} for field {name} is not allowed: use default_factory")
        if isinstance(value, Field):  # the class keeps a plain default, as with dataclasses
            if spec.default is MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, spec.default)
        fields[name] = spec
    setattr(cls, FIELDS, fields)

    scope: dict[str, Any] = {"MISSING": MISSING}
    params, body, defaulted = [], [], False
    for f in fields.values():
        if f.default is not MISSING or f.default_factory is not MISSING:
            defaulted = True
            if f.default_factory is not MISSING:
                scope[f"_factory_{f.name}"] = f.default_factory
                params.append(f"{f.name}=MISSING")
                body.append(f"  self.{f.name} = _factory_{f.name}() if {f.name} is MISSING else {f.name}")
                continue
            scope[f"_default_{f.name}"] = f.default
            params.append(f"{f.name}=_default_{f.name}")
        elif defaulted:
            raise TypeError(f"non-default argument {f.name!r} follows default argument")
        else:
            params.append(f.name)
        body.append(f"  self.{f.name} = {f.name}")
    if hasattr(cls, "__post_init__"):
        body.append("  self.__post_init__()")
    source = [f"def __init__(self, {', '.join(params)}):", *(body or ["  pass"])]
    exec("\n".join(source), scope)  # noqa: S102 - our own source text, built from the class's field names
    methods = {"__init__": scope["__init__"], "__repr__": _repr([f.name for f in fields.values() if f.repr])}
    if eq:
        methods["__eq__"] = _eq([f.name for f in fields.values() if f.compare])
    for name, method in methods.items():
        if name not in cls.__dict__:
            method.__qualname__ = f"{cls.__qualname__}.{name}"
            setattr(cls, name, method)
    if eq and "__hash__" not in cls.__dict__:
        cls.__hash__ = None
    setattr(cls, "__match_args__", tuple(fields))  # noqa: B010 - mypy reads a direct assignment as a redefinition
    return cls


def _repr(names: list[str]) -> Callable[[Any], str]:
    # __repr__ and __eq__ are closures, not generated source: compiling them was two thirds of the exec time
    def __repr__(self: Any) -> str:
        return f"{type(self).__qualname__}({', '.join(f'{n}={getattr(self, n)!r}' for n in names)})"

    return __repr__


def _eq(names: list[str]) -> Callable[[Any, Any], Any]:
    get = operator.attrgetter(*names) if names else (lambda _: ())

    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is self.__class__:
            return get(self) == get(other)
        return NotImplemented

    return __eq__


def is_record(value: Any) -> bool:
    """A record (instance or class)."""
    return hasattr(value, FIELDS)


def fields(value: Any) -> tuple[Field, ...]:
    """A record's fields, in order (instance or class)."""
    try:
        return tuple(getattr(value, FIELDS).values())
    except AttributeError:
        raise TypeError("must be called with a record type or instance") from None


def replace(value: T, **changes: Any) -> T:
    """A new record like `value` with `changes` (its `__post_init__`, if any, runs again)."""
    for f in fields(value):
        changes.setdefault(f.name, getattr(value, f.name))
    return type(value)(**changes)


def asdict(value: Any) -> Any:
    """A record as plain dicts, lists and values, recursively, as `dataclasses.asdict` gives it."""
    if is_record(value) and not isinstance(value, type):
        return {f.name: asdict(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a named tuple
        return type(value)(*(asdict(v) for v in value))
    if isinstance(value, (list, tuple)):
        return type(value)(asdict(v) for v in value)
    if isinstance(value, dict):
        return type(value)((asdict(k), asdict(v)) for k, v in value.items())
    if isinstance(value, (set, frozenset)):
        return type(value)(asdict(v) for v in value)
    return value
