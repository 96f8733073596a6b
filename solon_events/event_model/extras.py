"""The optional extras, and the error a feature raises when its extra is not installed.

The core needs only its own dependencies; each feature beyond it imports its extra's
package on first use (``tools``: pydantic; ``mcp``: the MCP SDK; ``agui``:
ag-ui-protocol; ``redis``; ``otel``: the OpenTelemetry API; ``notebook``: matplotlib;
``structured``: jsonschema and cattrs; ``bedrock``: botocore; ``uvloop``; ``cost``:
genai-prices; ``tiktoken``; ``toml``: tomli, the gateway's configuration on Python 3.10;
``metrics``: prometheus-client, the gateway's ``/metrics``). Without it the feature raises
:class:`MissingExtraError`, whose message names what to install, and the gateway answers
501 with that message.
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["MissingExtraError", "install_hint", "require"]


def install_hint(extra: str) -> str:
    """What to run to install ``extra``: ``pip install 'solon-events[extra]'`` (which, with
    solon-events already installed, from a checkout too, adds only the extra's packages)."""
    return f"pip install 'solon-events[{extra}]'"


class MissingExtraError(ImportError):
    """A feature needs a package of an optional extra that is not installed.

    ``extra`` is the extra's name; the message says which feature needs which package and
    what to run (:func:`install_hint`).
    """

    def __init__(self, feature: str, package: str, extra: str) -> None:
        super().__init__(f"{feature} needs {package}: {install_hint(extra)}", name=package)
        self.extra = extra


def require(module: str, *, feature: str, extra: str, package: str | None = None) -> ModuleType:
    """``module`` imported, or :class:`MissingExtraError` when its package is not installed
    (``package``: its name on PyPI, when it differs from the module's top name).

    An installed package that fails to import raises its own error.
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as error:
        top = module.split(".", 1)[0]
        if error.name is None or error.name.split(".", 1)[0] != top:
            raise
        raise MissingExtraError(feature, package or top, extra) from None
