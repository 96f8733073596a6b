"""What the layers above the event model share: the redaction of secrets in the texts the
library writes, the private event-loop thread, and the guard around user callbacks.
"""

__all__: list[str] = []
