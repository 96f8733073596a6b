"""The event model every layer shares: the events of a response, its results and their
values, the finish vocabulary, the messages sent, steps and pending approvals, the delivery
filter, results as plain JSON, the price of a usage, the errors (and the one an optional
extra's absence raises), and the hooks that show them in Jupyter and IPython. Sans-I/O: none
of it imports asyncio, aiohttp or reactivex.
"""

__all__: list[str] = []
