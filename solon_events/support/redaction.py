"""The one place secrets are taken out of the text the library produces (sans-I/O).

A :class:`Redactor` is fed every secret a model knows (its API key, the values of its
auth-like headers and the bare token inside ``"Bearer X"``, the user info of its ``api_url``
and the values of its query parameters whose name says key, token, secret, password, auth,
signature, code, credential or session) and replaces each with ``***`` wherever it appears:
in an error's message, ``args``, notes and ``provider_error`` (and those of every exception
of its cause and context chain), in reprs, in a retry's cause, in telemetry and in
recordings. It masks more than the secret as given:

- any run of 8 or more of its characters: a secret cut short by a snippet
  (``'sk-live-0123...'``) shows no more of itself than a whole one;
- its encoded forms, computed once when the redactor is made: base64 and base64url (also
  inside a longer encoded text such as a Basic credential), %-encoding (of its reserved
  characters, or of every one of its characters), JSON escapes and ``\\uXXXX`` escapes;
  and any of them with its ASCII letters in another case (an error message that lowercases
  what it quotes).

A value shorter than :data:`MIN_SECRET_LENGTH` (8) characters is never masked: it is too
short to be a credential worth the name, and masking it would mangle the text it occurs in
(an ``api_key="1"`` would turn ``127.0.0.1`` into ``***27.0.0.***``).

:func:`redact_url` is how a URL is shown in any text: its user info and the value of every
query parameter masked, whatever the parameter's name, and any path segment that has the
shape of a well-known provider key (:func:`mask_key_shaped`): a key can sit in a path
when no ``api_key`` was given. Defence in depth the same way, a response header whose
*name* is a secret or has a key's shape is masked in a :class:`~solon_events.ChatHttpError`,
and an exception-group member whose ``str()`` still shows a secret is shown redacted.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, TypeVar
from urllib.parse import parse_qsl, quote, quote_plus, unquote, urlsplit, urlunsplit

import orjson

from ..event_model.errors import ChatError, ChatHttpError

__all__ = ["KEY_SHAPE", "MASK", "MIN_SECRET_LENGTH", "Redactor", "mask_key_shaped", "redact_url"]

_E = TypeVar("_E", bound=BaseException)

MASK = "***"
"""What a secret is replaced with."""

MIN_SECRET_LENGTH = 8
"""The length under which a value is not masked (too short to be a credential; masking it
would mangle ordinary text)."""

_AUTH_LIKE_HEADER = re.compile(
    r"auth|key|token|secret|password|passwd|credential|signature|cookie|session", re.I
)
_SECRET_PARAM = re.compile(r"key|token|secret|passw|auth|sig|code|credential|session", re.I)

KEY_SHAPE = re.compile(
    r"(?<![A-Za-z0-9])(?:"
    r"(?:sk-|xai-|gsk_|hf_|pplx-|r8_|nvapi-|csk-|fw_|ghp_|gho_|github_pat_|glpat-|xox[abpr]-)"
    r"[A-Za-z0-9_\-]{16,}"
    r"|AIza[A-Za-z0-9_\-]{30,}"
    r"|AKIA[0-9A-Z]{16}"
    r")"
)
"""The shape of the well-known provider keys: OpenAI's and Anthropic's ``sk-`` (``sk-ant-``,
``sk-proj-``, DeepSeek's and OpenRouter's too), Google's ``AIza``, xAI's ``xai-``, Groq's
``gsk_``, Hugging Face's ``hf_``, Perplexity's ``pplx-``, Replicate's ``r8_``, NVIDIA's
``nvapi-``, Cerebras' ``csk-``, Fireworks' ``fw_``, GitHub's, GitLab's and Slack's tokens and
AWS access key ids, each with its tail of key characters."""
# How many characters of each form of a secret make a masked run: 8 of the secret itself
# (also %-encoded or JSON-escaped), 10 of base64 (60 bits: 7.5 characters' worth), 48 of
# \uXXXX escapes (8 characters).
_RUN = MIN_SECRET_LENGTH
_BASE64_RUN = 10
_UNICODE_ESCAPE_RUN = 6 * MIN_SECRET_LENGTH
# How deep :meth:`Redactor.value` follows nested containers (deeper ones are replaced).
_MAX_DEPTH = 64
# ASCII letters to lower case, every other character kept (the text keeps its length, so
# that what is found in the lowered copy is masked at the same place in the text).
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def redact_url(url: str) -> str:
    """``url`` as any text the library produces shows it: its user info and the value of
    every query parameter masked (the parameters' names kept), its fragment left out.

    >>> redact_url("https://user:pw@example.com/v1?api-version=2024-10-21&key=abc#top")
    'https://***@example.com/v1?api-version=***&key=***'
    """
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:  # not a URL: nothing of it is shown
        return "<an invalid URL>"
    netloc = f"[{host}]" if ":" in host else host
    if port is not None:
        netloc = f"{netloc}:{port}"
    if "@" in parts.netloc:
        netloc = f"{MASK}@{netloc}"
    query = "&".join(_masked_parameter(pair) for pair in parts.query.split("&") if pair)
    return urlunsplit((parts.scheme, netloc, mask_key_shaped(parts.path), query, ""))


def mask_key_shaped(text: str) -> str:
    """``text`` with every run that has the shape of a well-known provider key
    (:data:`KEY_SHAPE`) masked: for the places a key may sit unannounced (a URL's path, a
    header's name), whoever's it is.

    >>> mask_key_shaped("/v1/sk-proj-0123456789abcdefABCD/chat")
    '/v1/***/chat'
    """
    return KEY_SHAPE.sub(MASK, text) if text else text


def _masked_parameter(pair: str) -> str:
    name, equals, _value = pair.partition("=")
    return f"{name}={MASK}" if equals else MASK


class Redactor:
    """Replaces every secret it was given (and its encoded forms, and any run of 8 of their
    characters) with :data:`MASK` in text, values and errors. Values shorter than
    :data:`MIN_SECRET_LENGTH` are ignored."""

    __slots__ = ("_runs", "_secrets")

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        found = {
            secret
            for secret in secrets
            if isinstance(secret, str) and len(secret.strip()) >= MIN_SECRET_LENGTH
        }
        # Longest first, so a secret that contains another is masked whole.
        self._secrets: tuple[str, ...] = tuple(sorted(found, key=len, reverse=True))
        runs: dict[int, set[str]] = {}
        for secret in self._secrets:
            for form, size in _forms(secret):
                lowered = form.translate(_ASCII_LOWER)
                runs.setdefault(size, set()).update(
                    lowered[i : i + size] for i in range(len(lowered) - size + 1)
                )
        # (run length, every run of that length of every form, in lower case)
        self._runs: tuple[tuple[int, frozenset[str]], ...] = tuple(
            (size, frozenset(found_runs)) for size, found_runs in sorted(runs.items())
        )

    @classmethod
    def for_request(
        cls,
        *,
        api_key: str | None = None,
        headers: Mapping[str, str] | None = None,
        api_url: str | None = None,
        extra: Iterable[str] = (),
    ) -> Redactor:
        """A redactor of every secret in a model's settings: ``api_key``, the values of
        auth-like ``headers`` (and the token after an auth scheme), the user info and the
        secret-like query values of ``api_url``, and the ``extra`` secrets its dialect
        names (e.g. the AWS credentials Bedrock signs with)."""
        secrets: list[str] = [api_key or "", *extra]
        for name, value in (headers or {}).items():
            if _AUTH_LIKE_HEADER.search(name):
                secrets.extend(_header_secrets(value))
        if api_url:
            secrets.extend(_url_secrets(api_url))
        return cls(secrets)

    @property
    def secrets(self) -> int:
        """How many secrets it masks (never the secrets themselves)."""
        return len(self._secrets)

    def __repr__(self) -> str:
        return f"<Redactor of {len(self._secrets)} secrets>"

    def __bool__(self) -> bool:
        return bool(self._secrets)

    def text(self, text: str) -> str:
        """``text`` with every secret, every encoded form of one, and every run of their
        characters (8 of a secret, 10 of its base64, 48 of its ``\\u`` escapes), in any
        letter case, masked."""
        if not self._secrets or not text:
            return text
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, MASK)
        return self._mask_runs(text)

    def _mask_runs(self, text: str) -> str:
        lowered = text.translate(_ASCII_LOWER)
        spans: list[tuple[int, int]] = []
        for size, runs in self._runs:
            spans.extend(
                (start, start + size)
                for start in range(len(lowered) - size + 1)
                if lowered[start : start + size] in runs
            )
        if not spans:
            return text
        spans.sort()
        pieces: list[str] = []
        shown_from = 0  # where the text not yet masked starts
        masked_until = -1
        for start, end in spans:
            if start > masked_until:  # a new masked span (apart from the previous one)
                pieces += [text[shown_from:start], MASK]
            masked_until = shown_from = max(masked_until, end)
        pieces.append(text[shown_from:])
        return "".join(pieces)

    def value(self, value: Any, _depth: int = 0) -> Any:
        """A JSON-like ``value`` with every string (keys included) redacted; containers
        nested deeper than 64 levels are replaced by ``"..."``."""
        if not self._secrets:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            if _depth >= _MAX_DEPTH:
                return "..."
            return {
                self.text(str(key)): self.value(item, _depth + 1) for key, item in value.items()
            }
        if isinstance(value, (list, tuple)):
            if _depth >= _MAX_DEPTH:
                return "..."
            return [self.value(item, _depth + 1) for item in value]
        return value

    def error(self, error: _E) -> _E:
        """``error`` itself, every text it carries redacted in place, and so every exception
        of its chain (causes and contexts, each once however the chain loops).

        For a ChatError: its message, ``args``, ``provider_error`` and the message, URL and
        headers of an HTTP error. For any exception: its string ``args`` and notes. An
        exception of the chain whose text still shows a secret (a ``__str__`` of its own)
        is cut from the chain, with what is behind it.
        """
        if not self._secrets:
            return error
        self._redact_in_place(error)
        seen = {id(error)}
        pending: list[BaseException] = [error]
        while pending:
            current = pending.pop()
            for linked in _linked(current):
                if id(linked) in seen:
                    continue
                seen.add(id(linked))
                self._redact_in_place(linked)
                if self._shows_a_secret(linked):
                    if not _unlink(current, linked):  # a group's member: shown redacted
                        self._show_redacted(linked)
                else:
                    pending.append(linked)
        return error

    def _show_redacted(self, error: BaseException) -> None:
        """Make ``error`` (which cannot be cut from its chain: an exception group's member)
        show only redacted text: its ``str()`` and ``repr()`` are the redacted forms of
        what they were, through a subclass of its class (``isinstance`` still holds)."""
        try:
            shown = (self.text(str(error)), self.text(repr(error)))
        except Exception:  # a broken __str__: nothing of it is shown
            shown = (MASK, f"{type(error).__name__}({MASK!r})")
        try:
            error.__class__ = _redacted_class(type(error))
            error.__dict__["_solon_shown"] = shown
        except (TypeError, AttributeError):  # a class that takes no other: its args are masked
            pass

    def _redact_in_place(self, error: BaseException) -> None:
        error.args = tuple(self.text(a) if isinstance(a, str) else a for a in error.args)
        members = getattr(error, "exceptions", None)
        if isinstance(members, tuple):  # a group's repr shows its members' reprs
            for member in members:
                if isinstance(member, BaseException):
                    self._redact_in_place(member)
        notes = getattr(error, "__notes__", None)
        if isinstance(notes, list):
            notes[:] = [self.text(n) if isinstance(n, str) else n for n in notes]
        if isinstance(error, ChatError):
            error.message = self.text(error.message)
            if error.provider_error:
                error.provider_error = self.value(dict(error.provider_error))
        if isinstance(error, ChatHttpError):
            if error.provider_message:
                error.provider_message = self.text(error.provider_message)
            if error.url:
                error.url = self.text(error.url)
            error.headers = {
                mask_key_shaped(self.text(name)): self.text(v) for name, v in error.headers.items()
            }

    def _shows_a_secret(self, error: BaseException) -> bool:
        try:
            shown = f"{error!s} {error!r} {getattr(error, '__notes__', '')!r}"
        except Exception:  # a broken __str__ shows nothing, but proves nothing either
            return True
        return self.text(shown) != shown


def _linked(error: BaseException) -> list[BaseException]:
    """The exceptions ``error`` links to: its cause, its context and, for an exception
    group, its members."""
    linked = [e for e in (error.__cause__, error.__context__) if e is not None]
    members = getattr(error, "exceptions", None)
    if isinstance(members, tuple):
        linked += [e for e in members if isinstance(e, BaseException)]
    return linked


def _unlink(error: BaseException, linked: BaseException) -> bool:
    """Cut ``linked`` (the cause or the context of ``error``) from the chain: whether it
    was (a group's member cannot be taken out)."""
    suppress = error.__suppress_context__
    cut = False
    if error.__cause__ is linked:
        error.__cause__ = None
        error.__suppress_context__ = suppress
        cut = True
    if error.__context__ is linked:
        error.__context__ = None
        cut = True
    return cut


_REDACTED_CLASSES: dict[type[BaseException], type[BaseException]] = {}


def _redacted_class(cls: type[BaseException]) -> type[BaseException]:
    """A subclass of ``cls`` whose ``str()`` and ``repr()`` are the redacted texts an
    instance holds (made once per class)."""
    made = _REDACTED_CLASSES.get(cls)
    if made is None:

        def __str__(self: BaseException) -> str:
            return str(self.__dict__["_solon_shown"][0])

        def __repr__(self: BaseException) -> str:
            return str(self.__dict__["_solon_shown"][1])

        made = type(
            cls.__name__,
            (cls,),
            {
                "__str__": __str__,
                "__repr__": __repr__,
                "__module__": cls.__module__,
                "__qualname__": cls.__qualname__,
            },
        )
        _REDACTED_CLASSES[cls] = made
    return made


def _forms(secret: str) -> Iterator[tuple[str, int]]:
    """Each form ``secret`` may be written in, with the length of the runs of it masked."""
    yield secret, _RUN
    escaped = orjson.dumps(secret).decode()[1:-1]
    written = {
        quote(secret, safe=""),
        quote(secret, safe="/"),
        quote_plus(secret, safe=""),
        escaped,
        escaped.replace("/", "\\/"),
    }
    for form in written - {secret}:
        yield form, _RUN
    # every character %-encoded (a quoting that leaves nothing as it was): 8 characters' worth
    yield "".join(f"%{byte:02x}" for byte in secret.encode("utf-8")), 3 * _RUN
    units = secret.encode("utf-16-be")
    yield (
        "".join(f"\\u{units[i]:02x}{units[i + 1]:02x}" for i in range(0, len(units), 2)),
        _UNICODE_ESCAPE_RUN,
    )
    raw = secret.encode("utf-8")
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        for offset in range(3):  # where the secret starts in a group of 3 bytes
            encoded = encode(bytes(offset) + raw).decode("ascii")
            # only the characters made of the secret's bits alone
            yield encoded[-(-8 * offset // 6) : 8 * (offset + len(raw)) // 6], _BASE64_RUN


def _header_secrets(value: str) -> list[str]:
    """A header value, the token after its auth scheme, and Basic credentials decoded."""
    found = [value]
    scheme, _, token = value.strip().partition(" ")
    token = token.strip()
    if token:
        found.append(token)
        if scheme.lower() == "basic":
            found.extend(_basic_credentials(token))
    return found


def _basic_credentials(token: str) -> list[str]:
    try:
        decoded = base64.b64decode(token, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return []
    _user, _, password = decoded.partition(":")
    return [decoded, password]


def _url_secrets(url: str) -> list[str]:
    """The user info and the secret-like query values of ``url``, raw and decoded."""
    try:
        parts = urlsplit(url)
        user, password = parts.username, parts.password
    except ValueError:
        return []
    found: list[str] = []
    for part in (user, password):
        if part:
            found.extend((part, unquote(part)))
    for name, value in parse_qsl(parts.query, keep_blank_values=False):
        if _SECRET_PARAM.search(name):
            found.append(value)
    for pair in parts.query.split("&"):  # the raw (still percent-encoded) form too
        name, _, value = pair.partition("=")
        if value and _SECRET_PARAM.search(unquote(name)):
            found.append(value)
    return found
