"""What the layers above the event model share: the redaction of secrets in the texts the
library writes, the private event-loop thread, the guard around user callbacks, one client
per event loop, and the closing of wrapped async iterators.
"""

__all__: list[str] = []
