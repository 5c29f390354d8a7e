"""DataDir: topics on disk, clean-shutdown marker, deletion, configs."""

from __future__ import annotations

import json
import os
import threading
import uuid

import pytest

from kafkette.log import (
    DataDir,
    LogConfig,
    TopicExists,
    UnknownTopicOrPartition,
)
from kafkette.log.data_dir import CLEAN_SHUTDOWN_FILE, TOPICS_FILE, parse_partition_dir_name
from kafkette.log.segment import segment_file_name
from kafkette.wire.record_batch import validate_batch
from tests.log import log_batches


def append(data_dir: DataDir, topic: str, partition: int, records: int = 2):
    batch = log_batches.build_sized_batch(records, 10)
    return data_dir.partition(topic, partition).append(batch, [validate_batch(batch)])


def test_topics_and_data_survive_a_clean_restart(tmp_path, clock):
    data_dir = DataDir.open(tmp_path, LogConfig(), clock)
    meta = data_dir.create_topic("my.topic-1", 3, {"retention.ms": "1000"})
    append(data_dir, "my.topic-1", 2)
    append(data_dir, "my.topic-1", 2)
    data_dir.close()
    assert (tmp_path / CLEAN_SHUTDOWN_FILE).exists()
    reopened = DataDir.open(tmp_path, LogConfig(), clock)
    assert reopened.had_clean_shutdown
    assert not (tmp_path / CLEAN_SHUTDOWN_FILE).exists()
    assert reopened.topics == {"my.topic-1": meta}
    assert reopened.partition("my.topic-1", 2).log_end_offset == 4
    assert reopened.partition("my.topic-1", 0).log_end_offset == 0
    assert reopened.partition("my.topic-1", 2).config.retention_ms == 1000
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == [
        "my.topic-1-0", "my.topic-1-1", "my.topic-1-2"
    ]
    reopened.close()


def test_unclean_restart_recovers_torn_tail(tmp_path, clock):
    data_dir = DataDir.open(tmp_path, LogConfig(), clock)
    data_dir.create_topic("t", 1, {})
    for _ in range(3):
        append(data_dir, "t", 0)
    # No close: the broker "crashed". Tear the last batch.
    log_path = tmp_path / "t-0" / segment_file_name(0, ".log")
    os.truncate(log_path, log_path.stat().st_size - 7)
    reopened = DataDir.open(tmp_path, LogConfig(), clock)
    assert not reopened.had_clean_shutdown
    assert reopened.partition("t", 0).log_end_offset == 4
    reopened.close()


def test_clean_marker_skips_the_scan(tmp_path, clock):
    data_dir = DataDir.open(tmp_path, LogConfig(), clock)
    data_dir.create_topic("t", 1, {})
    for _ in range(3):
        append(data_dir, "t", 0)
    data_dir.close()
    # Damage a CRC-covered byte of the first batch: a clean open trusts it.
    log_path = tmp_path / "t-0" / segment_file_name(0, ".log")
    data = bytearray(log_path.read_bytes())
    data[40] ^= 0xFF
    log_path.write_bytes(data)
    reopened = DataDir.open(tmp_path, LogConfig(), clock)
    assert reopened.partition("t", 0).log_end_offset == 6
    reopened.close()


def test_delete_topic_removes_directories_durably(tmp_path, clock):
    data_dir = DataDir.open(tmp_path, LogConfig(), clock)
    data_dir.create_topic("gone", 2, {})
    data_dir.create_topic("kept", 1, {})
    append(data_dir, "gone", 1)
    data_dir.delete_topic("gone")
    assert not (tmp_path / "gone-0").exists() and not (tmp_path / "gone-1").exists()
    with pytest.raises(UnknownTopicOrPartition):
        data_dir.partition("gone", 0)
    with pytest.raises(UnknownTopicOrPartition):
        data_dir.delete_topic("gone")
    again = data_dir.create_topic("gone", 1, {})
    assert data_dir.partition("gone", 0).log_end_offset == 0
    data_dir.close()
    reopened = DataDir.open(tmp_path, LogConfig(), clock)
    assert reopened.topics["gone"].topic_id == again.topic_id
    assert set(reopened.topics) == {"gone", "kept"}
    reopened.close()


def test_open_removes_orphans_and_delete_leftovers(tmp_path, clock):
    data_dir = DataDir.open(tmp_path, LogConfig(), clock)
    data_dir.create_topic("t", 1, {})
    data_dir.close()
    (tmp_path / "orphan-0").mkdir()
    (tmp_path / "t-5").mkdir()  # beyond the partition count
    leftover = tmp_path / f"x-0.{uuid.uuid4().hex}-delete"
    leftover.mkdir()
    (leftover / "f").write_bytes(b"x")
    (tmp_path / "not-a-partition-dir").mkdir()
    reopened = DataDir.open(tmp_path, LogConfig(), clock)
    names = sorted(p.name for p in tmp_path.iterdir() if p.is_dir())
    assert names == ["not-a-partition-dir", "t-0"]
    reopened.close()


def test_missing_partition_directory_opens_empty(tmp_path, clock):
    data_dir = DataDir.open(tmp_path, LogConfig(), clock)
    data_dir.create_topic("t", 2, {})
    data_dir.close()
    for child in (tmp_path / "t-1").iterdir():
        child.unlink()
    (tmp_path / "t-1").rmdir()
    reopened = DataDir.open(tmp_path, LogConfig(), clock)
    assert reopened.partition("t", 1).log_end_offset == 0
    reopened.close()


def test_add_partitions_and_errors(tmp_path, clock):
    data_dir = DataDir.open(tmp_path, LogConfig(), clock)
    data_dir.create_topic("t", 1, {})
    data_dir.add_partitions("t", 4)
    assert data_dir.topics["t"].partitions == 4
    append(data_dir, "t", 3)
    with pytest.raises(ValueError):
        data_dir.add_partitions("t", 4)
    with pytest.raises(TopicExists):
        data_dir.create_topic("t", 1, {})
    with pytest.raises(UnknownTopicOrPartition):
        data_dir.partition("t", 4)
    for bad in ("", ".", "..", "a/b", "x" * 250, "spa ce"):
        with pytest.raises(ValueError):
            data_dir.create_topic(bad, 1, {})
    with pytest.raises(ValueError):
        data_dir.create_topic("zero", 0, {})
    data_dir.close()
    reopened = DataDir.open(tmp_path, LogConfig(), clock)
    assert reopened.partition("t", 3).log_end_offset == 2
    reopened.close()


def test_set_topic_configs_validates_persists_and_applies(tmp_path, clock):
    data_dir = DataDir.open(tmp_path, LogConfig(), clock)
    data_dir.create_topic("t", 2, {"segment.bytes": "4096"})
    with pytest.raises(ValueError):
        data_dir.create_topic("u", 1, {"segment.bytes": "lots"})
    assert "u" not in data_dir.topics
    with pytest.raises(ValueError):
        data_dir.set_topic_configs("t", {"retention.ms": "-5"})
    assert data_dir.topics["t"].configs == {"segment.bytes": "4096"}
    data_dir.set_topic_configs("t", {"retention.bytes": "100", "cleanup.policy": "delete"})
    assert data_dir.partition("t", 1).config.retention_bytes == 100
    assert data_dir.partition("t", 1).config.segment_bytes == LogConfig().segment_bytes
    document = json.loads((tmp_path / TOPICS_FILE).read_text())
    assert document["topics"][0]["configs"] == {
        "retention.bytes": "100", "cleanup.policy": "delete"
    }
    data_dir.close()


def test_housekeeping_runs_retention_and_flush(tmp_path, clock):
    data_dir = DataDir.open(tmp_path, LogConfig(), clock)
    data_dir.create_topic("t", 1, {"retention.ms": "1000", "flush.ms": "10"})
    append(data_dir, "t", 0)
    log = data_dir.partition("t", 0)
    clock.advance(20)
    data_dir.maybe_flush()
    assert log.recovery_point == 2
    clock.advance(1_000_000_000_000)
    assert data_dir.apply_retention() == 1
    assert log.log_start_offset == 2
    data_dir.close()


def test_parse_partition_dir_name():
    assert parse_partition_dir_name("a-b.c_d-12") == ("a-b.c_d", 12)
    assert parse_partition_dir_name("x-0.abc-delete") is None
    assert parse_partition_dir_name("-3") is None
    assert parse_partition_dir_name("plain") is None


def _partition_dirs(path, topic):
    return sorted(
        child.name for child in path.iterdir()
        if child.is_dir() and not child.is_symlink() and child.name.startswith(topic + "-")
    )


def _persisted(path):
    document = json.loads((path / TOPICS_FILE).read_text())
    return {t["name"]: t["partitions"] for t in document["topics"]}


def test_a_create_that_fails_half_way_leaves_nothing(tmp_path, clock):
    data_dir = DataDir.open(tmp_path, LogConfig(), clock)
    data_dir.create_topic("kept", 1, {})
    # A dangling symlink where partition 3's directory must go: mkdir fails there.
    os.symlink(tmp_path / "nowhere", tmp_path / "half-3")
    with pytest.raises(OSError):
        data_dir.create_topic("half", 6, {})
    assert "half" not in data_dir.topics
    assert _persisted(tmp_path) == {"kept": 1}
    assert _partition_dirs(tmp_path, "half") == []
    with pytest.raises(UnknownTopicOrPartition):
        data_dir.partition("half", 0)
    data_dir.close()
    reopened = DataDir.open(tmp_path, LogConfig(), clock)
    assert set(reopened.topics) == {"kept"}
    (tmp_path / "half-3").unlink()
    reopened.create_topic("half", 6, {})
    assert _partition_dirs(tmp_path, "half") == [f"half-{i}" for i in range(6)]
    assert _persisted(tmp_path) == {"kept": 1, "half": 6}
    reopened.close()


def test_adding_partitions_that_fails_half_way_leaves_the_topic_as_it_was(tmp_path, clock):
    data_dir = DataDir.open(tmp_path, LogConfig(), clock)
    data_dir.create_topic("t", 2, {})
    append(data_dir, "t", 1)
    os.symlink(tmp_path / "nowhere", tmp_path / "t-4")
    with pytest.raises(OSError):
        data_dir.add_partitions("t", 6)
    assert data_dir.topics["t"].partitions == 2
    assert _persisted(tmp_path) == {"t": 2}
    assert _partition_dirs(tmp_path, "t") == ["t-0", "t-1"]
    data_dir.close()
    reopened = DataDir.open(tmp_path, LogConfig(), clock)
    assert reopened.topics["t"].partitions == 2
    assert reopened.partition("t", 1).log_end_offset == 2
    reopened.close()


def test_lookups_never_wait_for_an_admin_change(tmp_path, clock):
    data_dir = DataDir.open(tmp_path, LogConfig(), clock)
    data_dir.create_topic("t", 2, {"retention.ms": "1000"})
    answers = []

    def look_up() -> None:
        answers.append(
            (
                data_dir.topics["t"].partitions,
                data_dir.partition("t", 1).log_end_offset,
                len(list(data_dir.partitions())),
                data_dir.config_for("t").retention_ms,
            )
        )

    with data_dir._admin_lock:  # what a long create_topic holds
        reader = threading.Thread(target=look_up)
        reader.start()
        reader.join(30)
    assert answers == [(2, 0, 2, 1000)]
    data_dir.close()


def test_a_topic_hosted_in_part_reopens_exactly_its_partitions(tmp_path, clock):
    data_dir = DataDir.open(tmp_path, LogConfig(), clock)
    data_dir.create_topic("part", 4, {}, partitions_hosted={1, 3})
    data_dir.create_topic("whole", 2, {})
    assert _partition_dirs(tmp_path, "part") == ["part-1", "part-3"]
    with pytest.raises(UnknownTopicOrPartition):
        data_dir.partition("part", 0)
    append(data_dir, "part", 3)
    data_dir.host_partition("part", 0)  # a reassignment adds this broker
    data_dir.drop_partition("part", 1)  # ... and removes it from another partition
    data_dir.add_partitions("part", 6, partitions_hosted={5})
    assert _partition_dirs(tmp_path, "part") == ["part-0", "part-3", "part-5"]
    document = json.loads((tmp_path / TOPICS_FILE).read_text())
    entries = {t["name"]: t for t in document["topics"]}
    assert entries["part"]["hosted"] == [0, 3, 5]
    assert "hosted" not in entries["whole"]  # single-node topics are written as before
    data_dir.close()

    reopened = DataDir.open(tmp_path, LogConfig(), clock)
    assert sorted((t, i) for t, i, _ in reopened.partitions()) == [
        ("part", 0), ("part", 3), ("part", 5), ("whole", 0), ("whole", 1)
    ]
    assert reopened.partition("part", 3).log_end_offset == 2
    assert reopened.topics["part"].partitions == 6
    assert _partition_dirs(tmp_path, "part") == ["part-0", "part-3", "part-5"]
    reopened.delete_topic("part")
    assert _partition_dirs(tmp_path, "part") == []
    reopened.close()


def test_a_new_topic_replaces_leftover_directories_of_its_name(tmp_path, clock):
    """Directories an earlier life of the name left (a crash between making them and
    persisting topics.json, with the data dir not reopened since) never leak into the
    new topic: its logs start empty, made fresh, and survive a restart."""
    data_dir = DataDir.open(tmp_path, LogConfig(), clock)
    stale = tmp_path / "t-1"
    stale.mkdir()
    (stale / segment_file_name(0, ".log")).write_bytes(b"stale bytes")
    (stale / segment_file_name(0, ".index")).write_bytes(bytes(8))
    data_dir.create_topic("t", 3, {})
    assert [data_dir.partition("t", i).log_end_offset for i in range(3)] == [0, 0, 0]
    assert list(stale.iterdir()) == []  # the segment's files are made on first use
    append(data_dir, "t", 1)
    assert (stale / segment_file_name(0, ".log")).stat().st_size > 0
    data_dir.close()
    reopened = DataDir.open(tmp_path, LogConfig(), clock)
    assert [reopened.partition("t", i).log_end_offset for i in range(3)] == [0, 2, 0]
    reopened.close()
