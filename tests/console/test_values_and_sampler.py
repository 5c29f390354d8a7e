"""Pure pieces of the console: how values and timestamps are shown, and the throughput
sampler surviving a failing sample (a view that fails once stands in for a broker whose
state could not be read; the sampler must keep going, not take the broker down)."""

from __future__ import annotations

import logging

import pytest
import trio

from kafkette.console.throughput import ThroughputSampler
from kafkette.console.values import SHOW_BYTES, parse_timestamp, show, timestamp_text


def test_show_cuts_long_values_and_names_what_is_left() -> None:
    text, used = show(b"x" * (SHOW_BYTES + 10), "auto")
    assert (text, used) == ("x" * SHOW_BYTES + "… 10 more bytes", "utf8")
    # A cut through a multi-byte character still shows as text.
    text, used = show("é".encode() * SHOW_BYTES, "utf8")
    assert used == "utf8"
    assert text.endswith(f"… {len('é'.encode()) * SHOW_BYTES - SHOW_BYTES} more bytes")
    hexed, used = show(b"\xff" * (SHOW_BYTES + 1), "hex")
    assert used == "hex" and hexed.endswith("… 1 more bytes")


def test_show_survives_deep_json() -> None:
    for data in (b"[" * 100_000, b"[" * 50_000 + b"]" * 50_000):
        text, used = show(data, "json", limit=len(data))  # uncut: the parser sees it all
        assert used == "utf8" and text == data.decode()


def test_timestamps_past_year_9999_show_as_milliseconds() -> None:
    assert timestamp_text(2**63 - 1) == str(2**63 - 1)
    assert timestamp_text(253402300800000) == "253402300800000"  # year 10000
    assert timestamp_text(0) == "1970-01-01T00:00:00.000Z"
    assert timestamp_text(-1) == "-"


def test_parse_timestamp_refuses_out_of_range_with_value_error() -> None:
    assert parse_timestamp(str(2**63 - 1)) == 2**63 - 1
    assert parse_timestamp("1970-01-01T00:00:01Z") == 1000
    for bad in (str(2**63), "9" * 10_000, "-" + "9" * 20, "later"):
        with pytest.raises(ValueError):
            parse_timestamp(bad)


class _FlakyView:
    """A view whose partitions cannot be read on the first call."""

    def __init__(self) -> None:
        self.calls = 0

    def partitions(self) -> list:
        self.calls += 1
        if self.calls == 1:
            raise RuntimeError("state changed under the sample")
        return []


def test_sampler_keeps_sampling_after_a_failing_sample(caplog: pytest.LogCaptureFixture) -> None:
    view = _FlakyView()
    sampler = ThroughputSampler(view)  # type: ignore[arg-type]

    async def main() -> None:
        with trio.move_on_after(5):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(sampler.run, 0.01)
                while len(sampler.rates) < 3:
                    await trio.sleep(0.01)
                nursery.cancel_scope.cancel()

    with caplog.at_level(logging.ERROR, logger="kafkette.console"):
        trio.run(main)
    assert len(sampler.rates) >= 3
    failures = [r for r in caplog.records if "throughput sample failed" in r.getMessage()]
    assert len(failures) == 1
