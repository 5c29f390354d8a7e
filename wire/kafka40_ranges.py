"""What Apache Kafka 4.0 advertises in ApiVersions: the yardstick kafkette is measured by.

Recorded (as data, once) from a single-node Kafka 4.0.0 KRaft broker's ApiVersions
answer (``kafka-broker-api-versions.sh``), so that the coverage page and the API
probe (``compat-tests/test_api_probe.py``) compare kafkette against a list that does
not depend on kafkette's own table. GetTelemetrySubscriptions (71) and PushTelemetry
(72) are left out because Kafka 4.0 does not advertise them without a metrics plugin;
the share-group APIs (76-79, 83-87) are not advertised by Kafka 4.0 either.
"""

from __future__ import annotations

# api key -> (Kafka's name for the API, lowest advertised version, highest advertised version)
KAFKA_40_ADVERTISED: dict[int, tuple[str, int, int]] = {
    0: ('Produce', 0, 12),
    1: ('Fetch', 4, 17),
    2: ('ListOffsets', 1, 10),
    3: ('Metadata', 0, 13),
    8: ('OffsetCommit', 2, 9),
    9: ('OffsetFetch', 1, 9),
    10: ('FindCoordinator', 0, 6),
    11: ('JoinGroup', 2, 9),
    12: ('Heartbeat', 0, 4),
    13: ('LeaveGroup', 0, 5),
    14: ('SyncGroup', 0, 5),
    15: ('DescribeGroups', 0, 6),
    16: ('ListGroups', 0, 5),
    17: ('SaslHandshake', 0, 1),
    18: ('ApiVersions', 0, 4),
    19: ('CreateTopics', 2, 7),
    20: ('DeleteTopics', 1, 6),
    21: ('DeleteRecords', 0, 2),
    22: ('InitProducerId', 0, 5),
    23: ('OffsetForLeaderEpoch', 2, 4),
    24: ('AddPartitionsToTxn', 0, 5),
    25: ('AddOffsetsToTxn', 0, 4),
    26: ('EndTxn', 0, 5),
    27: ('WriteTxnMarkers', 1, 1),
    28: ('TxnOffsetCommit', 0, 5),
    29: ('DescribeAcls', 1, 3),
    30: ('CreateAcls', 1, 3),
    31: ('DeleteAcls', 1, 3),
    32: ('DescribeConfigs', 1, 4),
    33: ('AlterConfigs', 0, 2),
    34: ('AlterReplicaLogDirs', 1, 2),
    35: ('DescribeLogDirs', 1, 4),
    36: ('SaslAuthenticate', 0, 2),
    37: ('CreatePartitions', 0, 3),
    38: ('CreateDelegationToken', 1, 3),
    39: ('RenewDelegationToken', 1, 2),
    40: ('ExpireDelegationToken', 1, 2),
    41: ('DescribeDelegationToken', 1, 3),
    42: ('DeleteGroups', 0, 2),
    43: ('ElectLeaders', 0, 2),
    44: ('IncrementalAlterConfigs', 0, 1),
    45: ('AlterPartitionReassignments', 0, 0),
    46: ('ListPartitionReassignments', 0, 0),
    47: ('OffsetDelete', 0, 0),
    48: ('DescribeClientQuotas', 0, 1),
    49: ('AlterClientQuotas', 0, 1),
    50: ('DescribeUserScramCredentials', 0, 0),
    51: ('AlterUserScramCredentials', 0, 0),
    55: ('DescribeQuorum', 0, 2),
    57: ('UpdateFeatures', 0, 2),
    60: ('DescribeCluster', 0, 2),
    61: ('DescribeProducers', 0, 0),
    64: ('UnregisterBroker', 0, 0),
    65: ('DescribeTransactions', 0, 0),
    66: ('ListTransactions', 0, 1),
    68: ('ConsumerGroupHeartbeat', 0, 1),
    69: ('ConsumerGroupDescribe', 0, 1),
    74: ('ListClientMetricsResources', 0, 0),
    75: ('DescribeTopicPartitions', 0, 0),
    80: ('AddRaftVoter', 0, 0),
    81: ('RemoveRaftVoter', 0, 0),
}

# Where the definitions kafka-python ships name an API differently from Kafka 4.0's
# ApiVersions listing: Kafka 4.1 renamed ListClientMetricsResources to ListConfigResources
# (its v0 is the same message).
DEFINITION_NAMES: dict[int, str] = {74: "ListConfigResources"}


def definition_name(api_key: int) -> str:
    """The stem of the request/response definition files for ``api_key``."""
    return DEFINITION_NAMES.get(api_key, KAFKA_40_ADVERTISED[api_key][0])


def kafka_40_pairs() -> list[tuple[int, int]]:
    """Every (api key, version) pair Kafka 4.0 advertises, in key order."""
    return [
        (key, version)
        for key, (_, low, high) in sorted(KAFKA_40_ADVERTISED.items())
        for version in range(low, high + 1)
    ]
