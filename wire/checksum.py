"""CRC-32C for record batches, with the ``crc32c`` package imported on first use.

``import crc32c`` costs about 15 ms (its ``__init__`` looks up its own version through
``importlib.metadata``), and start time is a product figure while no checksum is needed
before the first Produce or recovery. Callers use ``checksum.crc32c(data)`` through the
module, so after the first call the name is the C function itself, with no wrapper.
"""

from __future__ import annotations


def crc32c(data: bytes | bytearray | memoryview) -> int:
    """CRC-32C (Castagnoli) of ``data``; the first call swaps in the package's function."""
    from crc32c import crc32c as implementation

    globals()["crc32c"] = implementation
    return implementation(data)
