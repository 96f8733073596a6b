"""The one place secrets are taken out of the text the library produces (sans-I/O).

A :class:`Redactor` is fed every secret a model knows (its API key, the values of its
auth-like headers and the bare token inside ``"Bearer X"``, the key-like query values and
the password of its ``api_url``) and replaces each with ``***`` wherever it appears: in an
error's message, ``args`` and ``provider_error``, in reprs, in a retry's cause. Any run of
eight or more characters of a secret is masked too: a secret cut short by a snippet
(``'sk-live-0123...'``) shows no more of itself than a whole one.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

from .errors import ChatError, ChatHttpError

__all__ = ["MASK", "Redactor", "redact_url"]

_E = TypeVar("_E", bound=BaseException)

MASK = "***"
"""What a secret is replaced with."""

_AUTH_LIKE_HEADER = re.compile(
    r"auth|key|token|secret|password|passwd|credential|signature|cookie|session", re.I
)
_KEY_LIKE_PARAMS = frozenset(
    {
        "key",
        "api_key",
        "apikey",
        "api-key",
        "token",
        "access_token",
        "auth",
        "secret",
        "password",
        "sig",
        "signature",
    }
)
# The shortest run of a secret's characters that is masked where it stands alone.
_FRAGMENT = 8
# How deep :meth:`Redactor.value` follows nested containers (deeper ones are replaced).
_MAX_DEPTH = 64


def redact_url(url: str) -> str:
    """``url`` without its query string, fragment and user info, for messages."""
    try:
        parts = urlsplit(url)
        netloc = parts.hostname or ""
        if parts.port:
            netloc = f"{netloc}:{parts.port}"
    except ValueError:  # not a URL: nothing of it is shown
        return "<an invalid URL>"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


class Redactor:
    """Replaces every secret it was given with :data:`MASK` in text, values and errors."""

    __slots__ = ("_fragments", "_secrets")

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        found = {secret for secret in secrets if secret and secret.strip()}
        # Longest first, so a secret that contains another is masked whole.
        self._secrets: tuple[str, ...] = tuple(sorted(found, key=len, reverse=True))
        self._fragments = frozenset(
            secret[i : i + _FRAGMENT]
            for secret in self._secrets
            for i in range(len(secret) - _FRAGMENT + 1)
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
        auth-like ``headers`` (and the token after an auth scheme), the key-like query
        values and the password of ``api_url``, and the ``extra`` secrets its dialect
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
        """``text`` with every secret, and every run of 8 or more of its characters, masked."""
        if not self._secrets or not text:
            return text
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, MASK)
        return self._mask_fragments(text) if self._fragments else text

    def _mask_fragments(self, text: str) -> str:
        fragments, size = self._fragments, _FRAGMENT
        covered_until = -1
        spans: list[list[int]] = []
        for start in range(len(text) - size + 1):
            if text[start : start + size] in fragments:
                if spans and start <= covered_until:
                    spans[-1][1] = start + size
                else:
                    spans.append([start, start + size])
                covered_until = start + size
        for start, end in reversed(spans):
            text = text[:start] + MASK + text[end:]
        return text

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
        """``error`` itself, every text it carries redacted in place.

        For a ChatError: its message, ``args``, ``provider_error`` and the message, URL and
        headers of an HTTP error. For any exception: its string ``args``. A cause or
        context whose text still shows a secret is dropped from the chain.
        """
        if not self._secrets:
            return error
        error.args = tuple(self.text(a) if isinstance(a, str) else a for a in error.args)
        if isinstance(error, ChatError):
            error.message = self.text(error.message)
            if error.provider_error:
                error.provider_error = self.value(dict(error.provider_error))
        if isinstance(error, ChatHttpError):
            if error.provider_message:
                error.provider_message = self.text(error.provider_message)
            if error.url:
                error.url = self.text(error.url)
            error.headers = {name: self.text(v) for name, v in error.headers.items()}
        for linked in (error.__cause__, error.__context__):
            if linked is not None and self._shows_a_secret(linked):
                error.__cause__ = None
                error.__suppress_context__ = True
        return error

    def _shows_a_secret(self, error: BaseException) -> bool:
        try:
            shown = f"{error!s} {error!r} {error.__cause__!r} {error.__context__!r}"
        except Exception:  # a broken __str__ shows nothing, but proves nothing either
            return True
        return self.text(shown) != shown


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
    """The key-like query values and the user-info password of ``url``, raw and decoded."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return []
    found: list[str] = []
    if password:
        found.extend((password, unquote(password)))
    for name, value in parse_qsl(parts.query, keep_blank_values=False):
        if name.lower() in _KEY_LIKE_PARAMS:
            found.append(value)
    for pair in parts.query.split("&"):  # the raw (still percent-encoded) form too
        name, _, value = pair.partition("=")
        if unquote(name).lower() in _KEY_LIKE_PARAMS and value:
            found.append(value)
    return found
