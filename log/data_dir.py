"""The log manager: every topic's partition logs under one data directory.

Layout::

    <data dir>/
        topics.json                 topic name -> id, partition count, configs
                                    (and, in cluster mode, the partitions hosted here)
        .kafka_cleanshutdown        present only while the broker is stopped cleanly
        replication-offset-checkpoint   high watermarks (cluster mode; Kafka's format)
        <topic>-<partition>/        one PartitionLog each (see partition_log.py)

``topics.json`` is the source of truth and is replaced atomically. It never
names a partition whose directory was not made first: creating a topic (or
adding partitions) makes every new directory and its empty log, then persists
``topics.json``, then publishes the new logs; a failure at any step before the
persist removes what was made, so the change happens whole or not at all. A
crash in between leaves only directories no topic owns, which the next open
removes. Deleting a topic persists its removal first, then renames each
directory to ``<topic>-<p>.<uuid>-delete`` and removes it.

A topic may be hosted in part (cluster mode: a broker keeps the logs of the
partitions it is a replica of, as Kafka does): its ``hosted`` set names the
partitions with a directory here; None (single-node mode) means all of them,
and then topics.json says nothing more than before. ``host_partition`` and
``drop_partition`` change the set one partition at a time, in the same order
as above (directory, then topics.json; topics.json, then the directory).

Threading: topic-level changes (and their file work, which can take seconds
for thousands of partitions) are serialised by ``_admin_lock``, which only
worker threads take. Lookups (``topics``, ``partition``, ``partitions``,
``config_for``) take no lock at all: the topic table and the log table are
never mutated once published, only replaced by new dicts (logs before topics
on the way in, topics before logs on the way out), so the event loop can call
them at any time without waiting for an admin change in progress.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import threading
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING

from kafkette.log.checkpoint import atomic_write, fsync_directory
from kafkette.log.config import LogConfig, log_config_for
from kafkette.log.errors import LogClosed, TopicExists, UnknownTopicOrPartition
from kafkette.log.replication_checkpoint import HighWatermarkCheckpoint

if TYPE_CHECKING:
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
    # The partitions with a log here; None: all of them (single-node mode).
    hosted: frozenset[int] | None = None

    def hosted_indexes(self) -> list[int]:
        """The partitions with a local log, in order."""
        if self.hosted is None:
            return list(range(self.partitions))
        return sorted(self.hosted)

    def is_hosted(self, index: int) -> bool:
        if self.hosted is None:
            return 0 <= index < self.partitions
        return index in self.hosted


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


def _partition_log() -> type[PartitionLog]:
    """The log engine (segments, indexes, producer state, recovery), imported when the
    first partition log is opened or made: an empty data dir (a fresh broker's) opens
    without loading it."""
    from kafkette.log.partition_log import PartitionLog

    return PartitionLog


class DataDir:
    """Owns the topic table and one PartitionLog per partition. See the module docstring."""

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
        # Both tables are replaced, never mutated, once published (lock-free reads).
        self._topics: dict[str, TopicMetadata] = topics
        self._topics_view = (topics, MappingProxyType(topics))
        self._logs: dict[tuple[str, int], PartitionLog] = {}
        self._admin_lock = threading.Lock()
        self._closed = False
        self.had_clean_shutdown = False
        self._hw_checkpoint: HighWatermarkCheckpoint | None = None

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
        logs: dict[tuple[str, int], PartitionLog] = {}
        for meta in topics.values():
            config = log_config_for(meta.configs, default_config)
            for index in meta.hosted_indexes():
                logs[(meta.name, index)] = _partition_log().open(
                    path / partition_dir_name(meta.name, index), config, clock, recover=not clean
                )
        data_dir._logs = logs
        data_dir._hw_checkpoint = HighWatermarkCheckpoint(path)
        if clean:
            marker.unlink()
            fsync_directory(path)
        return data_dir

    # ------------------------------------------------------------------ topics

    @property
    def default_config(self) -> LogConfig:
        return self._default_config

    @property
    def topics(self) -> Mapping[str, TopicMetadata]:
        """The topic table as of now: a read-only view of a dict never mutated again.
        The same view object until the table changes, so a caller may cache what it
        derives from it keyed by identity (the consumer groups' topic view does)."""
        table, view = self._topics_view
        if table is not self._topics:
            table, view = self._topics, MappingProxyType(self._topics)
            self._topics_view = (table, view)
        return view

    def config_for(self, topic: str) -> LogConfig:
        meta = self._require_topic(topic)
        return log_config_for(meta.configs, self._default_config)

    def create_topic(
        self,
        name: str,
        partitions: int,
        configs: Mapping[str, str],
        topic_id: uuid.UUID | None = None,
        partitions_hosted: Iterable[int] | None = None,
    ) -> TopicMetadata:
        """Create the topic's partition logs, persist it, then publish it: all or nothing.

        ``partitions_hosted``: only these partitions get a log here (cluster
        mode); None: all of them.

        Raises ValueError for a bad name, partition count or config value,
        TopicExists if the name is taken, OSError if the files cannot be made
        (nothing is left behind then: no directory, no entry in topics.json).
        """
        validate_topic_name(name)
        if partitions < 1:
            raise ValueError("a topic needs at least one partition")
        config = log_config_for(configs, self._default_config)
        with self._admin_lock:
            self._check_open()
            if name in self._topics:
                raise TopicExists(name)
            hosted = _hosted_set(partitions_hosted, partitions)
            meta = TopicMetadata(
                name, topic_id or uuid.uuid4(), partitions, dict(configs), hosted
            )
            made = self._make_logs(name, meta.hosted_indexes(), config)
            self._persist_or_undo({**self._topics, name: meta}, made)
            self._logs = {**self._logs, **made}
            self._topics = {**self._topics, name: meta}
            return meta

    def delete_topic(self, name: str) -> None:
        """Forget the topic durably, then remove its directories."""
        with self._admin_lock:
            meta = self._require_topic(name)
            topics = dict(self._topics)
            del topics[name]
            self._persist_topics(topics)
            self._topics = topics
            doomed = [(name, i) for i in meta.hosted_indexes()]
            logs = dict(self._logs)
            removed = [logs.pop(key) for key in doomed]
            self._logs = logs
            for log in removed:
                log.close(flush=False)
            self._discard_directories(
                self.path / partition_dir_name(name, index) for index in meta.hosted_indexes()
            )

    def add_partitions(
        self, name: str, new_total: int, partitions_hosted: Iterable[int] | None = None
    ) -> None:
        """Grow a topic to ``new_total`` partitions (Kafka never shrinks one): all or nothing.

        For a topic hosted in part, only the new partitions in
        ``partitions_hosted`` get a log here (None: none of them).
        """
        with self._admin_lock:
            self._check_open()
            meta = self._require_topic(name)
            if new_total <= meta.partitions:
                raise ValueError(
                    f"topic {name} has {meta.partitions} partitions; {new_total} is not more"
                )
            config = log_config_for(meta.configs, self._default_config)
            added = range(meta.partitions, new_total)
            if meta.hosted is None:
                hosted = None
                new_hosted = list(added)
            else:
                new_hosted = sorted(set(partitions_hosted or ()) & set(added))
                hosted = meta.hosted | frozenset(new_hosted)
            grown = TopicMetadata(name, meta.topic_id, new_total, dict(meta.configs), hosted)
            made = self._make_logs(name, new_hosted, config)
            self._persist_or_undo({**self._topics, name: grown}, made)
            self._logs = {**self._logs, **made}
            self._topics = {**self._topics, name: grown}

    def set_topic_configs(self, name: str, configs: Mapping[str, str]) -> None:
        """Replace the topic's configs (validated first), persist, apply to its logs."""
        config = log_config_for(configs, self._default_config)
        with self._admin_lock:
            meta = self._require_topic(name)
            changed = TopicMetadata(
                name, meta.topic_id, meta.partitions, dict(configs), meta.hosted
            )
            self._persist_topics({**self._topics, name: changed})
            self._topics = {**self._topics, name: changed}
            logs = self._logs
            for index in meta.hosted_indexes():
                logs[(name, index)].update_config(config)

    def host_partition(self, name: str, index: int) -> PartitionLog:
        """Give partition ``index`` of the topic a (new, empty) log here: the directory
        first, then topics.json, then the published tables. No-op if already hosted."""
        with self._admin_lock:
            self._check_open()
            meta = self._require_topic(name)
            if not 0 <= index < meta.partitions:
                raise UnknownTopicOrPartition(f"{name}-{index}")
            if meta.is_hosted(index):
                return self._logs[(name, index)]
            assert meta.hosted is not None
            config = log_config_for(meta.configs, self._default_config)
            changed = TopicMetadata(
                name, meta.topic_id, meta.partitions, dict(meta.configs),
                meta.hosted | {index},
            )
            made = self._make_logs(name, [index], config)
            self._persist_or_undo({**self._topics, name: changed}, made)
            self._logs = {**self._logs, **made}
            self._topics = {**self._topics, name: changed}
            return made[(name, index)]

    def drop_partition(self, name: str, index: int) -> None:
        """Stop hosting partition ``index``: topics.json forgets it first, then its log
        is closed and its directory removed (Kafka's StopReplica with delete).
        No-op if not hosted here."""
        with self._admin_lock:
            meta = self._require_topic(name)
            if not meta.is_hosted(index):
                return
            hosted = frozenset(meta.hosted_indexes()) - {index}
            changed = TopicMetadata(
                name, meta.topic_id, meta.partitions, dict(meta.configs), hosted
            )
            topics = {**self._topics, name: changed}
            self._persist_topics(topics)
            self._topics = topics
            logs = dict(self._logs)
            removed = logs.pop((name, index), None)
            self._logs = logs
            if removed is not None:
                removed.close(flush=False)
            self._discard_directory(self.path / partition_dir_name(name, index))

    def partition(self, topic: str, index: int) -> PartitionLog:
        log = self._logs.get((topic, index))
        if log is None:
            raise UnknownTopicOrPartition(f"{topic}-{index}")
        return log

    def partitions(self) -> Iterator[tuple[str, int, PartitionLog]]:
        """Snapshot of every (topic, partition, log)."""
        for (topic, index), log in self._logs.items():
            yield topic, index, log

    # ------------------------------------------------------------- replication

    def high_watermarks(self) -> dict[tuple[str, int], int]:
        """(topic, partition) -> HW from ``replication-offset-checkpoint``: as read at
        open ({} if absent or unreadable), then as last written."""
        return self._hw_checkpoint.entries() if self._hw_checkpoint else {}

    def checkpoint_high_watermarks(
        self, hws: Mapping[tuple[str, int], int] | None = None
    ) -> None:
        """Persist high watermarks atomically (Kafka's replica.high.watermark.checkpoint).

        ``hws`` None: the HW of every log with replication enabled. Entries
        for partitions not given keep their last value; partitions no longer
        in this data dir are dropped. Nothing is written if nothing changed.
        """
        if hws is None:
            hws = {
                (topic, index): log.high_watermark
                for topic, index, log in self.partitions()
                if log.replication_enabled
            }
        if self._hw_checkpoint is None:
            self._hw_checkpoint = HighWatermarkCheckpoint(self.path)
        self._hw_checkpoint.write(hws, self._logs)

    # ------------------------------------------------------------ housekeeping

    def apply_retention(self) -> int:
        """Run retention on every partition; returns segments deleted."""
        return sum(log.apply_retention() for _, _, log in self.partitions())

    def maybe_flush(self) -> None:
        """flush.ms checks, flush of rolled segments, checkpoints: call periodically."""
        for _, _, log in self.partitions():
            log.maybe_flush()

    def close(self) -> None:
        """Flush and close every log, checkpoint the high watermarks of the
        replicated ones, then write the clean-shutdown marker.

        Waits for an admin change in progress (it holds the admin lock).
        """
        with self._admin_lock:
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
        if any(log.replication_enabled for log in logs):
            try:
                self.checkpoint_high_watermarks()
            except OSError as exc:
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

    def _check_open(self) -> None:
        if self._closed:
            raise LogClosed(str(self.path))

    def _make_logs(
        self, name: str, indexes: Iterable[int], config: LogConfig
    ) -> dict[tuple[str, int], PartitionLog]:
        """Make each partition's directory and empty log; on failure remove them all.

        Leftovers from an earlier life of the same name are discarded first.
        Caller holds the admin lock.
        """
        made: dict[tuple[str, int], PartitionLog] = {}
        directory = self.path
        try:
            wanted = {partition_dir_name(name, index): index for index in indexes}
            # One listing and one fsync for all leftovers, not a stat per partition.
            leftovers = [self.path / entry for entry in os.listdir(self.path) if entry in wanted]
            self._discard_directories(leftovers)
            for dir_name, index in wanted.items():
                directory = self.path / dir_name
                made[(name, index)] = _partition_log().create_new(
                    directory, config, self._clock
                )
            directory = self.path
            fsync_directory(self.path)  # the new directories, before topics.json names them
        except BaseException:
            if directory != self.path:
                shutil.rmtree(directory, ignore_errors=True)  # the one half made
            self._undo(made)
            raise
        return made

    def _persist_or_undo(
        self, topics: dict[str, TopicMetadata], made: dict[tuple[str, int], PartitionLog]
    ) -> None:
        """Persist ``topics``; if that fails, put the published table back and remove ``made``.

        A failed atomic replace may or may not have happened, so the old table
        is written again before any directory goes: only when topics.json is
        known not to name them are they removed (otherwise they stay, and the
        next open keeps or removes them as the file says).
        """
        try:
            self._persist_topics(topics)
        except BaseException:
            try:
                self._persist_topics(self._topics)
            except BaseException:
                _log.error("cannot restore %s after a failed change; next start reconciles",
                           self.path / TOPICS_FILE)
                for log in made.values():
                    log.close(flush=False)
                raise
            self._undo(made)
            raise

    def _undo(self, made: dict[tuple[str, int], PartitionLog]) -> None:
        """Close and remove logs made for a change that did not happen (best effort).

        No rename-then-fsync dance: topics.json does not name these
        directories, so a crash half-way leaves orphans the next open removes.
        """
        for (topic, index), log in made.items():
            try:
                log.close(flush=False)
            except OSError as exc:
                _log.warning("cannot close %s-%d after a failed change: %s", topic, index, exc)
            shutil.rmtree(self.path / partition_dir_name(topic, index), ignore_errors=True)

    def _persist_topics(self, topics: Mapping[str, TopicMetadata]) -> None:
        document = {
            "version": 1,
            "topics": [
                _topic_entry(meta) for meta in sorted(topics.values(), key=lambda m: m.name)
            ],
        }
        atomic_write(self.path / TOPICS_FILE, json.dumps(document, indent=1).encode())

    def _discard_directory(self, directory: Path) -> None:
        """Rename to ``*.<uuid>-delete`` (one atomic step), then remove."""
        self._discard_directories([directory])

    def _discard_directories(self, directories: Iterable[Path]) -> None:
        """Rename each to ``*.<uuid>-delete``, make the renames durable at once, remove.

        One directory fsync for all: deleting a topic of 10,000 partitions
        must not cost 10,000 of them.
        """
        doomed = []
        for directory in directories:
            if not directory.exists():
                continue
            target = directory.with_name(f"{directory.name}.{uuid.uuid4().hex}{DELETE_SUFFIX}")
            directory.rename(target)
            doomed.append(target)
        if not doomed:
            return
        fsync_directory(self.path)
        for target in doomed:
            shutil.rmtree(target, ignore_errors=True)

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
            if meta is not None and meta.is_hosted(index):
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
            None if "hosted" not in entry else frozenset(int(i) for i in entry["hosted"]),
        )
        topics[meta.name] = meta
    return topics


def _topic_entry(meta: TopicMetadata) -> dict:
    """A topic's topics.json entry; ``hosted`` only for a topic hosted in part, so a
    single-node data dir is written exactly as before."""
    entry: dict = {
        "name": meta.name,
        "topic_id": str(meta.topic_id),
        "partitions": meta.partitions,
        "configs": meta.configs,
    }
    if meta.hosted is not None:
        entry["hosted"] = sorted(meta.hosted)
    return entry


def _hosted_set(hosted: Iterable[int] | None, partitions: int) -> frozenset[int] | None:
    if hosted is None:
        return None
    chosen = frozenset(hosted)
    if any(not 0 <= i < partitions for i in chosen):
        raise ValueError(f"hosted partitions {sorted(chosen)} outside 0..{partitions - 1}")
    return chosen
