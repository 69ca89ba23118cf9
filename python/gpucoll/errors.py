"""Exceptions of the Python package: the Java API's exceptions under Python names, carrying the same
words (the executor's message is passed through unchanged)."""


class CollectiveError(RuntimeError):
    """A collective failed (``dev.gpucoll.api.CollectiveException``). ``rank`` is the rank that
    raised it and ``collective`` the Java API's name of the call ("allReduce"), where known."""

    def __init__(self, message, rank=None, collective=None):
        super().__init__(message)
        self.rank = rank
        self.collective = collective


class CollectiveMismatchError(CollectiveError):
    """Ranks called different collectives, counts, types, ops or roots (``CollectiveMismatchException``)."""


class CollectiveTimeoutError(CollectiveError, TimeoutError):
    """A rank did not arrive in time (``CollectiveTimeoutException``)."""


class InvalidArgumentError(CollectiveError, ValueError):
    """This rank's argument was refused (``InvalidArgumentException``, ``IllegalArgumentException``, or
    the Python side's own checks); the peers' calls fail with a CollectiveError naming this rank."""


class UnsupportedArrayError(InvalidArgumentError, TypeError):
    """An array of a type, dtype or device this package cannot pass to a collective."""


class CommunicatorStateError(CollectiveError):
    """The call is not possible in this state (``IllegalStateException``): outside a barrier task,
    after close(), without the plugin."""


_BY_JAVA_NAME = {
    "CollectiveMismatchException": CollectiveMismatchError,
    "CollectiveTimeoutException": CollectiveTimeoutError,
    "CollectiveException": CollectiveError,
    "InvalidArgumentException": InvalidArgumentError,
    "IllegalArgumentException": InvalidArgumentError,
    "IllegalStateException": CommunicatorStateError,
}


def from_java(kind, message, rank=None, collective=None):
    """The Python exception of a Java exception's simple class name and message."""
    return _BY_JAVA_NAME.get(kind, CollectiveError)(message, rank, collective)
