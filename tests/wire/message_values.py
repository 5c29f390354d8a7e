"""Random message values from our reading of Kafka's definitions, drawn with a seeded
``random.Random``: what the codec's oracle tests feed the codec.

Hypothesis drew these before; its engine spent ~5 ms of CPU per nested message (the
codec's own work is a tenth of that), over ~2,000 (API, version) cases and three test
functions. A plain generator draws the same shapes (every field present at the version,
nulls where the version allows them, arrays of 0-3 elements) with the boundary values
hypothesis favours (the type's minimum and maximum, 0, -1, empty and non-ASCII text), and
is reproducible from its seed: the case's name, version and example number.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Iterator

from kafkette.wire.primitives import ZERO_UUID
from kafkette.wire.schema import FieldSpec, in_range, load_message

EXAMPLES = 8  # values per (message, version), as many as hypothesis drew

INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
}
FLOATS = (0.0, -0.0, 1.0, -1.5, 5e-324, 1.7976931348623157e308, float("inf"), float("-inf"))
# Text: ASCII, two-, three- and four-byte UTF-8, a NUL; plus any non-surrogate code point.
CHARS = "aZ09 _-.:/" + "\x00é€𝄞漢"

# An override for one field (None: the generic value); kio's narrower domains use it.
Special = Callable[[FieldSpec, random.Random], object] | None


def examples(name: str, version: int, draw: Callable[[random.Random], dict]
             ) -> Iterator[tuple[int, dict]]:
    """(example number, value): ``EXAMPLES`` values, each from its own seeded generator."""
    for number in range(EXAMPLES):
        yield number, draw(random.Random(f"{name}:{version}:{number}"))


def message_value(name: str, version: int, rng: random.Random) -> dict:
    """Any value of the message at ``version`` (tagged fields included)."""
    return struct_value(load_message(name).fields, version, rng)


def struct_value(fields: tuple[FieldSpec, ...], version: int, rng: random.Random,
                 special: Callable[[FieldSpec], Special] | None = None) -> dict:
    """A dict holding exactly the fields present at ``version``."""
    return {
        f.name: field_value(f, version, rng, special(f) if special else None)
        for f in fields if in_range(version, f.versions)
    }


def field_value(field: FieldSpec, version: int, rng: random.Random,
                special: Special = None) -> object:
    nullable = in_range(version, field.nullable_versions)
    if field.is_array:
        if nullable and rng.random() < 0.2:
            return None
        return [_element(field, version, rng, special, nullable=False)
                for _ in range(rng.randint(0, 3))]
    return _element(field, version, rng, special, nullable)


def _element(field: FieldSpec, version: int, rng: random.Random, special: Special,
             nullable: bool) -> object:
    if nullable and rng.random() < 0.2:
        return None
    if field.is_struct:
        return struct_value(field.fields, version, rng)
    if special is not None:
        return special(field, rng)
    return scalar(field.element_type, rng)


def scalar(type_name: str, rng: random.Random) -> object:
    if type_name in INT_RANGES:
        low, high = INT_RANGES[type_name]
        return integer(low, high, rng)
    if type_name == "bool":
        return rng.random() < 0.5
    if type_name == "float64":
        return rng.choice(FLOATS) if rng.random() < 0.5 else rng.uniform(-1e12, 1e12)
    if type_name == "uuid":
        return ZERO_UUID if rng.random() < 0.25 else uuid.UUID(int=rng.getrandbits(128))
    if type_name == "string":
        return "".join(_char(rng) for _ in range(rng.randint(0, 8)))
    if type_name in ("bytes", "records"):
        return rng.randbytes(rng.randint(0, 16))
    raise LookupError(f"no values for {type_name}")


def integer(low: int, high: int, rng: random.Random) -> int:
    """Half the time a boundary (the range's ends, 0, -1 or 1), else uniform."""
    if rng.random() < 0.5:
        return rng.choice([v for v in (low, high, 0, -1, 1) if low <= v <= high])
    return rng.randint(low, high)


def _char(rng: random.Random) -> str:
    if rng.random() < 0.8:
        return rng.choice(CHARS)
    code = rng.randint(0x20, 0x10FFFF)
    return chr(code) if not 0xD800 <= code <= 0xDFFF else "?"
