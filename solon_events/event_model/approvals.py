"""Tool approval (human in the loop): a response paused before the tool calls that wait for
a person's decision, and how it continues.

A tool made with ``@tool(requires_approval=True)`` (or with a predicate of the call's
arguments, ``requires_approval=lambda args: args["amount"] > 100``) never runs on the
model's word alone. When a step calls it, the step's other tools run, then the step ends
with the call pending and so does the response: the STEP_END's and the RESPONSE_END's
response carries a :class:`PendingApproval` (``response.pending_approval``) naming the
calls that wait (``tool_calls``) and holding what it takes to continue: the prompt's
messages and every step so far. It is a plain value: :meth:`PendingApproval.to_json` gives
JSON that :meth:`PendingApproval.from_json` reads back, in another request or process.

``model.prompt(pending)`` continues the response once every pending call is decided:
``.approve(call_id)`` runs the call (``arguments=`` runs it with other arguments),
``.deny(call_id, reason)`` does not run it and tells the model so in the call's tool result
(:func:`denied_text`). The continued response (a response of its own, with its own id)
first finishes the paused step: a STEP_START and a STEP_END with ``sub_type="resumed"``
around the decided calls' TOOL_RESULT events (a denied call's has ``attrs["denied"]``),
then steps on from the next step number. ``stop_when`` conditions and ``max_steps`` count
the steps before the pause too; the continued response's usage counts its own steps.

Front ends name a pending call by :func:`approval_id` (the paused response's id and the
call's id), so that a decision that comes back finds its paused response: the gateway
keeps each pending approval by its response id (in Redis with ``--redis``, so that any
replica continues it) and continues it when a client sends its decisions (the Vercel UI
stream's ``tool-approval-response``, AG-UI's ``resume`` entries; see :mod:`solon_events.serve`).

What runs is what was shown, once. The approver is shown the pending calls
(``tool_calls``: each call's id, name and arguments); a continued response runs a decided
call only when the paused step's call of that id is that very call (same name, same
arguments): a state edited so that another tool or other arguments would run fails the
response (a :class:`~solon_events.ChatError`) before any tool runs. A pending approval
continues once in a process (:data:`CONTINUED`): subscribing again to a continued prompt,
or continuing the same state again, fails the same way. And the state can be made
tamper-evident: ``to_json(key=...)`` signs it (HMAC-SHA256 with a key the application
provides), ``from_json(data, key=...)`` reads only a state signed with that key. HMAC
rather than keeping the state on the server behind an id: a pending approval is a plain
value that travels (to a browser, a queue, another process, Redis), and a signature lets
each holder check it with no shared store; the gateway, which keeps its states in Redis,
signs them, so that writing to that Redis is not enough to run a server tool, and marks
each state continued there, so that it continues once across replicas
(:class:`~solon_events.serve.approval_store.RedisApprovalStore`).
"""

from __future__ import annotations

import hashlib
import hmac
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import attrs
import orjson

from .errors import ChatError
from .messages import Message, SystemMessage, ToolMessage, UserMessage
from .plain import block_from_plain, message_from_plain, response_from_plain, to_plain
from .results import AssistantMessage, ChatResponse, ToolCall, _tuple
from .steps import StepResult, call_key
from .values import FrozenValue

__all__ = [
    "CONTINUED",
    "ApprovalDecision",
    "ContinuedApprovals",
    "PendingApproval",
    "approval_id",
    "denied_text",
    "parse_approval_id",
    "signed",
    "verified",
]

_FORMAT = 1
"""The version of :meth:`PendingApproval.to_json`'s layout."""


def approval_id(response_id: str, call_id: str) -> str:
    """The id a front end names a pending call by: ``"<response id>:<call id>"``."""
    return f"{response_id}:{call_id}"


def parse_approval_id(value: str) -> tuple[str, str]:
    """The response id and call id of an :func:`approval_id`; ``ValueError`` when ``value``
    is not one."""
    if not isinstance(value, str):
        raise ValueError(f"an approval id is a string, not {type(value).__name__}")
    response_id, colon, call_id = value.partition(":")
    if not (response_id and colon and call_id):
        raise ValueError(f"{value!r} is not an approval id ('<response id>:<call id>')")
    return response_id, call_id


def denied_text(reason: str | None = None) -> str:
    """The tool result a denied call sends the model."""
    if reason:
        return f"The tool call was denied and did not run. Reason: {reason}"
    return "The tool call was denied and did not run."


@attrs.frozen(kw_only=True)
class ApprovalDecision(FrozenValue):
    """What was decided for one pending call: ``approved`` (with ``arguments`` to run it
    with instead of the model's, or None) or denied (with an optional ``reason``)."""

    approved: bool
    reason: str | None = None
    arguments: Mapping[str, Any] | None = None


@attrs.frozen(kw_only=True)
class PendingApproval(FrozenValue):
    """A response paused until tool calls are approved or denied.

    ``tool_calls`` are the calls that wait (each named by its ``id``), ``steps`` every step
    so far (the paused one last, its ``tool_results`` those of its calls that ran),
    ``messages`` the prompt's messages and ``response_id`` the paused response's id.
    Continue it with ``model.prompt(pending).approve(...)/.deny(...)``; keep it with
    :meth:`to_json`.
    """

    response_id: str
    messages: tuple[Message, ...] = attrs.field(converter=_tuple)
    steps: tuple[StepResult, ...] = attrs.field(converter=_tuple)
    tool_calls: tuple[ToolCall, ...] = attrs.field(converter=_tuple)

    @property
    def step(self) -> int:
        """The number of the paused step."""
        return self.steps[-1].step if self.steps else 0

    def approval_id(self, call_id: str) -> str:
        """The :func:`approval_id` of the pending call ``call_id``."""
        return approval_id(self.response_id, call_id)

    def to_json(self, key: bytes | str | None = None) -> dict[str, Any]:
        """This value as plain JSON data (objects, arrays, strings, numbers, booleans);
        given a ``key``, signed with it (:func:`signed`): :meth:`from_json` with the same
        key then reads it only as it was written."""
        data = {
            "format": _FORMAT,
            "response_id": self.response_id,
            "messages": [message_to_json(m) for m in self.messages],
            "steps": [
                {
                    "step": s.step,
                    "response": to_plain(s.response),
                    "tool_results": [message_to_json(m) for m in s.tool_results],
                }
                for s in self.steps
            ],
            "tool_calls": [to_plain(call) for call in self.tool_calls],
        }
        return data if key is None else signed(data, key)

    @classmethod
    def from_json(cls, data: Any, key: bytes | str | None = None) -> PendingApproval:
        """The value :meth:`to_json` described; ``ValueError`` for anything else, and,
        given a ``key``, for a state not signed with it (:func:`verified`: edited, or
        signed with another key)."""
        if key is not None:
            data = verified(data, key)
        if not isinstance(data, Mapping) or data.get("format") != _FORMAT:
            raise ValueError("not a pending approval (PendingApproval.to_json)")
        try:
            return cls(
                response_id=str(data["response_id"]),
                messages=[message_from_json(m) for m in data["messages"]],
                steps=[
                    StepResult(
                        step=int(s["step"]),
                        response=response_from_json(s["response"]) or ChatResponse(),
                        tool_results=tuple(_tool_message(m) for m in s["tool_results"]),
                    )
                    for s in data["steps"]
                ],
                tool_calls=[ToolCall(**call) for call in data["tool_calls"]],
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not a pending approval: {type(exc).__name__}: {exc}") from None

    def __repr__(self) -> str:
        calls = ", ".join(f"{c.name}#{c.id}" for c in self.tool_calls)
        return f"PendingApproval({self.response_id}, step={self.step}, tool_calls=[{calls}])"

    def check_continuation(self) -> None:
        """Raise :class:`~solon_events.ChatError` unless what a continuation would run is
        what the approver was shown: each pending call (``tool_calls``) is a call of the
        paused step with the same id, name and arguments."""
        paused = self.steps[-1] if self.steps else None
        calls = paused.response.tool_calls if paused is not None else ()
        step = self.step
        by_key = {call_key(c, step): c for c in calls}
        for shown in self.tool_calls:
            runs = by_key.get(shown.id or "")
            if runs is None or (runs.name, runs.arguments, runs.arguments_str) != (
                shown.name,
                shown.arguments,
                shown.arguments_str,
            ):
                raise ChatError(
                    f"the paused response {self.response_id} would not run the call "
                    f"{shown.id!r} it shows for approval ({shown.name!r} with the arguments "
                    "shown): its state was edited; nothing runs"
                )


class ContinuedApprovals:
    """The paused responses continued in this process (by response id), each once: a
    continuation claims its pending approval (:meth:`claim`) before any tool runs. Keeps
    the ``max_entries`` latest (the oldest are forgotten)."""

    def __init__(self, max_entries: int = 100_000) -> None:
        self.max_entries = max_entries
        self._lock = threading.Lock()
        self._seen: OrderedDict[str, None] = OrderedDict()

    def claim(self, response_id: str) -> bool:
        """True the first time ``response_id`` is claimed, False after."""
        with self._lock:
            if response_id in self._seen:
                return False
            self._seen[response_id] = None
            while len(self._seen) > self.max_entries:
                self._seen.popitem(last=False)
            return True

    def __contains__(self, response_id: object) -> bool:
        return response_id in self._seen


CONTINUED = ContinuedApprovals()
"""Every paused response continued in this process: a pending approval continues once
(``model.prompt(pending)`` subscribed again, or the same state read again, fails)."""

_SIGNATURE = "signature"
_SCHEME = "hmac-sha256:"


def _key_bytes(key: bytes | str) -> bytes:
    raw = key.encode() if isinstance(key, str) else bytes(key)
    if len(raw) < 16:
        raise ValueError("a signing key has at least 16 bytes")
    return raw


def _digest(data: Mapping[str, Any], key: bytes | str) -> str:
    body = orjson.dumps(
        {k: v for k, v in data.items() if k != _SIGNATURE}, option=orjson.OPT_SORT_KEYS
    )
    return _SCHEME + hmac.new(_key_bytes(key), body, hashlib.sha256).hexdigest()


def signed(data: Mapping[str, Any], key: bytes | str) -> dict[str, Any]:
    """``data`` (a JSON object) with its ``"signature"``: an HMAC-SHA256, with ``key`` (at
    least 16 bytes, the application's own secret), of its canonical JSON (keys sorted)."""
    return {**data, _SIGNATURE: _digest(data, key)}


def verified(data: Any, key: bytes | str) -> dict[str, Any]:
    """``data`` without its signature, once it is checked to be :func:`signed` with
    ``key``; ``ValueError`` when it is not (unsigned, edited, or signed with another key)."""
    if not isinstance(data, Mapping) or not isinstance(data.get(_SIGNATURE), str):
        raise ValueError("not a signed state: it has no signature")
    if not hmac.compare_digest(data[_SIGNATURE], _digest(data, key)):
        raise ValueError("the state's signature does not match: edited, or signed with another key")
    return {k: v for k, v in data.items() if k != _SIGNATURE}


_ROLES: dict[type, str] = {
    SystemMessage: "system",
    UserMessage: "user",
    AssistantMessage: "assistant",
    ToolMessage: "tool",
}


def message_to_json(message: Message) -> dict[str, Any]:
    """A message as plain JSON data tagged with its ``role``."""
    role = _ROLES.get(type(message))
    if role is None:
        raise TypeError(f"not a message: {type(message).__name__}")
    data = to_plain(message)
    for field in attrs.fields(type(message)):  # to_plain leaves out empty values
        if field.default is attrs.NOTHING:
            data[field.name] = getattr(message, field.name)
    return {"role": role, **data}


def message_from_json(data: Any) -> Message:
    """The message :func:`message_to_json` wrote."""
    if not isinstance(data, Mapping):
        raise ValueError(f"a message is a JSON object, not {type(data).__name__}")
    fields = dict(data)
    role = fields.pop("role", None)
    if role == "system":
        return SystemMessage(**fields)
    if role == "user":
        fields["blocks"] = [block_from_plain(b) for b in fields.get("blocks", ())]
        return UserMessage(**fields)
    if role == "assistant":
        message = message_from_plain(fields)
        assert message is not None
        return message
    if role == "tool":
        return ToolMessage(**fields)
    raise ValueError(f"unknown message role {role!r}")


def response_from_json(data: Any) -> ChatResponse | None:
    """The response :func:`~solon_events.event_model.plain.to_plain` wrote, its pending approval
    included (None for None)."""
    if data is None:
        return None
    pending = data.get("pending_approval")
    return response_from_plain(data, PendingApproval.from_json(pending) if pending else None)


def _tool_message(data: Any) -> ToolMessage:
    message = message_from_json(data)
    if not isinstance(message, ToolMessage):
        raise ValueError(f"a step's tool result is a tool message, not a {type(message).__name__}")
    return message
