"""Kafka's error table, checked against the one kafka-python ships."""

from __future__ import annotations

import pytest

from kafkette.wire.errors import ERRORS, ErrorCode, ErrorInfo, error_info

# kafka-python loads its protocol JSON with a deprecated importlib.resources call.
pytestmark = pytest.mark.filterwarnings("ignore:.*deprecated. Use files:DeprecationWarning")

# Where kafka-python's names differ from Kafka's own (Kafka renamed or kafka-python
# chose its own): ours follow Kafka. Asserted below, so a kafka-python change shows.
KAFKA_PYTHON_NAMES = {
    -1: "UNKNOWN",
    0: "NO_ERROR",
    6: "NOT_LEADER_FOR_PARTITION",  # Kafka renamed it NOT_LEADER_OR_FOLLOWER (KIP-392)
    10: "MESSAGE_SIZE_TOO_LARGE",
    17: "INVALID_TOPIC",
    39: "INVALID_REPLICATION_ASSIGNMENT",
}
# kafka-python marks CORRUPT_MESSAGE fatal; Kafka's CorruptRecordException is retriable.
KAFKA_PYTHON_RETRIABLE = {2: False}


def kafka_python_errors() -> dict[int, type]:
    from kafka import errors

    return {code: cls for code, cls in errors.kafka_errors.items() if code is not None}


def test_codes_are_contiguous_from_minus_one() -> None:
    codes = sorted(int(c) for c in ErrorCode)
    assert codes[0] == -1
    assert codes[-1] >= 119
    assert codes == list(range(-1, codes[-1] + 1))


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("UNKNOWN_SERVER_ERROR", -1),
        ("NONE", 0),
        ("OFFSET_OUT_OF_RANGE", 1),
        ("CORRUPT_MESSAGE", 2),
        ("UNKNOWN_TOPIC_OR_PARTITION", 3),
        ("NOT_LEADER_OR_FOLLOWER", 6),
        ("MESSAGE_TOO_LARGE", 10),
        ("NOT_COORDINATOR", 16),
        ("INVALID_TOPIC_EXCEPTION", 17),
        ("REBALANCE_IN_PROGRESS", 27),
        ("UNSUPPORTED_VERSION", 35),
        ("TOPIC_ALREADY_EXISTS", 36),
        ("INVALID_REPLICA_ASSIGNMENT", 39),
        ("INVALID_PRODUCER_EPOCH", 47),
        ("UNKNOWN_PRODUCER_ID", 59),
        ("MEMBER_ID_REQUIRED", 79),
        ("INVALID_RECORD", 87),
        ("PRODUCER_FENCED", 90),
        ("UNKNOWN_TOPIC_ID", 100),
        ("INVALID_REGISTRATION", 119),
    ],
)

def test_well_known_codes(name: str, code: int) -> None:
    assert ErrorCode[name] == code
    assert ERRORS[ErrorCode(code)].name == name


def test_every_code_has_a_row() -> None:
    assert set(ERRORS) == set(ErrorCode)
    for code, info in ERRORS.items():
        assert isinstance(info, ErrorInfo)
        assert info.code == int(code) and info.name == code.name
        assert isinstance(info.retriable, bool)
        assert info.message and "\n" not in info.message and len(info.message) <= 100


def test_names_and_retriable_flags_agree_with_kafka_python() -> None:
    theirs = kafka_python_errors()
    assert len(theirs) >= 120, "kafka-python's error table looks incomplete"
    name_diffs = {}
    retriable_diffs = {}
    for code, cls in theirs.items():
        assert code in set(ErrorCode), f"kafka-python knows code {code}, we do not"
        info = ERRORS[ErrorCode(code)]
        if cls.message != info.name:
            name_diffs[code] = cls.message
        if cls.retriable != info.retriable:
            retriable_diffs[code] = cls.retriable
    assert name_diffs == KAFKA_PYTHON_NAMES
    assert retriable_diffs == KAFKA_PYTHON_RETRIABLE


def test_retriable_examples() -> None:
    retriable = {c for c, info in ERRORS.items() if info.retriable}
    assert ErrorCode.NOT_LEADER_OR_FOLLOWER in retriable
    assert ErrorCode.COORDINATOR_LOAD_IN_PROGRESS in retriable
    assert ErrorCode.CORRUPT_MESSAGE in retriable
    assert ErrorCode.NONE not in retriable
    assert ErrorCode.UNSUPPORTED_VERSION not in retriable
    assert ErrorCode.PRODUCER_FENCED not in retriable


def test_error_info_for_unknown_code() -> None:
    info = error_info(32000)
    assert info.code == 32000 and not info.retriable
    assert error_info(35) is ERRORS[ErrorCode.UNSUPPORTED_VERSION]


def test_table_is_read_only() -> None:
    with pytest.raises(TypeError):
        ERRORS[ErrorCode.NONE] = ErrorInfo(0, "X", True, "x")  # type: ignore[index]

