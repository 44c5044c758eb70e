"""Plain data records for the machine view's models, at no start-up cost.

`@record` is the part of `@dataclasses.dataclass` that `ps`, `reap` and `hosts` use:
fields from the class annotations in order, defaults and `field(default_factory=...)`,
an `__init__` taking them positionally or by name, `__repr__`, `__eq__`, `frozen=True`
(no assignment after `__init__`, hashable), and `replace(obj, **changes)`.

Why not dataclasses: importing them pulls in `inspect` (with `ast`, `dis`, `tokenize`),
and each class costs an `exec` of generated code; together about 25 ms of the ~100 ms
that `mcp-tether ps` took on a machine with 1000 processes (issue 10 holds `ps` within
1.5x of `ps(1)`). Type checkers see these classes as dataclasses
(`dataclass_transform`). Left out on purpose: inherited fields, `slots`, ordering,
`asdict()`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar, overload

    # typing has it from 3.11; we run on 3.10 too, where it only types
    from typing_extensions import dataclass_transform

    _T = TypeVar("_T")
else:
    def dataclass_transform(**_options: object) -> object:
        return lambda f: f

    def overload(f: object) -> object:  # typing.overload at run time (ruff: F811 below)
        return f

__all__ = ["record", "field", "replace"]

_MISSING: Any = object()


class _Factory:
    __slots__ = ("make",)

    def __init__(self, make: Callable[[], Any]) -> None:
        self.make = make


def field(*, default_factory: Callable[[], _T]) -> _T:
    """A default made fresh for each instance (a list, a dict, another record)."""
    made: _T = _Factory(default_factory)  # type: ignore[assignment]  # as dataclasses.field
    return made


def _init(names: tuple[str, ...], defaults: dict[str, Any]) -> Callable[..., None]:
    # Fills the new instance's __dict__ in bulk (a per-field object.__setattr__ cost
    # ~12 us per record; `ps` makes six records per server it lists).
    n = len(names)
    known = frozenset(names)
    factories = {k for k, v in defaults.items() if isinstance(v, _Factory)}

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        d = self.__dict__
        if args:
            if len(args) > n:
                raise TypeError(f"{type(self).__name__}() takes {n} positional arguments "
                                f"but {len(args)} were given")
            d.update(zip(names, args, strict=False))
        for key in kwargs:
            if key not in known:
                raise TypeError(f"{type(self).__name__}() got an unexpected keyword "
                                f"argument {key!r}")
            if key in d:
                raise TypeError(f"{type(self).__name__}() got multiple values for "
                                f"argument {key!r}")
        d.update(kwargs)
        if len(d) < n:
            for name in names:
                if name in d:
                    continue
                if name not in defaults:
                    raise TypeError(f"{type(self).__name__}() missing required argument: "
                                    f"{name!r}")
                value = defaults[name]
                d[name] = value.make() if name in factories else value

    return __init__


def replace(obj: _T, /, **changes: Any) -> _T:
    """A copy of the record `obj` with `changes` (like `dataclasses.replace`)."""
    names: tuple[str, ...] = type(obj).__match_args__  # type: ignore[attr-defined]
    return type(obj)(**{**{n: getattr(obj, n) for n in names}, **changes})


@overload
@dataclass_transform(field_specifiers=(field,))
def record(cls: type[_T], /) -> type[_T]: ...
@overload
def record(*, frozen: bool = False) -> Callable[[type[_T]], type[_T]]: ...  # noqa: F811


def record(cls: type[_T] | None = None, /, *, frozen: bool = False) -> Any:  # noqa: F811
    """Make `cls` a plain data record (see the module's docstring)."""

    def make(cls: type[_T]) -> type[_T]:
        names = tuple(n for n, t in cls.__dict__.get("__annotations__", {}).items()
                      if not str(t).startswith("ClassVar"))
        defaults = {n: cls.__dict__[n] for n in names if n in cls.__dict__}
        for n in defaults:  # defaults live in __init__ now, not on the class
            delattr(cls, n)
        ns: dict[str, Any] = {"__init__": _init(names, defaults),
                              "__match_args__": names}

        def values(self: Any) -> tuple[Any, ...]:
            return tuple(getattr(self, n) for n in names)

        def __repr__(self: Any) -> str:
            inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in names)
            return f"{type(self).__qualname__}({inner})"

        def __eq__(self: Any, other: object) -> bool:
            if other.__class__ is not self.__class__:
                return NotImplemented
            return bool(values(self) == values(other))

        ns.update(__repr__=__repr__, __eq__=__eq__)
        if frozen:
            def __setattr__(self: Any, name: str, value: Any) -> None:
                raise AttributeError(f"cannot assign to field {name!r} of a frozen "
                                     f"{type(self).__name__}")

            def __hash__(self: Any) -> int:
                return hash(values(self))

            ns.update(__setattr__=__setattr__, __delattr__=__setattr__, __hash__=__hash__)
        else:
            ns["__hash__"] = None  # mutable and comparable: unhashable, like a dataclass
        for key, value in ns.items():
            if key not in cls.__dict__:  # what the class writes itself stays
                setattr(cls, key, value)
        return cls

    return make if cls is None else make(cls)
