"""The log manager: every topic's partition logs under one data directory.

Layout::

    <data dir>/
        topics.json                 topic name -> id, partition count, configs
        .kafka_cleanshutdown        present only while the broker is stopped cleanly
        <topic>-<partition>/        one PartitionLog each (see partition_log.py)

``topics.json`` is the source of truth and is replaced atomically. Creating a
topic persists it before its directories exist (missing directories open as
empty logs); deleting one persists its removal first, then renames each
directory to ``<topic>-<p>.<uuid>-delete`` and removes it, so a crash at any
point leaves either the whole topic or only ``-delete`` leftovers and orphan
directories, which the next open removes.

Thread-safe: topic-level changes are serialised by one lock; partition logs
have their own locks.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import threading
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kafkette.log.checkpoint import atomic_write, fsync_directory
from kafkette.log.config import LogConfig, log_config_for
from kafkette.log.errors import TopicExists, UnknownTopicOrPartition
from kafkette.log.partition_log import Clock, PartitionLog

_log = logging.getLogger(__name__)

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
TOPICS_FILE = "topics.json"
DELETE_SUFFIX = "-delete"
MAX_TOPIC_NAME_LENGTH = 249
_LEGAL_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]+")


@dataclass(frozen=True)
class TopicMetadata:
    """A topic as persisted: ``configs`` are Kafka topic-level names -> values as set."""

    name: str
    topic_id: uuid.UUID
    partitions: int
    configs: dict[str, str] = field(default_factory=dict)


def validate_topic_name(name: str) -> None:
    """Kafka's rule: 1-249 chars of [a-zA-Z0-9._-], not '.' or '..'."""
    if not name or name in (".", ".."):
        raise ValueError(f"illegal topic name {name!r}")
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise ValueError(f"topic name longer than {MAX_TOPIC_NAME_LENGTH} characters")
    if not _LEGAL_TOPIC_NAME.fullmatch(name):
        raise ValueError(f"topic name {name!r} has characters outside [a-zA-Z0-9._-]")


def partition_dir_name(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


def parse_partition_dir_name(name: str) -> tuple[str, int] | None:
    """``my.topic-3`` -> ("my.topic", 3); None for anything else."""
    topic, dash, number = name.rpartition("-")
    if not dash or not topic or not number.isdigit():
        return None
    return topic, int(number)


class DataDir:
    """Owns the topic table and one PartitionLog per partition."""

    def __init__(
        self,
        path: Path,
        default_config: LogConfig,
        clock: Clock,
        topics: dict[str, TopicMetadata],
    ) -> None:
        self.path = path
        self._default_config = default_config
        self._clock = clock
        self._topics = topics
        self._logs: dict[tuple[str, int], PartitionLog] = {}
        self._lock = threading.RLock()
        self._closed = False
        self.had_clean_shutdown = False

    @classmethod
    def open(cls, path: Path, default_config: LogConfig, clock: Clock) -> DataDir:
        """Load topics and open every partition log (recovering after an unclean stop)."""
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        marker = path / CLEAN_SHUTDOWN_FILE
        clean = marker.exists()
        topics_file = path / TOPICS_FILE
        topics = _read_topics(topics_file)
        data_dir = cls(path, default_config, clock, topics)
        data_dir.had_clean_shutdown = clean
        data_dir._remove_leftovers(initialised=topics_file.exists())
        for meta in topics.values():
            config = log_config_for(meta.configs, default_config)
            for index in range(meta.partitions):
                data_dir._logs[(meta.name, index)] = PartitionLog.open(
                    path / partition_dir_name(meta.name, index), config, clock, recover=not clean
                )
        if clean:
            marker.unlink()
            fsync_directory(path)
        return data_dir

    # ------------------------------------------------------------------ topics

    @property
    def default_config(self) -> LogConfig:
        return self._default_config

    @property
    def topics(self) -> dict[str, TopicMetadata]:
        """A snapshot copy of the topic table."""
        with self._lock:
            return dict(self._topics)

    def config_for(self, topic: str) -> LogConfig:
        with self._lock:
            meta = self._require_topic(topic)
            return log_config_for(meta.configs, self._default_config)

    def create_topic(
        self,
        name: str,
        partitions: int,
        configs: Mapping[str, str],
        topic_id: uuid.UUID | None = None,
    ) -> TopicMetadata:
        """Persist a new topic and create its empty partition logs.

        Raises ValueError for a bad name, partition count or config value,
        TopicExists if the name is taken.
        """
        validate_topic_name(name)
        if partitions < 1:
            raise ValueError("a topic needs at least one partition")
        config = log_config_for(configs, self._default_config)
        with self._lock:
            if name in self._topics:
                raise TopicExists(name)
            meta = TopicMetadata(name, topic_id or uuid.uuid4(), partitions, dict(configs))
            for index in range(partitions):
                self._discard_directory(self.path / partition_dir_name(name, index))
            self._topics[name] = meta
            self._persist_topics_or_restore(name, None)
            for index in range(partitions):
                self._logs[(name, index)] = PartitionLog.open(
                    self.path / partition_dir_name(name, index), config, self._clock,
                    recover=False,
                )
            return meta

    def delete_topic(self, name: str) -> None:
        """Forget the topic durably, then remove its directories."""
        with self._lock:
            meta = self._require_topic(name)
            del self._topics[name]
            self._persist_topics_or_restore(name, meta)
            logs = [self._logs.pop((name, i)) for i in range(meta.partitions)]
            for index, log in enumerate(logs):
                log.close(flush=False)
                self._discard_directory(self.path / partition_dir_name(name, index))

    def add_partitions(self, name: str, new_total: int) -> None:
        """Grow a topic to ``new_total`` partitions (Kafka never shrinks one)."""
        with self._lock:
            meta = self._require_topic(name)
            if new_total <= meta.partitions:
                raise ValueError(
                    f"topic {name} has {meta.partitions} partitions; {new_total} is not more"
                )
            config = log_config_for(meta.configs, self._default_config)
            for index in range(meta.partitions, new_total):
                self._discard_directory(self.path / partition_dir_name(name, index))
            self._topics[name] = TopicMetadata(name, meta.topic_id, new_total, dict(meta.configs))
            self._persist_topics_or_restore(name, meta)
            for index in range(meta.partitions, new_total):
                self._logs[(name, index)] = PartitionLog.open(
                    self.path / partition_dir_name(name, index), config, self._clock,
                    recover=False,
                )

    def set_topic_configs(self, name: str, configs: Mapping[str, str]) -> None:
        """Replace the topic's configs (validated first), persist, apply to its logs."""
        config = log_config_for(configs, self._default_config)
        with self._lock:
            meta = self._require_topic(name)
            self._topics[name] = TopicMetadata(name, meta.topic_id, meta.partitions, dict(configs))
            self._persist_topics_or_restore(name, meta)
            for index in range(meta.partitions):
                self._logs[(name, index)].update_config(config)

    def partition(self, topic: str, index: int) -> PartitionLog:
        with self._lock:
            log = self._logs.get((topic, index))
        if log is None:
            raise UnknownTopicOrPartition(f"{topic}-{index}")
        return log

    def partitions(self) -> Iterator[tuple[str, int, PartitionLog]]:
        """Snapshot of every (topic, partition, log)."""
        with self._lock:
            items = list(self._logs.items())
        for (topic, index), log in items:
            yield topic, index, log

    # ------------------------------------------------------------ housekeeping

    def apply_retention(self) -> int:
        """Run retention on every partition; returns segments deleted."""
        return sum(log.apply_retention() for _, _, log in self.partitions())

    def maybe_flush(self) -> None:
        """flush.ms checks, flush of rolled segments, checkpoints: call periodically."""
        for _, _, log in self.partitions():
            log.maybe_flush()

    def close(self) -> None:
        """Flush and close every log, then write the clean-shutdown marker."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            logs = list(self._logs.values())
        failure: OSError | None = None
        for log in logs:
            try:
                log.close()
            except OSError as exc:  # a full disk: close the others all the same
                failure = failure or exc
        if failure is not None:
            raise failure  # no clean-shutdown marker: the next start recovers
        atomic_write(self.path / CLEAN_SHUTDOWN_FILE, b"")

    # ---------------------------------------------------------------- internal

    def _require_topic(self, name: str) -> TopicMetadata:
        meta = self._topics.get(name)
        if meta is None:
            raise UnknownTopicOrPartition(name)
        return meta

    def _persist_topics_or_restore(self, name: str, previous: TopicMetadata | None) -> None:
        """Persist, or (a full disk) put ``name`` back as it was and re-raise.

        Memory must not claim what ``topics.json`` does not: a later retry of
        the same change (once space is freed) then starts from the same state.
        """
        try:
            self._persist_topics()
        except BaseException:
            if previous is None:
                self._topics.pop(name, None)
            else:
                self._topics[name] = previous
            raise

    def _persist_topics(self) -> None:
        document = {
            "version": 1,
            "topics": [
                {
                    "name": meta.name,
                    "topic_id": str(meta.topic_id),
                    "partitions": meta.partitions,
                    "configs": meta.configs,
                }
                for meta in sorted(self._topics.values(), key=lambda m: m.name)
            ],
        }
        atomic_write(self.path / TOPICS_FILE, json.dumps(document, indent=1).encode())

    def _discard_directory(self, directory: Path) -> None:
        """Rename to ``*.<uuid>-delete`` (one atomic step), then remove."""
        if not directory.exists():
            return
        doomed = directory.with_name(f"{directory.name}.{uuid.uuid4().hex}{DELETE_SUFFIX}")
        directory.rename(doomed)
        fsync_directory(self.path)
        shutil.rmtree(doomed, ignore_errors=True)

    def _remove_leftovers(self, *, initialised: bool) -> None:
        """Finish interrupted deletions; remove directories no topic owns."""
        for child in self.path.iterdir():
            if not child.is_dir():
                continue
            if child.name.endswith(DELETE_SUFFIX):
                shutil.rmtree(child, ignore_errors=True)
                continue
            parsed = parse_partition_dir_name(child.name)
            if parsed is None:
                continue
            topic, index = parsed
            meta = self._topics.get(topic)
            if meta is not None and index < meta.partitions:
                continue
            if initialised:
                _log.warning("removing %s: no topic owns it", child)
                self._discard_directory(child)
            else:
                _log.warning("ignoring %s: no %s in %s", child, TOPICS_FILE, self.path)


def _read_topics(path: Path) -> dict[str, TopicMetadata]:
    try:
        document = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        return {}
    topics: dict[str, TopicMetadata] = {}
    for entry in document["topics"]:
        meta = TopicMetadata(
            entry["name"],
            uuid.UUID(entry["topic_id"]),
            int(entry["partitions"]),
            {str(k): str(v) for k, v in entry["configs"].items()},
        )
        topics[meta.name] = meta
    return topics
