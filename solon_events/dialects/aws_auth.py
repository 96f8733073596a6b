"""AWS Signature Version 4 for the Bedrock dialect, through botocore (the ``bedrock`` extra).

botocore is imported lazily, on the first signed request: without it, signing fails with a
:class:`~solon_events.ChatError` saying ``pip install 'solon-events[bedrock]'``. Credentials
come from botocore's standard chain (environment variables, the shared config and
credentials files and their profiles, SSO, container and instance roles); the region from
the endpoint's host name (``bedrock-runtime.<region>.amazonaws.com``), else from the same
chain (``AWS_REGION``, the profile), else ``us-east-1``.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import re
import threading
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit

from ..event_model.errors import ChatError

__all__ = ["SIGNING_NAME", "credential_secrets", "region_of", "sign"]

SIGNING_NAME = "bedrock"
"""The service name Bedrock's runtime endpoints are signed for."""

# Headers left out of the signature: botocore logs the canonical request (each signed
# header's value) at DEBUG level, and a secret must never reach a log line.
_UNSIGNED = re.compile(r"auth|key|token|secret|password|passwd|credential|cookie|session", re.I)
_REGION_IN_HOST = re.compile(r"^bedrock-runtime(?:-fips)?\.([a-z0-9-]+)\.amazonaws\.com")
_MISSING = (
    "signing Bedrock requests with AWS credentials needs botocore: "
    "pip install 'solon-events[bedrock]' (or pass api_key=<a Bedrock API key>)"
)


class _WhileSigning(logging.Filter):
    """Drops the records of the thread that is signing (see :func:`_unlogged`)."""

    def __init__(self) -> None:
        super().__init__()
        self.signing = threading.local()

    def filter(self, record: logging.LogRecord) -> bool:
        return not getattr(self.signing, "active", False)


_SIGNER_LOGGER = "botocore.auth"
_silencer = _WhileSigning()


@contextlib.contextmanager
def _unlogged() -> Iterator[None]:
    """botocore's signer logs nothing from this thread while the block runs."""
    logger = logging.getLogger(_SIGNER_LOGGER)
    if _silencer not in logger.filters:
        logger.addFilter(_silencer)
    _silencer.signing.active = True
    try:
        yield
    finally:
        _silencer.signing.active = False


@functools.lru_cache(maxsize=1)
def _session() -> Any:
    """One botocore session per process: it reads the configuration once and refreshes
    temporary credentials itself."""
    try:
        import botocore.session
    except ImportError as exc:
        raise ChatError(_MISSING) from exc
    return botocore.session.Session()


def _frozen_credentials() -> Any:
    credentials = _session().get_credentials()
    if credentials is None:
        raise ChatError(
            "no AWS credentials found for Bedrock: pass api_key=<a Bedrock API key>, or "
            "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE or another "
            "source of botocore's credential chain"
        )
    return credentials.get_frozen_credentials()


def credential_secrets() -> list[str]:
    """The parts of the current AWS credentials that must never be shown (access key id,
    secret key, session token); none when botocore or the credentials are missing."""
    try:
        frozen = _frozen_credentials()
    except ChatError:
        return []
    return [part for part in (frozen.access_key, frozen.secret_key, frozen.token) if part]


def region_of(url: str) -> str:
    """The region a Bedrock endpoint is in: from its host name, else botocore's config,
    else ``us-east-1``."""
    host = urlsplit(url).hostname or ""
    found = _REGION_IN_HOST.match(host)
    if found:
        return found.group(1)
    region = _session().get_config_variable("region")
    return region if isinstance(region, str) and region else "us-east-1"


def sign(url: str, body: bytes, headers: Mapping[str, str]) -> dict[str, str]:
    """``headers`` with the SigV4 headers for a POST of ``body`` to ``url`` added
    (``Authorization``, ``X-Amz-Date`` and, for temporary credentials,
    ``X-Amz-Security-Token``). Auth-like headers are sent unsigned; botocore's signer logs
    nothing while it signs."""
    frozen = _frozen_credentials()  # fails with the pip advice when botocore is missing
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest

    signed = {name: value for name, value in headers.items() if not _UNSIGNED.search(name)}
    request = AWSRequest(method="POST", url=url, data=body, headers=signed)
    signer = SigV4Auth(frozen, SIGNING_NAME, region_of(url))
    with _unlogged():
        signer.add_auth(request)
    return {**headers, **{name: str(value) for name, value in request.headers.items()}}
