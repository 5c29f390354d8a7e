"""What Apache Kafka 4.3's definitions offer to clients: the second yardstick.

Read (as data, once) from the ``validVersions`` of Kafka 4.3.0's message definitions
whose listeners include the broker (``common/message/*.json`` in kafka-clients 4.3.0):
every API a 4.3 client may send to a broker and the versions a 4.3 broker knows. There
is no Kafka 4.3 broker here to ask for its ApiVersions answer, so two known
differences between definitions and answer are written down where the coverage page
uses them: InitProducerId 6 is flagged unstable (a 4.3 broker advertises 0-5 unless
``unstable.api.versions.enable``), and JoinGroup 0-1 are in the definition but were
removed from brokers in Kafka 4.0 (KIP-896).
"""

from __future__ import annotations

# api key -> (Kafka's name for the API, lowest version, highest version)
KAFKA_43_DEFINED: dict[int, tuple[str, int, int]] = {
    0: ('Produce', 3, 13),
    1: ('Fetch', 4, 18),
    2: ('ListOffsets', 1, 11),
    3: ('Metadata', 0, 13),
    8: ('OffsetCommit', 2, 10),
    9: ('OffsetFetch', 1, 10),
    10: ('FindCoordinator', 0, 6),
    11: ('JoinGroup', 0, 9),
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
    22: ('InitProducerId', 0, 6),  # 6 is flagged unstable
    23: ('OffsetForLeaderEpoch', 2, 4),
    24: ('AddPartitionsToTxn', 0, 5),
    25: ('AddOffsetsToTxn', 0, 4),
    26: ('EndTxn', 0, 5),
    27: ('WriteTxnMarkers', 1, 2),
    28: ('TxnOffsetCommit', 0, 5),
    29: ('DescribeAcls', 1, 3),
    30: ('CreateAcls', 1, 3),
    31: ('DeleteAcls', 1, 3),
    32: ('DescribeConfigs', 1, 4),
    33: ('AlterConfigs', 0, 2),
    34: ('AlterReplicaLogDirs', 1, 2),
    35: ('DescribeLogDirs', 1, 5),
    36: ('SaslAuthenticate', 0, 2),
    37: ('CreatePartitions', 0, 3),
    38: ('CreateDelegationToken', 1, 3),
    39: ('RenewDelegationToken', 1, 2),
    40: ('ExpireDelegationToken', 1, 2),
    41: ('DescribeDelegationToken', 1, 3),
    42: ('DeleteGroups', 0, 2),
    43: ('ElectLeaders', 0, 2),
    44: ('IncrementalAlterConfigs', 0, 1),
    45: ('AlterPartitionReassignments', 0, 1),
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
    66: ('ListTransactions', 0, 2),
    68: ('ConsumerGroupHeartbeat', 0, 1),
    69: ('ConsumerGroupDescribe', 0, 1),
    71: ('GetTelemetrySubscriptions', 0, 0),
    72: ('PushTelemetry', 0, 0),
    74: ('ListConfigResources', 0, 1),
    75: ('DescribeTopicPartitions', 0, 0),
    76: ('ShareGroupHeartbeat', 1, 1),
    77: ('ShareGroupDescribe', 1, 1),
    78: ('ShareFetch', 1, 2),
    79: ('ShareAcknowledge', 1, 2),
    80: ('AddRaftVoter', 0, 1),
    81: ('RemoveRaftVoter', 0, 0),
    83: ('InitializeShareGroupState', 0, 0),
    84: ('ReadShareGroupState', 0, 0),
    85: ('WriteShareGroupState', 0, 1),
    86: ('DeleteShareGroupState', 0, 0),
    87: ('ReadShareGroupStateSummary', 0, 1),
    88: ('StreamsGroupHeartbeat', 0, 0),
    89: ('StreamsGroupDescribe', 0, 0),
    90: ('DescribeShareGroupOffsets', 0, 1),
    91: ('AlterShareGroupOffsets', 0, 0),
    92: ('DeleteShareGroupOffsets', 0, 0),
}
