"""bench/share_groups.py's own checks, broker-free: the exactly-once check over the
members' offset files, and the librdkafka error lines it counts."""

from __future__ import annotations

import array
import re
from pathlib import Path

import pytest

from bench.share_groups import MeasurementError, _check_exactly_once, _client_errors


def _offsets(path: Path, offsets: list[int]) -> Path:
    path.write_bytes(array.array("q", offsets).tobytes())
    return path


def test_every_offset_once_over_the_members_passes(tmp_path: Path) -> None:
    files = [_offsets(tmp_path / "a", [0, 2, 4]), _offsets(tmp_path / "b", [1, 3])]
    _check_exactly_once(5, files)


@pytest.mark.parametrize(
    ("a", "b", "said"),
    [
        ([0, 1, 2], [2, 3, 4], "1 duplicated (first [2])"),
        ([0, 1], [3, 4], "1 missing (first [2])"),
        ([0, 1, 2], [3, 4, 5], "1 outside"),
    ],
)
def test_a_duplicate_a_loss_or_a_stray_offset_fails(tmp_path: Path, a, b, said) -> None:
    files = [_offsets(tmp_path / "a", a), _offsets(tmp_path / "b", b)]
    with pytest.raises(MeasurementError, match=re.escape(said)):
        _check_exactly_once(5, files)


def test_client_errors_are_librdkafkas_level_3_lines(tmp_path: Path) -> None:
    log = tmp_path / "member.log"
    log.write_text(
        "%4|1.0|SHARECONSUMER|rdkafka#consumer-1| [thrd:app]: preview\n"
        "%3|2.0|PROTOERR|rdkafka#consumer-1| [thrd:127.0.0.1:1/1]: 127.0.0.1:1/1: "
        "invalid MessageSetSize -1\n"
    )
    assert _client_errors(log) == ["127.0.0.1:1/1: invalid MessageSetSize -1"]
    assert _client_errors(tmp_path / "absent.log") == []
