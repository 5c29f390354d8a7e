"""Check the installed kafka-python's message definitions against what kafkette serves.

The codec is built at run time from the JSON definitions kafka-python ships, so a
kafka-python release is usable exactly when, for every API in ``SUPPORTED``, its
definitions know every version kafkette decodes and a message of each version
survives encode -> decode -> encode. ``python -m kafkette.wire.self_check`` does
that for every API and version (about a second) and exits 1 naming what failed;
CI runs it against the lowest kafka-python of the dependency range in a
throwaway target directory (tests/wire/test_kafka_python_range.py).
"""

from __future__ import annotations

import sys
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as package_version

from kafkette.wire.apis import SUPPORTED
from kafkette.wire.codec import MessageCodec, default_value
from kafkette.wire.schema import in_range, load_message, schema_folder


def _round_trip(name: str, version: int) -> str | None:
    """None if a default ``name`` message at ``version`` round-trips; else what went wrong."""
    spec = load_message(name)
    if not in_range(version, spec.valid_versions):
        return f"{name} v{version}: the definitions know only {spec.valid_versions}"
    codec = MessageCodec(spec, version)
    message = {
        field.name: default_value(field, version)
        for field in spec.fields
        if in_range(version, field.versions)
    }
    encoded = codec.encode(message)
    decoded, end = codec.decode(memoryview(encoded))
    if end != len(encoded):
        return f"{name} v{version}: decoding stopped at {end} of {len(encoded)} bytes"
    if codec.encode(decoded) != encoded:
        return f"{name} v{version}: re-encoding the decoded message changed its bytes"
    return None


def check() -> tuple[int, list[str]]:
    """(versions checked, failures) over every API and version kafkette decodes."""
    failures: list[str] = []
    checked = 0
    for api in sorted(SUPPORTED.values(), key=lambda a: a.key):
        for version in range(api.decode_min, api.max_version + 1):
            for name in (api.request_definition, api.response_definition):
                try:
                    problem = _round_trip(name, version)
                except Exception as exc:  # report every API, not just the first broken one
                    problem = f"{name} v{version}: {type(exc).__name__}: {exc}"
                if problem:
                    failures.append(problem)
            checked += 1
    return checked, failures


def main() -> int:
    try:
        installed = package_version("kafka-python")
    except PackageNotFoundError:
        installed = "unknown"
    try:
        folder = schema_folder()
    except ImportError as exc:  # kafka-python < 3 ships no definitions at all
        print(f"kafka-python {installed}: no message definitions ({exc})")
        return 1
    print(f"kafka-python {installed}: definitions from {folder}")
    checked, failures = check()
    for failure in failures:
        print(f"FAIL {failure}")
    print(f"{len(SUPPORTED)} APIs, {checked} versions, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
