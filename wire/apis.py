"""The one table of the APIs kafkette serves and the version ranges it advertises.

ApiVersions answers from this table, the codec refuses versions outside it,
and ``docs/protocol-coverage.md`` is generated from it
(``python -m kafkette.wire.coverage``). Ranges follow what Apache Kafka 4.0
serves (``wire/kafka40_ranges.py`` records its answer); Produce 13 and
OffsetCommit/OffsetFetch 10, Kafka 4.1's topics by id, are served beyond it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum


class ApiKey(IntEnum):
    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    SASL_HANDSHAKE = 17
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    DELETE_RECORDS = 21
    INIT_PRODUCER_ID = 22
    ADD_PARTITIONS_TO_TXN = 24
    ADD_OFFSETS_TO_TXN = 25
    END_TXN = 26
    WRITE_TXN_MARKERS = 27
    OFFSET_FOR_LEADER_EPOCH = 23
    TXN_OFFSET_COMMIT = 28
    DESCRIBE_ACLS = 29
    CREATE_ACLS = 30
    DELETE_ACLS = 31
    DESCRIBE_CONFIGS = 32
    ALTER_CONFIGS = 33
    ALTER_REPLICA_LOG_DIRS = 34
    DESCRIBE_LOG_DIRS = 35
    SASL_AUTHENTICATE = 36
    CREATE_PARTITIONS = 37
    DELETE_GROUPS = 42
    ELECT_LEADERS = 43
    INCREMENTAL_ALTER_CONFIGS = 44
    ALTER_PARTITION_REASSIGNMENTS = 45
    LIST_PARTITION_REASSIGNMENTS = 46
    OFFSET_DELETE = 47
    DESCRIBE_CLIENT_QUOTAS = 48
    ALTER_CLIENT_QUOTAS = 49
    DESCRIBE_USER_SCRAM_CREDENTIALS = 50
    ALTER_USER_SCRAM_CREDENTIALS = 51
    DESCRIBE_QUORUM = 55
    UPDATE_FEATURES = 57
    DESCRIBE_CLUSTER = 60
    DESCRIBE_PRODUCERS = 61
    DESCRIBE_TRANSACTIONS = 65
    LIST_TRANSACTIONS = 66
    CONSUMER_GROUP_HEARTBEAT = 68
    CONSUMER_GROUP_DESCRIBE = 69
    GET_TELEMETRY_SUBSCRIPTIONS = 71
    PUSH_TELEMETRY = 72
    LIST_CLIENT_METRICS_RESOURCES = 74
    DESCRIBE_TOPIC_PARTITIONS = 75
    SHARE_GROUP_HEARTBEAT = 76
    SHARE_GROUP_DESCRIBE = 77
    SHARE_FETCH = 78
    SHARE_ACKNOWLEDGE = 79
    INITIALIZE_SHARE_GROUP_STATE = 83
    READ_SHARE_GROUP_STATE = 84
    WRITE_SHARE_GROUP_STATE = 85
    DELETE_SHARE_GROUP_STATE = 86
    READ_SHARE_GROUP_STATE_SUMMARY = 87
    DESCRIBE_SHARE_GROUP_OFFSETS = 90
    ALTER_SHARE_GROUP_OFFSETS = 91
    DELETE_SHARE_GROUP_OFFSETS = 92


@dataclass(frozen=True, slots=True)
class ApiSpec:
    """What we serve of one API.

    ``min_version``/``max_version`` are advertised; ``decode_min`` is the
    lowest version the definitions (and so the codec) know. Produce advertises
    0 although only 3+ exist, as Kafka 4.0 does for librdkafka (KAFKA-18659).
    An API with ``advertised=False`` is served (the codec accepts its range)
    but left out of ApiVersions, as Kafka 4.0 leaves out the KIP-714 telemetry
    APIs when no metrics plugin is configured and still answers them.
    """

    key: ApiKey
    name: str  # definition file stem: ``Produce`` -> ProduceRequest.json/ProduceResponse.json
    min_version: int
    max_version: int
    decode_min: int
    note: str = ""
    advertised: bool = True

    @property
    def request_definition(self) -> str:
        return self.name + "Request"

    @property
    def response_definition(self) -> str:
        return self.name + "Response"


def _api(
    key: ApiKey,
    name: str,
    low: int,
    high: int,
    decode_min: int | None = None,
    note: str = "",
    *,
    advertised: bool = True,
) -> ApiSpec:
    return ApiSpec(
        key, name, low, high, low if decode_min is None else decode_min, note, advertised
    )


SUPPORTED: dict[ApiKey, ApiSpec] = {
    spec.key: spec
    for spec in (
        _api(
            ApiKey.PRODUCE,
            "Produce",
            0,
            13,
            3,
            "0-2 advertised for librdkafka, refused; 13 names topics by id (Kafka 4.1)",
        ),
        _api(
            ApiKey.FETCH, "Fetch", 4, 18,
            note="18's follower HighWatermark (KIP-1166, Kafka 4.2) is read and ignored",
        ),
        _api(ApiKey.LIST_OFFSETS, "ListOffsets", 1, 10),
        _api(ApiKey.METADATA, "Metadata", 0, 13),
        _api(ApiKey.OFFSET_COMMIT, "OffsetCommit", 2, 10, note="10 names topics by id (Kafka 4.1)"),
        _api(ApiKey.OFFSET_FETCH, "OffsetFetch", 1, 10, note="10 names topics by id (Kafka 4.1)"),
        _api(ApiKey.FIND_COORDINATOR, "FindCoordinator", 0, 6),
        _api(ApiKey.JOIN_GROUP, "JoinGroup", 2, 9, note="0-1 removed in Kafka 4.0 (KIP-896)"),
        _api(ApiKey.HEARTBEAT, "Heartbeat", 0, 4),
        _api(ApiKey.LEAVE_GROUP, "LeaveGroup", 0, 5),
        _api(ApiKey.SYNC_GROUP, "SyncGroup", 0, 5),
        _api(ApiKey.DESCRIBE_GROUPS, "DescribeGroups", 0, 6),
        _api(ApiKey.LIST_GROUPS, "ListGroups", 0, 5),
        _api(
            ApiKey.SASL_HANDSHAKE,
            "SaslHandshake",
            0,
            1,
            note="v0: the SASL tokens that follow are raw frames, not SaslAuthenticate",
        ),
        _api(ApiKey.API_VERSIONS, "ApiVersions", 0, 4),
        _api(ApiKey.CREATE_TOPICS, "CreateTopics", 2, 7),
        _api(ApiKey.DELETE_TOPICS, "DeleteTopics", 1, 6),
        _api(ApiKey.DELETE_RECORDS, "DeleteRecords", 0, 2),
        _api(ApiKey.INIT_PRODUCER_ID, "InitProducerId", 0, 5),
        _api(ApiKey.OFFSET_FOR_LEADER_EPOCH, "OffsetForLeaderEpoch", 2, 4),
        _api(
            ApiKey.TXN_OFFSET_COMMIT,
            "TxnOffsetCommit",
            0,
            5,
            note="5 (transaction.version 2) adds the offsets partition to the transaction",
        ),
        _api(ApiKey.DESCRIBE_ACLS, "DescribeAcls", 1, 3),
        _api(ApiKey.CREATE_ACLS, "CreateAcls", 1, 3),
        _api(ApiKey.DELETE_ACLS, "DeleteAcls", 1, 3),
        _api(ApiKey.DESCRIBE_CONFIGS, "DescribeConfigs", 1, 4),
        _api(ApiKey.ALTER_CONFIGS, "AlterConfigs", 0, 2),
        _api(ApiKey.SASL_AUTHENTICATE, "SaslAuthenticate", 0, 2),
        _api(ApiKey.CREATE_PARTITIONS, "CreatePartitions", 0, 3),
        _api(ApiKey.DELETE_GROUPS, "DeleteGroups", 0, 2),
        _api(ApiKey.ELECT_LEADERS, "ElectLeaders", 0, 2),
        _api(ApiKey.INCREMENTAL_ALTER_CONFIGS, "IncrementalAlterConfigs", 0, 1),
        _api(ApiKey.ALTER_PARTITION_REASSIGNMENTS, "AlterPartitionReassignments", 0, 1),
        _api(ApiKey.LIST_PARTITION_REASSIGNMENTS, "ListPartitionReassignments", 0, 0),
        _api(ApiKey.OFFSET_DELETE, "OffsetDelete", 0, 0),
        _api(ApiKey.DESCRIBE_CLIENT_QUOTAS, "DescribeClientQuotas", 0, 1),
        _api(ApiKey.ALTER_CLIENT_QUOTAS, "AlterClientQuotas", 0, 1),
        _api(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, "DescribeUserScramCredentials", 0, 0),
        _api(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, "AlterUserScramCredentials", 0, 0),
        _api(ApiKey.DESCRIBE_CLUSTER, "DescribeCluster", 0, 2),
        _api(ApiKey.ALTER_REPLICA_LOG_DIRS, "AlterReplicaLogDirs", 1, 2, note="one log dir"),
        _api(
            ApiKey.DESCRIBE_LOG_DIRS,
            "DescribeLogDirs",
            1,
            5,
            note="5's IsCordoned is always false (one log dir, never cordoned)",
        ),
        _api(
            ApiKey.DESCRIBE_QUORUM,
            "DescribeQuorum",
            0,
            2,
            note="the metadata authority (this node, or the cluster's controller) as one voter",
        ),
        _api(
            ApiKey.UPDATE_FEATURES,
            "UpdateFeatures",
            0,
            2,
            note="fixed feature levels: only the finalized level is accepted",
        ),
        _api(
            ApiKey.LIST_CLIENT_METRICS_RESOURCES,
            "ListConfigResources",
            0,
            0,
            note="Kafka 4.0's ListClientMetricsResources; 1 is Kafka 4.1's ListConfigResources",
        ),
        _api(ApiKey.DESCRIBE_TOPIC_PARTITIONS, "DescribeTopicPartitions", 0, 0),
        _api(
            ApiKey.ADD_PARTITIONS_TO_TXN,
            "AddPartitionsToTxn",
            0,
            5,
            note="4+ is the brokers' batched form (verify_only, or a TV2 leader's add)",
        ),
        _api(ApiKey.ADD_OFFSETS_TO_TXN, "AddOffsetsToTxn", 0, 4),
        _api(
            ApiKey.END_TXN,
            "EndTxn",
            0,
            5,
            note="5 is transaction.version 2 (KIP-890): the epoch is bumped and answered",
        ),
        _api(ApiKey.WRITE_TXN_MARKERS, "WriteTxnMarkers", 1, 1, note="2 is Kafka 4.2's (KIP-1228)"),
        _api(ApiKey.DESCRIBE_PRODUCERS, "DescribeProducers", 0, 0),
        _api(ApiKey.DESCRIBE_TRANSACTIONS, "DescribeTransactions", 0, 0),
        _api(ApiKey.LIST_TRANSACTIONS, "ListTransactions", 0, 1, note="2 is Kafka 4.1's"),
        _api(ApiKey.CONSUMER_GROUP_HEARTBEAT, "ConsumerGroupHeartbeat", 0, 1),
        _api(ApiKey.CONSUMER_GROUP_DESCRIBE, "ConsumerGroupDescribe", 0, 1),
        _api(
            ApiKey.SHARE_GROUP_HEARTBEAT,
            "ShareGroupHeartbeat",
            1,
            1,
            note="KIP-932 share groups, Kafka 4.3's range (v0 was the early-access version)",
        ),
        _api(ApiKey.SHARE_GROUP_DESCRIBE, "ShareGroupDescribe", 1, 1),
        _api(ApiKey.SHARE_FETCH, "ShareFetch", 1, 2, note="2 adds KIP-1222's renew"),
        _api(ApiKey.SHARE_ACKNOWLEDGE, "ShareAcknowledge", 1, 2, note="2 adds KIP-1222's renew"),
        _api(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, "DescribeShareGroupOffsets", 0, 1),
        _api(ApiKey.ALTER_SHARE_GROUP_OFFSETS, "AlterShareGroupOffsets", 0, 0),
        _api(ApiKey.DELETE_SHARE_GROUP_OFFSETS, "DeleteShareGroupOffsets", 0, 0),
        _api(
            ApiKey.INITIALIZE_SHARE_GROUP_STATE,
            "InitializeShareGroupState",
            0,
            0,
            note="the share coordinator's inter-broker state APIs (83-87), as Kafka's brokers",
        ),
        _api(ApiKey.READ_SHARE_GROUP_STATE, "ReadShareGroupState", 0, 0),
        _api(ApiKey.WRITE_SHARE_GROUP_STATE, "WriteShareGroupState", 0, 1,
             note="1 adds KIP-1226's DeliveryCompleteCount"),
        _api(ApiKey.DELETE_SHARE_GROUP_STATE, "DeleteShareGroupState", 0, 0),
        _api(ApiKey.READ_SHARE_GROUP_STATE_SUMMARY, "ReadShareGroupStateSummary", 0, 1),
        _api(
            ApiKey.GET_TELEMETRY_SUBSCRIPTIONS,
            "GetTelemetrySubscriptions",
            0,
            0,
            note="answered, not advertised: Kafka 4.0 without a metrics plugin (KIP-714)",
            advertised=False,
        ),
        _api(
            ApiKey.PUSH_TELEMETRY,
            "PushTelemetry",
            0,
            0,
            note="answered, not advertised: Kafka 4.0 without a metrics plugin (KIP-714)",
            advertised=False,
        ),
    )
}


def api_spec(api_key: int) -> ApiSpec | None:
    try:
        return SUPPORTED[ApiKey(api_key)]
    except ValueError:
        return None


# KIP-932's client APIs: advertised only where share groups are served.
SHARE_GROUP_APIS = frozenset({
    ApiKey.SHARE_GROUP_HEARTBEAT, ApiKey.SHARE_GROUP_DESCRIBE, ApiKey.SHARE_FETCH,
    ApiKey.SHARE_ACKNOWLEDGE, ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS,
    ApiKey.ALTER_SHARE_GROUP_OFFSETS, ApiKey.DELETE_SHARE_GROUP_OFFSETS,
    ApiKey.INITIALIZE_SHARE_GROUP_STATE, ApiKey.READ_SHARE_GROUP_STATE,
    ApiKey.WRITE_SHARE_GROUP_STATE, ApiKey.DELETE_SHARE_GROUP_STATE,
    ApiKey.READ_SHARE_GROUP_STATE_SUMMARY,
})


def api_versions_entries(share_groups: bool = True) -> list[dict]:
    """The ``api_keys`` array of an ApiVersions response: the advertised APIs only (the
    share-group ones only with ``share_groups``)."""
    return [
        {"api_key": int(spec.key), "min_version": spec.min_version, "max_version": spec.max_version}
        for spec in SUPPORTED.values()
        if spec.advertised and (share_groups or spec.key not in SHARE_GROUP_APIS)
    ]
