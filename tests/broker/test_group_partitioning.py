"""partition_for_group must put a group where Kafka does: Utils.abs(hashCode) % n."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from kafkette.broker.groups.partitioning import (
    java_string_hash,
    kafka_abs,
    partition_for_group,
)


def hash_by_definition(s: str) -> int:
    """Java's documented formula s[0]*31^(n-1) + ... + s[n-1], reduced to int32.

    Written as a polynomial sum (not Horner) over UTF-16 units so it is an
    independent check of the implementation."""
    units = []
    for ch in s:
        cp = ord(ch)
        if cp > 0xFFFF:
            cp -= 0x10000
            units += [0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF)]
        else:
            units.append(cp)
    n = len(units)
    total = sum(u * 31 ** (n - 1 - i) for i, u in enumerate(units)) % 2**32
    return total - 2**32 if total >= 2**31 else total


# Values worked out by hand from the definition, plus two well-known Java facts:
# "Aa" and "BB" collide at 2112, and "polygenelubricants" hashes to Integer.MIN_VALUE.
KNOWN_HASHES = [
    ("", 0),
    ("a", 97),
    ("ab", 97 * 31 + 98),
    ("hello", 99162322),
    ("group", 103 * 31**4 + 114 * 31**3 + 111 * 31**2 + 117 * 31 + 112),
    ("Aa", 2112),
    ("BB", 2112),
    ("polygenelubricants", -(2**31)),
]


@pytest.mark.parametrize(("text", "expected"), KNOWN_HASHES)
def test_java_string_hash_known_values(text: str, expected: int) -> None:
    assert java_string_hash(text) == expected


@pytest.mark.parametrize(
    "text",
    ["console-consumer-12345", "my-group", "spark-kafka-source-0f3c", "ünïcødé", "emoji-😀"],
)
def test_java_string_hash_matches_definition(text: str) -> None:
    assert java_string_hash(text) == hash_by_definition(text)


@pytest.mark.parametrize(
    ("group_id", "partitions", "expected"),
    [
        ("a", 50, 97 % 50),
        ("hello", 50, 99162322 % 50),
        ("group", 50, 98629247 % 50),
        ("polygenelubricants", 50, 0),  # Utils.abs(MIN_VALUE) == 0
        ("", 50, 0),
        ("hello", 1, 0),
    ],
)
def test_partition_for_group_known(group_id: str, partitions: int, expected: int) -> None:
    assert partition_for_group(group_id, partitions) == expected


def test_negative_hash_uses_math_abs_not_mask() -> None:
    # Kafka's Utils.abs is Math.abs (except MIN_VALUE), not `h & 0x7fffffff`:
    # the two disagree for every negative hash.
    group_id = "my-group"
    h = hash_by_definition(group_id)
    assert h < 0, "pick a group id with a negative hash for this test"
    assert partition_for_group(group_id, 50) == (-h) % 50 == 12
    assert (h & 0x7FFFFFFF) % 50 != 12  # what the masking rule would (wrongly) give
    assert kafka_abs(h) == -h
    assert kafka_abs(-(2**31)) == 0


def test_partition_count_must_be_positive() -> None:
    with pytest.raises(ValueError):
        partition_for_group("g", 0)


def test_matches_the_jvm(tmp_path) -> None:
    """Ask a real JVM for String.hashCode of a few ids."""
    if shutil.which("javac") is None or shutil.which("java") is None:
        pytest.skip("javac/java not installed: cannot cross-check String.hashCode on a JVM")
    ids = ["console-consumer-12345", "my-group", "ünïcødé", "emoji-😀", "polygenelubricants"]
    src = tmp_path / "Hashes.java"
    src.write_text(
        "public class Hashes { public static void main(String[] a) {"
        " for (String s : a) System.out.println(s.hashCode()); } }",
        encoding="utf-8",
    )
    subprocess.run(["javac", "-encoding", "UTF-8", str(src)], check=True, timeout=120)
    out = subprocess.run(
        ["java", "-Dfile.encoding=UTF-8", "-Dsun.jnu.encoding=UTF-8", "-cp", str(tmp_path),
         "Hashes", *ids],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
        env={"LC_ALL": "C.UTF-8", "LANG": "C.UTF-8"},
    )
    jvm = [int(line) for line in out.stdout.split()]
    assert jvm == [java_string_hash(s) for s in ids]
