"""The codec's exceptions: a peer that sent garbage vs. a request we refuse.

Like h11's ``RemoteProtocolError``/``LocalProtocolError`` split, callers catch
``ProtocolError`` and look at the subclass to decide: a ``MalformedFrameError``
means the byte stream can no longer be trusted (close the connection), a
``RequestRefusedError`` carries a Kafka error code to answer with.
"""

from __future__ import annotations


class ProtocolError(Exception):
    """Base of everything the codec raises on bad input."""


class MalformedFrameError(ProtocolError):
    """The peer sent bytes that are not a Kafka frame we can read.

    The connection is out of sync after this: the broker logs and closes it.
    """


class FrameTooLargeError(MalformedFrameError):
    """A length prefix above ``socket.request.max.bytes``; refused before allocating."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"frame of {size} bytes exceeds socket.request.max.bytes={limit}")
        self.size = size
        self.limit = limit


class UnknownApiKeyError(MalformedFrameError):
    """An API key we do not serve; Kafka closes the connection for these."""

    def __init__(self, api_key: int) -> None:
        super().__init__(f"unknown API key {api_key}")
        self.api_key = api_key


class RequestRefusedError(ProtocolError):
    """A well-framed request we answer with a Kafka error code instead of serving.

    ``header`` is the decoded request header, so the caller can still answer on
    the right correlation id.
    """

    def __init__(self, message: str, *, error_code: int, header: object | None = None) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.header = header


class UnsupportedVersionError(RequestRefusedError):
    """An API version outside the advertised range (Kafka's UNSUPPORTED_VERSION, 35)."""

    def __init__(self, api_key: int, api_version: int, header: object | None = None) -> None:
        super().__init__(
            f"API key {api_key} version {api_version} is not supported",
            error_code=35,
            header=header,
        )
        self.api_key = api_key
        self.api_version = api_version


class EncodeError(ProtocolError):
    """Our own response did not fit its schema (a broker bug, never the peer's fault)."""
