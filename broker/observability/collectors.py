"""Prometheus collectors: read the broker's plain counters and its state view at scrape time.

Nothing here runs per request. The request counters (``RequestStats``) and the
partitions' traffic counters are plain ints the broker bumps; a scrape turns them,
and the ``BrokerStateView``'s snapshots of partitions and groups, into metric
families. Names follow Kafka's JMX metrics as the usual Prometheus JMX exporter
rules spell them (``kafka_<domain>_<type>_<name>``, lower case, counters with
``_total``), and kafka_exporter's for consumer groups; docs/operations.md lists
each with the name it follows. Runs on the event loop (the view's contract).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

if TYPE_CHECKING:
    from kafkette.broker.observability.request_log import RequestStats
    from kafkette.broker.state_view import BrokerStateView

LISTENER = "PLAINTEXT"  # the one listener kafkette serves, by Kafka's default name


class RequestCollector:
    """Requests, errors, request and queue time per API; connections."""

    def __init__(self, stats: RequestStats, view: BrokerStateView) -> None:
        self._stats = stats
        self._view = view

    def collect(self) -> Iterator[Metric]:
        stats = self._stats
        requests = CounterMetricFamily(
            "kafka_network_requestmetrics_requests",
            "Requests answered, per API and version (Kafka: RequestMetrics RequestsPerSec).",
            labels=["request", "version"],
        )
        for (api, version), count in sorted(stats.requests.items()):
            requests.add_metric([api, str(version)], count)
        yield requests
        errors = CounterMetricFamily(
            "kafka_network_requestmetrics_errors",
            "Non-zero error codes in responses, per API and error, one per partition or "
            "group that carries one (Kafka: RequestMetrics ErrorsPerSec).",
            labels=["request", "error"],
        )
        for (api, error), count in sorted(stats.errors.items()):
            errors.add_metric([api, error], count)
        yield errors
        yield _histogram(
            "kafka_network_requestmetrics_totaltimems",
            "Time in the broker per request, in ms: request-memory wait, handling and "
            "sending the response (Kafka: RequestMetrics TotalTimeMs).",
            stats.total_time,
        )
        yield _histogram(
            "kafka_network_requestmetrics_requestqueuetimems",
            "Time a request waited for request memory (queued.max.request.bytes) before "
            "it was read, in ms (Kafka: RequestMetrics RequestQueueTimeMs).",
            stats.queue_time,
        )
        summary = self._view.broker()
        connections = GaugeMetricFamily(
            "kafka_server_socket_server_metrics_connection_count",
            "Open client connections (Kafka: socket-server-metrics connection-count).",
            labels=["listener"],
        )
        connections.add_metric([LISTENER], summary.connections)
        yield connections
        created = CounterMetricFamily(
            "kafka_server_socket_server_metrics_connection_creation",
            "Connections accepted since metrics were turned on "
            "(Kafka: socket-server-metrics connection-creation-total).",
            labels=["listener"],
        )
        created.add_metric([LISTENER], stats.connections_created)
        yield created
        closed = CounterMetricFamily(
            "kafka_server_socket_server_metrics_connection_close",
            "Connections closed since metrics were turned on "
            "(Kafka: socket-server-metrics connection-close-total).",
            labels=["listener"],
        )
        closed.add_metric([LISTENER], stats.connections_closed)
        yield closed
        in_flight = GaugeMetricFamily(
            "kafkette_requests_in_flight",
            "Requests being handled right now (kafkette's own).",
        )
        in_flight.add_metric([], summary.requests_in_flight)
        yield in_flight


class LogCollector:
    """Traffic per topic; offsets, size and segments per partition; producer ids."""

    def __init__(self, view: BrokerStateView) -> None:
        self._view = view

    def collect(self) -> Iterator[Metric]:
        partitions = self._view.partitions()
        traffic = {
            "bytesin": ("bytes_in", "Bytes of record batches appended from Produce "
                        "(Kafka: BrokerTopicMetrics BytesInPerSec)."),
            "messagesin": ("records_in", "Records appended from Produce "
                           "(Kafka: BrokerTopicMetrics MessagesInPerSec)."),
            "bytesout": ("bytes_out", "Bytes of record batches returned to consumers' "
                         "Fetches, not followers' (Kafka: BrokerTopicMetrics BytesOutPerSec)."),
            "messagesout": ("records_out", "Offsets returned to consumers' Fetches, from the "
                            "fetch offset to the end of the last batch (kafkette's own: Kafka "
                            "has no MessagesOutPerSec)."),
        }  # fmt: skip
        for name, (field, help_text) in traffic.items():
            family = CounterMetricFamily(
                f"kafka_server_brokertopicmetrics_{name}", help_text, labels=["topic"]
            )
            per_topic: dict[str, int] = {}
            for p in partitions:
                per_topic[p.topic] = per_topic.get(p.topic, 0) + getattr(p, field)
            for topic, value in sorted(per_topic.items()):
                family.add_metric([topic], value)
            yield family
        gauges = {
            "logendoffset": ("log_end_offset", "The partition's log end offset "
                             "(Kafka: Log LogEndOffset)."),
            "logstartoffset": ("log_start_offset", "The partition's log start offset "
                               "(Kafka: Log LogStartOffset)."),
            "size": ("size_bytes", "Bytes of the partition's segments on disk "
                     "(Kafka: Log Size)."),
            "numlogsegments": ("segments", "Segments of the partition's log "
                               "(Kafka: Log NumLogSegments)."),
        }  # fmt: skip
        for name, (field, help_text) in gauges.items():
            family = GaugeMetricFamily(
                f"kafka_log_log_{name}", help_text, labels=["topic", "partition"]
            )
            for p in partitions:
                family.add_metric([p.topic, str(p.partition)], getattr(p, field))
            yield family
        hw = GaugeMetricFamily(
            "kafka_cluster_partition_highwatermark",
            "The partition's high watermark, the log end offset consumers see "
            "(kafkette's own, in Kafka's Partition naming).",
            labels=["topic", "partition"],
        )
        for p in partitions:
            hw.add_metric([p.topic, str(p.partition)], p.high_watermark)
        yield hw
        count = GaugeMetricFamily(
            "kafka_server_replicamanager_partitioncount",
            "Partitions with a log on this broker (Kafka: ReplicaManager PartitionCount).",
        )
        count.add_metric([], len(partitions))
        yield count
        producers = GaugeMetricFamily(
            "kafka_server_replicamanager_produceridcount",
            "Producer ids in the partitions' producer tables, summed over partitions "
            "(Kafka: ReplicaManager ProducerIdCount).",
        )
        producers.add_metric([], sum(p.producers for p in partitions))
        yield producers


class GroupCollector:
    """Consumer groups as kafka_exporter shows them: members, offsets, lag; and state."""

    def __init__(self, view: BrokerStateView) -> None:
        self._view = view

    def collect(self) -> Iterator[Metric]:
        groups = self._view.groups()
        members = GaugeMetricFamily(
            "kafka_consumergroup_members",
            "Members of the group (kafka_exporter: kafka_consumergroup_members).",
            labels=["consumergroup"],
        )
        state = GaugeMetricFamily(
            "kafka_consumergroup_state",
            "1 for the group's current state: Empty, PreparingRebalance, "
            "CompletingRebalance, Stable or Dead (kafkette's own, in kafka_exporter's naming).",
            labels=["consumergroup", "state"],
        )
        current = GaugeMetricFamily(
            "kafka_consumergroup_current_offset",
            "The group's committed offset per partition "
            "(kafka_exporter: kafka_consumergroup_current_offset).",
            labels=["consumergroup", "topic", "partition"],
        )
        lag = GaugeMetricFamily(
            "kafka_consumergroup_lag",
            "High watermark minus committed offset, as kafka-consumer-groups.sh --describe "
            "shows LAG (kafka_exporter: kafka_consumergroup_lag).",
            labels=["consumergroup", "topic", "partition"],
        )
        lag_sum = GaugeMetricFamily(
            "kafka_consumergroup_lag_sum",
            "The group's lag summed over a topic's partitions "
            "(kafka_exporter: kafka_consumergroup_lag_sum).",
            labels=["consumergroup", "topic"],
        )
        for group in groups:
            gid = group.group_id
            members.add_metric([gid], len(group.members))
            state.add_metric([gid, group.state], 1)
            per_topic: dict[str, int] = {}
            for row in group.lag:
                if row.committed_offset is not None:
                    current.add_metric([gid, row.topic, str(row.partition)], row.committed_offset)
                if row.lag is not None:
                    lag.add_metric([gid, row.topic, str(row.partition)], row.lag)
                    per_topic[row.topic] = per_topic.get(row.topic, 0) + row.lag
            for topic, total in sorted(per_topic.items()):
                lag_sum.add_metric([gid, topic], total)
        yield from (members, state, current, lag, lag_sum)


class ShareGroupCollector:
    """Share groups' record deliveries (KIP-932): Kafka's share-group-metrics
    record-acknowledgement count by ack type, and kafkette's own counts of records
    acquired, redelivered, freed by an expired acquisition lock or a closed session, and
    archived at the delivery count limit. Nothing until a share group is served."""

    def __init__(self, view: BrokerStateView) -> None:
        self._view = view

    def collect(self) -> Iterator[Metric]:
        totals = self._view.share_delivery_totals()
        if totals is None:
            return
        acknowledged = CounterMetricFamily(
            "kafka_server_share_group_metrics_record_acknowledgement",
            "Records acknowledged by share consumers, by acknowledgement type "
            "(Kafka: share-group-metrics record-acknowledgement-count{ack-type}).",
            labels=["ack_type"],
        )
        for name, value in sorted(totals.items()):
            if name.startswith("ack_"):
                acknowledged.add_metric([name[4:].capitalize()], value)
        yield acknowledged
        for name, help_text in (
            ("acquired", "Records acquired by share consumers (each delivery counts)."),
            ("redelivered", "Records acquired again after a release or an expired lock."),
            ("locks_expired", "Acquired records freed because their acquisition lock expired."),
            ("released_on_close", "Acquired records freed by a closed share session."),
            ("archived_at_limit", "Records archived at share.delivery.count.limit."),
        ):
            family = CounterMetricFamily(f"kafkette_share_records_{name}", help_text)
            family.add_metric([], totals.get(name, 0))
            yield family


def _histogram(name: str, help_text: str, per_api: dict) -> HistogramMetricFamily:
    family = HistogramMetricFamily(name, help_text, labels=["request"])
    for api, histogram in sorted(per_api.items()):
        family.add_metric([api], histogram.cumulative(), histogram.sum)
    return family
