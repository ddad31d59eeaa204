"""The ``variables`` tool's text: the user's variables, summarized, never dumped."""

from __future__ import annotations

import types
from collections.abc import Callable, Iterable, Mapping
from typing import Protocol, TypeGuard

__all__ = ["Namespace", "describe_variables", "detail", "summarize"]

_SUMMARY = 100  # characters of a value's one-line summary
_DETAIL = 4000  # characters of a value's fuller summary


class Namespace(Protocol):
    """What the listing reads of a namespace (:class:`.notebook.PythonNamespace` is one):
    its ``values`` by name, and which of those names are the user's variables."""

    @property
    def values(self) -> Mapping[str, object]: ...

    def user_names(self) -> list[str]: ...


def describe_variables(namespace: Namespace, name: str | None = None) -> tuple[str, bool]:
    """The listing (or one variable's detail) as the ``variables`` tool returns it."""
    names = namespace.user_names()
    if name is not None:
        if name not in namespace.values or name not in names:
            return f"no user variable named {name!r}; the variables are: {', '.join(names) or 'none'}", True
        return f"{name}: {_type_name(namespace.values[name])}\n{detail(namespace.values[name])}", False
    if not names:
        return "no user variables yet", False
    return "\n".join(f"{n}: {_type_name(namespace.values[n])} = {summarize(namespace.values[n])}" for n in names), False


class _Text(Protocol):
    """What pandas' frames and series have: their text for a person."""

    def to_string(self) -> str: ...


class _Table(Protocol):
    """A table the way pandas has one (a DataFrame), as far as the summaries read it."""

    @property
    def shape(self) -> tuple[int, int]: ...

    @property
    def columns(self) -> Iterable[object]: ...

    @property
    def dtypes(self) -> _Text: ...

    def head(self) -> _Text: ...


def _type_name(value: object) -> str:
    kind = type(value)
    module = kind.__module__
    return kind.__qualname__ if module in ("builtins", "__main__") else f"{module.split('.')[0]}.{kind.__qualname__}"


def _is_table(value: object) -> TypeGuard[_Table]:
    return all(hasattr(value, attribute) for attribute in ("shape", "columns", "dtypes", "head"))


def summarize(value: object) -> str:
    """One line about ``value``: a table's shape and columns, an array's shape, a
    container's length, a scalar's value; never more than about 100 characters."""
    try:
        if _is_table(value):
            rows, cols = value.shape
            return _cut(f"{rows:,} rows × {cols} columns: {', '.join(map(str, value.columns))}")
        if hasattr(value, "shape") and hasattr(value, "dtype"):
            return _cut(f"shape {tuple(value.shape)}, dtype {value.dtype}")
        if isinstance(value, (str, bytes)):
            return _cut(repr(value)) + (f" ({len(value):,} characters)" if len(value) > _SUMMARY else "")
        if isinstance(value, dict):
            return _cut(f"{len(value):,} keys: {', '.join(map(repr, list(value)[:20]))}")
        if isinstance(value, (list, tuple, set, frozenset)):
            return f"{len(value):,} items"
        if isinstance(value, (types.FunctionType, type)):
            return _cut(f"{value.__name__}{_signature(value)}")
        return _cut(repr(value))
    except Exception as exc:  # noqa: BLE001 - a strange object still gets a line
        return f"(cannot summarize: {type(exc).__name__})"


def detail(value: object) -> str:
    """A fuller description: a table's column types and first rows, a container's first
    items, else a cut repr (never more than about 4,000 characters)."""
    try:
        if _is_table(value):
            return _cut(f"{summarize(value)}\ncolumn types:\n{value.dtypes.to_string()}\nfirst rows:\n"
                        f"{value.head().to_string()}", _DETAIL)
        if isinstance(value, (list, tuple)):
            shown = ", ".join(_cut(repr(item)) for item in value[:10])
            return _cut(f"{len(value):,} items: [{shown}{', ...' if len(value) > 10 else ''}]", _DETAIL)
        return _cut(repr(value), _DETAIL)
    except Exception as exc:  # noqa: BLE001
        return f"(cannot describe: {type(exc).__name__}: {exc})"


def _signature(function: Callable[..., object]) -> str:
    import inspect

    try:
        return str(inspect.signature(function))
    except (TypeError, ValueError):
        return "(...)"


def _cut(text: str, limit: int = _SUMMARY) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
