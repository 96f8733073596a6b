"""The modules that moved, still importable from their old names for one release.

The package's layout names the stages of the flow (``wire/``, ``client/``, ``serve/``,
``display/``, ...; see the Architecture page). A module that moved there keeps its old
import path until the next release: importing the old name gives the very module at the new
one (``solon_events.sse is solon_events.wire.sse``) and warns with a
:class:`DeprecationWarning` naming the new path. :func:`install` (run by the package's
``__init__``) puts the finder that does it on :data:`sys.meta_path`. The only files at the
old paths are stubs (``model.pyi``: ``from solon_events.client.model import *``), so that
type checkers, which do not run the finder, see the old names too.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from collections.abc import Sequence
from types import FrameType, ModuleType

__all__ = ["MOVED", "install"]

MOVED: dict[str, str] = {
    "solon_events.sse": "solon_events.wire.sse",
    "solon_events.eventstream": "solon_events.wire.eventstream",
    "solon_events.model": "solon_events.client.model",
    "solon_events.tool_loop": "solon_events.client.tool_loop",
    "solon_events.stream_reader": "solon_events.client.stream_reader",
    "solon_events.transport": "solon_events.client.transport",
    "solon_events.retry": "solon_events.client.retry",
    "solon_events.resume": "solon_events.serve.resume",
    "solon_events.redis_log": "solon_events.serve.redis_log",
    "solon_events.approval_store": "solon_events.serve.approval_store",
    "solon_events.serve_cli": "solon_events.cli.serve",
    "solon_events.render": "solon_events.display.render",
    "solon_events.core.tool_calls": "solon_events.dialects.tool_calls",
    "solon_events.core.json_path": "solon_events.dialects.json_path",
    "solon_events.events": "solon_events.event_model.events",
    "solon_events.results": "solon_events.event_model.results",
    "solon_events.values": "solon_events.event_model.values",
    "solon_events.messages": "solon_events.event_model.messages",
    "solon_events.steps": "solon_events.event_model.steps",
    "solon_events.errors": "solon_events.event_model.errors",
    "solon_events.finish": "solon_events.event_model.finish",
    "solon_events.filters": "solon_events.event_model.filters",
    "solon_events.plain": "solon_events.event_model.plain",
    "solon_events.approvals": "solon_events.event_model.approvals",
    "solon_events.pricing": "solon_events.event_model.pricing",
    "solon_events.display_hooks": "solon_events.event_model.display_hooks",
    "solon_events.redaction": "solon_events.support.redaction",
    "solon_events.loop_thread": "solon_events.support.loop_thread",
    "solon_events.extras": "solon_events.event_model.extras",
    "solon_events._safe_callbacks": "solon_events.support.safe_callbacks",
    "solon_events.estimate": "solon_events.client.estimate",
    "solon_events.smoothing": "solon_events.operators.smoothing",
}
"""Each old module name and the name it moved to."""


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old name of :data:`MOVED`; loads it as the module at its new name."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        new = MOVED[spec.name]
        warnings.warn(
            f"{spec.name} moved to {new}; import it from there "
            "(the old name goes in the next release)",
            DeprecationWarning,
            stacklevel=_caller_level(),
        )
        return importlib.import_module(new)

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the module at the new name is already loaded."""


def _caller_level() -> int:
    """The ``stacklevel`` of the first frame outside the import machinery and this module,
    so that the warning names the line that imported the old name. :func:`warnings.warn`
    does not count the import system's own frames, so neither does this."""
    frame = sys._getframe(1)
    level = 1
    while frame.f_back is not None and (
        _import_system(frame) or frame.f_globals.get("__name__") in (__name__, "importlib")
    ):
        frame = frame.f_back
        if not _import_system(frame):
            level += 1
    return level


def _import_system(frame: FrameType) -> bool:
    filename = frame.f_code.co_filename
    return "importlib" in filename and "_bootstrap" in filename


_FINDER = _MovedModules()


def install() -> None:
    """Put the finder of the old names first on :data:`sys.meta_path` (once): an old name
    is the moved module even where a stale file of that name is left on the path."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
