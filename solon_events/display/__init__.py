"""Jupyter: rich displays, the live view and the timeline picture.

- ``ChatResponse``, ``Usage``, ``ToolCall`` and ``ChatEvent`` show themselves as HTML in a
  notebook and as short text in IPython's terminal; :func:`event_table` does the same for
  a list of events.
- :func:`live`: a pipeable operator that renders a stream in place as it arrives.
- :func:`timeline`: a picture of one response (``pip install 'solon-events[notebook]'``).

Nothing here is imported by the event model until a display is asked for; reactivex,
IPython and matplotlib are imported only when used.
"""

from .live import LiveState, live
from .table import EventTable, event_table
from .timeline import Timeline, timeline

__all__ = ["EventTable", "LiveState", "Timeline", "event_table", "live", "timeline"]
