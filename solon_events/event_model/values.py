"""What the library's frozen values share: read-only mappings, copying and pickling, and a
constructor generated from a class's field list.

Events and results are frozen, slotted attrs classes, so a value handed to a subscriber
cannot drift. Their mappings are read-only :class:`~types.MappingProxyType` views, which
``pickle`` and ``copy`` cannot handle, so every such value derives from :class:`FrozenValue`:
it is copied and pickled by calling its class again with its fields, mappings as dicts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping
from types import MappingProxyType
from typing import Any, TypeVar

import attrs
import orjson

__all__ = [
    "EMPTY_MAPPING",
    "FrozenValue",
    "fast_builder",
    "fast_constructor",
    "fast_evolve",
    "fast_replacer",
    "fast_recorder",
    "held_member",
    "read_held",
    "read_only",
    "read_through",
    "snapshot",
    "writable_base",
]

_V = TypeVar("_V")

EMPTY_MAPPING: Mapping[str, Any] = MappingProxyType({})
"""The one empty read-only mapping every value shares."""


def read_only(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """``value`` as a read-only mapping; a dict is wrapped, not copied (None: empty)."""
    if not value:
        return EMPTY_MAPPING
    if value.__class__ is dict or isinstance(value, MutableMapping):
        return MappingProxyType(value)  # type: ignore[arg-type]
    return value


def snapshot(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """A read-only copy of ``value`` that later changes to ``value`` do not reach."""
    if not value:
        return EMPTY_MAPPING
    return MappingProxyType(dict(value))


_KEEP: Any = object()  # what an evolve() parameter not given is


def _plain(value: Any) -> Any:
    return dict(value) if value.__class__ is MappingProxyType else value


class FrozenValue:
    """A frozen attrs value that ``copy.copy``, ``copy.deepcopy`` and ``pickle`` handle.

    Its reduction is its class called with its fields by keyword (read-only mappings given
    as dicts), so a copy is built by the one constructor, as any other value is.
    """

    __slots__ = ()

    def __reduce__(self) -> tuple[Any, ...]:
        fields = {
            field.alias: _plain(getattr(self, field.name))
            for field in attrs.fields(type(self))  # type: ignore[arg-type]
            if field.init
        }
        return _rebuild, (type(self), fields)


def _rebuild(cls: Callable[..., _V], fields: dict[str, Any]) -> _V:
    return cls(**fields)


_MEMBER: Any = object()
"""The first item of what :func:`held_member` makes (an object the collector never tracks)."""


def held_member(text: str | bytes | bytearray, key: str) -> Any:
    """What a value holds for the member ``key`` of the JSON object whose text is ``text`` (a
    frame's), read back by :func:`read_held`: decoded afresh on every read.

    It is a tuple of objects the cyclic garbage collector does not track, so the collector
    stops tracking it after its first pass: a kept value holding it gives the collector
    nothing to walk, where the decoded member's dicts and lists would.
    """
    return (_MEMBER, text, key)


def read_held(held: Any) -> Any:
    """What ``held`` stands for: the member of a frame's text that :func:`held_member` holds,
    decoded (a new value, equal every time); any other value is itself."""
    if held.__class__ is tuple and len(held) == 3 and held[0] is _MEMBER:
        return orjson.loads(held[1])[held[2]]
    return held


def read_through(name: str, read: Callable[[Any], Any]) -> Callable[[type[_V]], type[_V]]:
    """Class decorator, applied between ``attrs.frozen`` and :func:`fast_constructor`: the
    field ``name`` reads as ``read(held)``, ``held`` being what its slot holds.

    For a field held in a form the collector need not walk (a frame's JSON text, a plain
    dict, which Python leaves untracked when it holds no containers, a
    :func:`held_member`) and made read-only or decoded on every read. Equality, copying
    and pickling read the field, so they see what ``read`` gives; :func:`fast_evolve`
    carries the held form over unread. Setting the field (as attrs' own ``__init__`` does,
    through ``object.__setattr__``; the frozen class refuses plain assignment) stores the
    value given as the held form.
    """

    def apply(cls: type[_V]) -> type[_V]:
        slot = vars(cls.__base__)[name]  # the slot itself, under the property
        held = slot.__get__

        def get(self: Any) -> Any:
            return read(held(self))

        get.__name__ = get.__qualname__ = name
        setattr(cls, name, property(get, slot.__set__, doc=read.__doc__))
        return cls

    return apply


def writable_base(cls: type[_V]) -> type[_V]:
    """Class decorator, applied before ``attrs.frozen``: ``cls`` again, deriving from a
    writable class whose slots are its fields (and ``__weakref__``).

    attrs then reuses those slots, so the frozen class adds none and Python lets an
    instance of the writable base become one of it (``__class__`` assignment), which is how
    :func:`fast_constructor` builds it.
    """
    slots = ("__weakref__", *cls.__annotations__)
    base = type(f"_Writable{cls.__name__}", cls.__bases__, {"__slots__": slots})
    body = {k: v for k, v in vars(cls).items() if k not in ("__dict__", "__weakref__")}
    return type(cls.__name__, (base,), body)  # type: ignore[return-value]


def fast_constructor(cls: type[_V]) -> type[_V]:
    """Class decorator, applied after ``attrs.frozen`` and :func:`writable_base`: ``cls`` with a
    ``__new__`` made from its field list in place of attrs' ``__init__``.

    Its parameters are ``cls``'s fields in order, with their defaults (a field without
    one may not be None); a field's converter is applied to any value but its default.
    attrs' frozen ``__init__`` stores each field through ``object.__setattr__``; this one
    fills an instance of the writable base with plain attribute stores and then gives it
    the class ``cls``, at about a third of the cost. attrs' ``__init__`` is removed (type
    checkers still read its signature from the attrs class). An ``evolve`` method of
    ``cls`` is replaced by :func:`fast_evolve`'s, keeping its docstring.
    """
    cls.__new__ = _builder(cls, "__new__", "cls", (), "return this")  # type: ignore[method-assign]
    del cls.__init__  # object.__init__ ignores the arguments __new__ took
    if "evolve" in vars(cls):
        evolve = fast_evolve(cls)
        evolve.__doc__ = cls.evolve.__doc__  # type: ignore[attr-defined]
        cls.evolve = evolve  # type: ignore[attr-defined]
    return cls


def fast_builder(cls: type[_V]) -> Callable[..., _V]:
    """A function building a ``cls`` from its fields, in order, as :func:`fast_constructor`'s
    ``__new__`` does, for a class that keeps attrs' ``__init__`` (no
    ``__attrs_post_init__`` runs); a field whose default is a factory is to be given."""
    return _builder(cls, "build", None, (), "return this")


def fast_evolve(cls: type[Any]) -> Callable[..., Any]:
    """An ``evolve(self, **changes)`` method for a class :func:`fast_constructor` built:
    ``attrs.evolve(self, **changes)``, with the changed fields converted as the constructor
    converts them, at a fraction of its cost."""
    return _builder(cls, "evolve", "self", (), "return this", keep=True)


def fast_replacer(cls: type[_V], field: str) -> Callable[[_V, Any], _V]:
    """A function ``(value, new)``: a copy of the ``cls`` ``value`` with ``field`` set to
    ``new`` (unconverted), every other field as it is: :func:`fast_evolve` of one field,
    without its keyword handling (for a field the hot path sets on every event)."""
    others = tuple(other.name for other in attrs.fields(cls) if other.name != field)  # type: ignore[arg-type]
    return _builder(cls, f"with_{field}", "self", others, "return this")


def fast_recorder(
    cls: type[Any],
    stamped: tuple[str, ...],
    record: str,
    shared: tuple[str, str, str] | None = None,
) -> Callable[..., None]:
    """A method that builds a ``cls`` as :func:`fast_constructor`'s does and appends it to
    ``self.<record>``; its fields named in ``stamped`` are ``self``'s attributes of the same
    names, its parameters the other fields.

    ``shared``, ``(field, given, held)``: when that field's value is ``self.<given>`` itself,
    the event holds ``self.<held>`` there instead, unconverted (a frame's JSON text in place
    of its decoded payload, for a field :func:`read_through` decodes on read)."""
    return _builder(cls, "record", "self", stamped, f"self.{record}.append(this)", shared=shared)


def _builder(
    cls: type[Any],
    name: str,
    first: str | None,
    stamped: tuple[str, ...],
    finish: str,
    keep: bool = False,
    shared: tuple[str, str, str] | None = None,
) -> Callable[..., Any]:
    """The source of a function building a ``cls`` from its fields, compiled: ``name(first,
    <fields>)``; ``stamped`` fields are ``self``'s, and with ``keep`` every field not given
    is ``self``'s (read from its slot, under a :func:`read_through` property); ``shared`` is
    :func:`fast_recorder`'s; ``finish`` is its last line."""
    fields = attrs.fields(cls)
    writable: Any = cls.__base__
    if cls.__basicsize__ != writable.__basicsize__:
        raise TypeError(f"{cls.__name__} needs @writable_base under its attrs decorator")
    namespace: dict[str, Any] = {
        "_cls": cls,
        "_writable": writable,
        "_keep": _KEEP,
    }
    params: list[str] = [] if first is None else [first]
    if keep:
        params.append("*")
    stores: list[str] = []
    for field in fields:
        field_name = field.name
        # self's value of a field: read from its slot under a read_through property
        own = f"self.{field_name}"
        if first == "self" and isinstance(vars(cls).get(field_name), property):
            namespace[f"_held_{field_name}"] = vars(writable)[field_name].__get__
            own = f"_held_{field_name}(self)"
        if field_name in stamped:
            stores.append(f"    this.{field_name} = {own}")
            continue
        default = field.default
        converter = field.converter
        if keep:
            params.append(f"{field_name}=_keep")
            value = field_name if converter is None else f"_convert_{field_name}({field_name})"
            if converter is not None:
                namespace[f"_convert_{field_name}"] = converter
            stores.append(f"    this.{field_name} = {own} if {field_name} is _keep else {value}")
            continue
        if default is attrs.NOTHING:
            params.append(field_name)
            message = f"{cls.__name__} needs a {field_name}"
            stores.append(f"    if {field_name} is None: raise TypeError({message!r})")
        elif isinstance(default, attrs.Factory):  # type: ignore[arg-type]
            params.append(f"{field_name}=None")  # the caller gives it
        else:  # the default as the field holds it: stored as it is
            held = default if converter is None else converter(default)
            namespace[f"_default_{field_name}"] = held
            params.append(f"{field_name}=_default_{field_name}")
        value = field_name
        if converter is not None:
            namespace[f"_convert_{field_name}"] = converter
            value = f"_convert_{field_name}({field_name})"
            if f"_default_{field_name}" in namespace:
                value = f"{field_name} if {field_name} is _default_{field_name} else {value}"
        if shared is not None and shared[0] == field_name:
            given, held = shared[1:]
            value = f"self.{held} if {field_name} is self.{given} else {value}"
        stores.append(f"    this.{field_name} = {value}")
    source = "\n".join(
        [
            f"def {name}({', '.join(params)}):",
            "    this = _writable()",
            *stores,
            "    this.__class__ = _cls",
            f"    {finish}",
        ]
    )
    exec(compile(source, f"<{cls.__name__}.{name}>", "exec"), namespace)
    built: Callable[..., Any] = namespace[name]
    built.__qualname__ = f"{cls.__name__}.{name}"
    return built
