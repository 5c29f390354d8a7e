"""Every request field the definitions let a client send as null, and what null means.

The codec hands a handler None only where Kafka's definition makes the field
nullable at the version decoded; a null anywhere else is a malformed request and
closes the connection, as Kafka's generated readers do (``wire/codec.py``). So
this table, not a handler author's memory, is the list of Nones a handler must
expect. ``tests/broker/test_nullable_fields.py`` derives the same list from the
definitions for every served (API, version) and fails when they disagree: a new
API or version that adds a nullable field cannot be served until its meaning is
written here and its handler handles it. ``docs/protocol-coverage.md`` shows the
table to users.

Keys are (API name, dotted snake_case path from the request's top level).
"""

from __future__ import annotations

NULLABLE_REQUEST_FIELDS: dict[tuple[str, str], str] = {
    ("Produce", "transactional_id"): "not transactional (any other value: "
    "TRANSACTIONAL_ID_AUTHORIZATION_FAILED, transactions are not served)",
    ("Produce", "topic_data.partition_data.records"): "no records: INVALID_RECORD "
    "for that partition",
    ("Fetch", "cluster_id"): "no cluster check (the field is ignored, as Kafka does for clients)",
    ("Metadata", "topics"): "all topics (v1+; v0 says all with an empty array)",
    ("Metadata", "topics.name"): "the topic is named by its topic_id; unknown id: UNKNOWN_TOPIC_ID",
    ("OffsetCommit", "group_instance_id"): "a dynamic member",
    ("OffsetCommit", "topics.partitions.committed_metadata"): "no metadata: stored as ''",
    ("OffsetFetch", "topics"): "every partition the group has committed",
    ("OffsetFetch", "groups.member_id"): "no member check (KIP-848 members only)",
    ("OffsetFetch", "groups.topics"): "every partition the group has committed",
    ("JoinGroup", "group_instance_id"): "a dynamic member",
    ("JoinGroup", "reason"): "no reason given (only logged by Kafka)",
    ("Heartbeat", "group_instance_id"): "a dynamic member",
    ("LeaveGroup", "members.group_instance_id"): "a dynamic member, found by member_id",
    ("LeaveGroup", "members.reason"): "no reason given",
    ("SyncGroup", "group_instance_id"): "a dynamic member",
    ("SyncGroup", "protocol_type"): "not checked against the group's",
    ("SyncGroup", "protocol_name"): "not checked against the group's",
    ("CreateTopics", "topics.configs.value"): "INVALID_CONFIG for that topic "
    "('Null value not supported for topic configs'), as Kafka answers",
    ("DeleteTopics", "topics.name"): "the topic is named by its topic_id; unknown id: "
    "UNKNOWN_TOPIC_ID",
    ("InitProducerId", "transactional_id"): "an idempotent, non-transactional producer",
    ("TxnOffsetCommit", "group_instance_id"): "a dynamic member",
    ("TxnOffsetCommit", "topics.partitions.committed_metadata"): "no metadata: stored as ''",
    ("DescribeAcls", "resource_name_filter"): "any resource name",
    ("DescribeAcls", "principal_filter"): "any principal",
    ("DescribeAcls", "host_filter"): "any host",
    ("DeleteAcls", "filters.resource_name_filter"): "any resource name",
    ("DeleteAcls", "filters.principal_filter"): "any principal",
    ("DeleteAcls", "filters.host_filter"): "any host",
    ("DescribeConfigs", "resources.configuration_keys"): "every config of the resource",
    ("DescribeUserScramCredentials", "users"): "every user with credentials",
    ("DescribeLogDirs", "topics"): "every partition hosted here",
    ("AlterClientQuotas", "entries.entity.entity_name"): "the default entity of that type "
    "(--entity-default; <default> in ZooKeeper)",
    ("DescribeClientQuotas", "components.match"): "required for match_type 0 (exact), "
    "refused for 1 (default) and 2 (any): INVALID_REQUEST otherwise, as Kafka answers",
    ("AlterConfigs", "resources.configs.value"): "the config is left unset (back to its default)",
    ("CreatePartitions", "topics.assignments"): "the broker places the new partitions",
    ("ElectLeaders", "topic_partitions"): "every partition of every topic",
    ("AlterPartitionReassignments", "topics.partitions.replicas"): "cancel the partition's "
    "ongoing reassignment (NO_REASSIGNMENT_IN_PROGRESS when none)",
    ("ListPartitionReassignments", "topics"): "every ongoing reassignment",
    ("DescribeTopicPartitions", "cursor"): "start at the first topic (in name order)",
    ("IncrementalAlterConfigs", "resources.configs.value"): "SET: INVALID_CONFIG; DELETE: "
    "nothing needed; APPEND/SUBTRACT: an empty list",
    # KIP-848 (handlers/consumer_groups.py): null means "unchanged since the last heartbeat".
    ("ConsumerGroupHeartbeat", "instance_id"): "a dynamic member (or unchanged)",
    ("ConsumerGroupHeartbeat", "rack_id"): "no rack (or unchanged)",
    ("ConsumerGroupHeartbeat", "subscribed_topic_names"): "unchanged (first request: "
    "INVALID_REQUEST unless a regex is given)",
    ("ConsumerGroupHeartbeat", "subscribed_topic_regex"): "unchanged",
    ("ConsumerGroupHeartbeat", "server_assignor"): "unchanged (the group's default: uniform)",
    ("ConsumerGroupHeartbeat", "topic_partitions"): "unchanged (first request: INVALID_REQUEST)",
    # KIP-932 share groups (handlers/share_groups.py, share_fetch.py, share_group_offsets.py).
    ("ShareGroupHeartbeat", "rack_id"): "no rack (or unchanged)",
    ("ShareGroupHeartbeat", "subscribed_topic_names"): "unchanged (first request: "
    "INVALID_REQUEST)",
    ("ShareFetch", "group_id"): "INVALID_REQUEST (Invalid group id in the request.)",
    ("ShareFetch", "member_id"): "INVALID_REQUEST (Invalid member id in the request.)",
    ("ShareAcknowledge", "group_id"): "INVALID_REQUEST (Invalid group id in the request.)",
    ("ShareAcknowledge", "member_id"): "INVALID_REQUEST (Invalid member id in the request.)",
    ("DescribeShareGroupOffsets", "groups.topics"): "every topic the group has state for",
}
