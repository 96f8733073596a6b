"""Tools: typed, documented Python functions a model may call.

:func:`tool` turns a function (sync or async) into a :class:`Tool`: its JSON schema comes from
the type hints (:mod:`.schema`), its descriptions from the docstring (:mod:`.docstrings`). A
tool is still callable like the function; :meth:`Tool.invoke` / :meth:`Tool.ainvoke` call it
with the arguments a model sent, checked against the schema and converted to the annotated
types. :class:`ToolSet` looks tools up by name.

Plain Python, no I/O: an async tool's coroutine is awaited by the caller.
"""

from __future__ import annotations

import copy
import functools
import inspect
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Generic, ParamSpec, TypeVar, overload

from ..event_model.errors import ToolCallError
from ..event_model.messages import ToolSpec
from .context import ToolContext
from .docstrings import parse_docstring
from .results import format_result
from .schema import MISSING, convert_fields, object_schema, read_signature
from .shape import BadValue, json_type

__all__ = ["Tool", "ToolSet", "tool"]

P = ParamSpec("P")
R = TypeVar("R")

_NAME_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")

RequiresApproval = bool | Callable[[Mapping[str, Any]], bool]
"""Whether a tool's calls wait for a person's approval: always (True), never (False), or
when a predicate of the call's arguments says so."""


def _raw_doc(function: Callable[..., Any]) -> str | None:
    """The uncleaned docstring (cleaning twice would flatten a first-line section)."""
    while isinstance(function, functools.partial):
        function = function.func
    if inspect.isfunction(function) or inspect.ismethod(function):
        return function.__doc__
    return type(function).__doc__ or type(function).__call__.__doc__


def _is_async(function: Callable[..., Any]) -> bool:
    while isinstance(function, functools.partial):
        function = function.func
    if inspect.isfunction(function) or inspect.ismethod(function):
        return inspect.iscoroutinefunction(function)
    return inspect.iscoroutinefunction(type(function).__call__)


def _check_name(name: str) -> str:
    if not _NAME_PATTERN.match(name):
        raise ValueError(
            f"tool name {name!r} is not accepted by providers: use 1 to 64 letters, digits, "
            "'_' or '-'"
        )
    return name


def _checked_approval(requires_approval: Any) -> RequiresApproval:
    if not (isinstance(requires_approval, bool) or callable(requires_approval)):
        raise TypeError(
            "requires_approval is True, False or a predicate of the call's arguments, "
            f"not {type(requires_approval).__name__}"
        )
    return requires_approval  # type: ignore[no-any-return]


class Tool(Generic[P, R]):
    """A function a model may call, with its name, description and JSON schema.

    Calling the tool calls the function (an async tool returns its coroutine). Build one with
    :func:`tool` or :meth:`from_function`; the analysis happens once, at construction, and
    raises ``TypeError`` for a parameter that cannot be described as JSON schema.
    """

    __slots__ = (
        "__wrapped__",
        "_description",
        "_fields",
        "_function",
        "_is_async",
        "_name",
        "_parameters",
        "_requires_approval",
        "_return_direct",
        "_signature",
        "_spec",
    )

    def __init__(
        self,
        function: Callable[P, R],
        *,
        name: str | None = None,
        description: str | None = None,
        return_direct: bool = False,
        requires_approval: RequiresApproval = False,
    ) -> None:
        if not callable(function):
            raise TypeError(f"a tool wraps a function, not {type(function).__name__}")
        _checked_approval(requires_approval)
        label = getattr(function, "__qualname__", None) or repr(function)
        name = _check_name(name if name is not None else getattr(function, "__name__", ""))
        doc_description, docs = parse_docstring(_raw_doc(function))
        self._signature = read_signature(function, label, docs)
        self._fields = {field.name: field for field in self._signature.fields}
        self._describe(
            function,
            name=name,
            description=doc_description if description is None else description,
            parameters=object_schema(self._signature.fields),
            return_direct=return_direct,
            is_async=_is_async(function),
            requires_approval=requires_approval,
        )

    def _describe(
        self,
        function: Callable[P, R],
        *,
        name: str,
        description: str,
        parameters: dict[str, Any],
        return_direct: bool,
        is_async: bool,
        requires_approval: RequiresApproval = False,
    ) -> None:
        """Set what every tool has, however its arguments are handled."""
        self._requires_approval = _checked_approval(requires_approval)
        self.__wrapped__ = function
        self._function = function
        self._name = name
        self._description = description
        self._return_direct = bool(return_direct)
        self._is_async = is_async
        self._parameters = parameters
        self._spec = ToolSpec(
            name=name, description=description, parameters=copy.deepcopy(parameters)
        )

    @classmethod
    def from_function(
        cls,
        function: Callable[P, R],
        *,
        name: str | None = None,
        description: str | None = None,
        return_direct: bool = False,
        requires_approval: RequiresApproval = False,
    ) -> Tool[P, R]:
        """Build a tool from ``function``; ``name`` and ``description`` override the defaults.

        The name defaults to the function's ``__name__``, the description to its docstring's
        text before the first section (Args, Returns, ...).
        """
        return cls(
            function,
            name=name,
            description=description,
            return_direct=return_direct,
            requires_approval=requires_approval,
        )

    @property
    def function(self) -> Callable[P, R]:
        """The wrapped function."""
        return self._function

    @property
    def name(self) -> str:
        """The name the model calls the tool by."""
        return self._name

    @property
    def description(self) -> str:
        """What the tool does, as told to the model (``""`` when the function has no doc)."""
        return self._description

    @property
    def parameters(self) -> dict[str, Any]:
        """The JSON schema of the arguments (a fresh copy: changing it changes nothing)."""
        return copy.deepcopy(self._parameters)

    @property
    def return_direct(self) -> bool:
        """Whether the tool's result ends the response instead of going back to the model."""
        return self._return_direct

    @property
    def requires_approval(self) -> RequiresApproval:
        """Whether a call waits for a person's approval before it runs: True, False, or a
        predicate of the call's arguments (see :meth:`needs_approval`)."""
        return self._requires_approval

    def needs_approval(self, arguments: Mapping[str, Any]) -> bool:
        """Whether a call with ``arguments`` waits for approval: the tool's
        ``requires_approval``, or what its predicate says of them (the model's arguments,
        before they are checked against the schema). What the predicate raises propagates."""
        decide = self._requires_approval
        if decide is True or decide is False:
            return decide
        return bool(decide(arguments))

    @property
    def is_async(self) -> bool:
        """Whether the function is a coroutine function (its calls must be awaited)."""
        return self._is_async

    @property
    def spec(self) -> ToolSpec:
        """The tool as sent in a request: name, description and parameter schema."""
        return self._spec

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        """Call the function directly, exactly as without the decorator."""
        return self._function(*args, **kwargs)

    def __repr__(self) -> str:
        approval = "" if self._requires_approval is False else ", requires_approval=..."
        if self._requires_approval is True:
            approval = ", requires_approval=True"
        return (
            f"Tool(name={self._name!r}, is_async={self._is_async}, "
            f"return_direct={self._return_direct}{approval})"
        )

    def invoke(
        self, arguments: Mapping[str, Any] | None = None, context: ToolContext | None = None
    ) -> Any:
        """Call the function with the arguments a model sent (a JSON object).

        The arguments are checked against the schema and converted to the annotated types
        (enum members, dataclass / attrs / TypedDict / pydantic values, tuples, sets; an
        integer for a float). Unknown, missing or ill-typed arguments raise
        :class:`ToolCallError` (pydantic's messages included); what the function itself raises
        propagates unchanged. An async tool returns its awaitable. A function that asks for a
        :class:`ToolContext` gets ``context`` (one that reports nowhere when None).
        """
        args, kwargs = self._bind(arguments)
        if self._signature.context is not None:
            kwargs[self._signature.context] = context if context is not None else ToolContext()
        return self._function(*args, **kwargs)

    async def ainvoke(
        self, arguments: Mapping[str, Any] | None = None, context: ToolContext | None = None
    ) -> Any:
        """Like :meth:`invoke`, awaiting the result of an async tool."""
        result = self.invoke(arguments, context)
        if inspect.isawaitable(result):
            result = await result
        return result

    @staticmethod
    def format_result(value: Any) -> str:
        """The text sent back to the model for a result: see :func:`format_result`."""
        return format_result(value)

    def _bind(self, arguments: Mapping[str, Any] | None) -> tuple[list[Any], dict[str, Any]]:
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, Mapping):
            raise ToolCallError(
                f"tool {self._name!r}: the arguments must be a JSON object, "
                f"got {json_type(arguments)}",
                tool_name=self._name,
            )
        try:
            kwargs = convert_fields(self._fields, arguments, None)
        except BadValue as error:
            raise ToolCallError(f"tool {self._name!r}: {error}", tool_name=self._name) from None
        for name, default in self._signature.defaults.items():
            if name not in kwargs:
                kwargs[name] = default()
        return self._split_positional(kwargs), kwargs

    def _split_positional(self, kwargs: dict[str, Any]) -> list[Any]:
        """Move positional-only values out of ``kwargs``, filling skipped defaults."""
        positional = self._signature.positional
        given = [i for i, name in enumerate(positional) if name in kwargs]
        if not given:
            return []
        args = []
        for name in positional[: given[-1] + 1]:
            args.append(kwargs.pop(name) if name in kwargs else self._fields[name].default)
        return args


@overload
def tool(function: Callable[P, R], /) -> Tool[P, R]: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    return_direct: bool = False,
    requires_approval: RequiresApproval = False,
) -> Callable[[Callable[P, R]], Tool[P, R]]: ...


def tool(
    function: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    return_direct: bool = False,
    requires_approval: RequiresApproval = False,
) -> Any:
    """Turn a typed, documented function (sync or async) into a :class:`Tool`.

    Use it as ``@tool``, ``@tool()`` or ``@tool(name=..., description=...,
    return_direct=True)``. Every parameter needs a type annotation; one without a default is
    required. Descriptions come from the docstring (Google ``Args:``, reST ``:param x:`` or
    NumPy ``Parameters`` sections) and from ``Annotated[T, "description"]``.

    ``requires_approval=True`` (or a predicate of the call's arguments, say
    ``lambda args: args["amount"] > 100``) makes a call wait for a person's approval: the
    tool loop stops before running it and the response ends with the call pending (see
    :mod:`solon_events.event_model.approvals`).
    """

    def build(target: Callable[..., Any]) -> Tool[..., Any]:
        if isinstance(target, Tool):
            target = target.function
        return Tool(
            target,
            name=name,
            description=description,
            return_direct=return_direct,
            requires_approval=requires_approval,
        )

    if function is None:
        return build
    if not callable(function):
        raise TypeError(
            f"@tool takes a function, not {type(function).__name__}; "
            "pass options by keyword: @tool(name=...)"
        )
    return build(function)


class ToolSet(Mapping[str, Tool[..., Any]]):
    """Tools by name, built from tools, plain functions (wrapped with :func:`tool`) or tool sets.

    Two tools with one name raise ``ValueError``. :meth:`get` of an unknown name raises
    :class:`ToolCallError` listing the known names.
    """

    __slots__ = ("_tools",)

    def __init__(
        self, tools: ToolSet | Iterable[Tool[..., Any] | Callable[..., Any] | ToolSet] = ()
    ) -> None:
        self._tools: dict[str, Tool[..., Any]] = {}
        for item in tools.values() if isinstance(tools, ToolSet) else tools:
            for one in item.values() if isinstance(item, ToolSet) else (item,):
                self._add(one if isinstance(one, Tool) else tool(one))

    def _add(self, item: Tool[..., Any]) -> None:
        if item.name in self._tools:
            raise ValueError(f"duplicate tool name {item.name!r}")
        self._tools[item.name] = item

    def __getitem__(self, name: str) -> Tool[..., Any]:
        return self._tools[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._tools)

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __repr__(self) -> str:
        return f"ToolSet({', '.join(self._tools)})"

    def get(self, name: str, default: Any = MISSING) -> Any:
        """The tool called ``name``; unknown → ``default`` if given, else :class:`ToolCallError`."""
        found = self._tools.get(name)
        if found is not None:
            return found
        if default is not MISSING:
            return default
        known = ", ".join(self._tools) or "(none)"
        raise ToolCallError(f"unknown tool {name!r}; known: {known}", tool_name=name)

    def specs(self) -> tuple[ToolSpec, ...]:
        """The specs of every tool, in the order they were given."""
        return tuple(item.spec for item in self._tools.values())

    def invoke(self, name: str, arguments: Mapping[str, Any] | None = None) -> Any:
        """Look up ``name`` and :meth:`Tool.invoke` it."""
        return self.get(name).invoke(arguments)

    async def ainvoke(self, name: str, arguments: Mapping[str, Any] | None = None) -> Any:
        """Look up ``name`` and :meth:`Tool.ainvoke` it."""
        return await self.get(name).ainvoke(arguments)
