"""Kafka's error codes as data: names, retriable flags and one-line messages.

Names and numbers are Kafka's (``ErrorCode.NOT_LEADER_OR_FOLLOWER`` is 6).
``retriable`` says whether a client may retry the same request unchanged, as
Kafka's clients decide it. Messages are our own short wording. Everything
here is immutable and safe to share between threads.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum
from types import MappingProxyType

__all__ = ["ERRORS", "ErrorCode", "ErrorInfo", "error_info"]


class ErrorCode(IntEnum):
    """Every error code Kafka defines, by Kafka's name (int16 on the wire)."""

    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    OFFSET_OUT_OF_RANGE = 1
    CORRUPT_MESSAGE = 2
    UNKNOWN_TOPIC_OR_PARTITION = 3
    INVALID_FETCH_SIZE = 4
    LEADER_NOT_AVAILABLE = 5
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    BROKER_NOT_AVAILABLE = 8
    REPLICA_NOT_AVAILABLE = 9
    MESSAGE_TOO_LARGE = 10
    STALE_CONTROLLER_EPOCH = 11
    OFFSET_METADATA_TOO_LARGE = 12
    NETWORK_EXCEPTION = 13
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    INVALID_TOPIC_EXCEPTION = 17
    RECORD_LIST_TOO_LARGE = 18
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    INVALID_REQUIRED_ACKS = 21
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    TOPIC_AUTHORIZATION_FAILED = 29
    GROUP_AUTHORIZATION_FAILED = 30
    CLUSTER_AUTHORIZATION_FAILED = 31
    INVALID_TIMESTAMP = 32
    UNSUPPORTED_SASL_MECHANISM = 33
    ILLEGAL_SASL_STATE = 34
    UNSUPPORTED_VERSION = 35
    TOPIC_ALREADY_EXISTS = 36
    INVALID_PARTITIONS = 37
    INVALID_REPLICATION_FACTOR = 38
    INVALID_REPLICA_ASSIGNMENT = 39
    INVALID_CONFIG = 40
    NOT_CONTROLLER = 41
    INVALID_REQUEST = 42
    UNSUPPORTED_FOR_MESSAGE_FORMAT = 43
    POLICY_VIOLATION = 44
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45
    DUPLICATE_SEQUENCE_NUMBER = 46
    INVALID_PRODUCER_EPOCH = 47
    INVALID_TXN_STATE = 48
    INVALID_PRODUCER_ID_MAPPING = 49
    INVALID_TRANSACTION_TIMEOUT = 50
    CONCURRENT_TRANSACTIONS = 51
    TRANSACTION_COORDINATOR_FENCED = 52
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
    SECURITY_DISABLED = 54
    OPERATION_NOT_ATTEMPTED = 55
    KAFKA_STORAGE_ERROR = 56
    LOG_DIR_NOT_FOUND = 57
    SASL_AUTHENTICATION_FAILED = 58
    UNKNOWN_PRODUCER_ID = 59
    REASSIGNMENT_IN_PROGRESS = 60
    DELEGATION_TOKEN_AUTH_DISABLED = 61
    DELEGATION_TOKEN_NOT_FOUND = 62
    DELEGATION_TOKEN_OWNER_MISMATCH = 63
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED = 64
    DELEGATION_TOKEN_AUTHORIZATION_FAILED = 65
    DELEGATION_TOKEN_EXPIRED = 66
    INVALID_PRINCIPAL_TYPE = 67
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    FETCH_SESSION_ID_NOT_FOUND = 70
    INVALID_FETCH_SESSION_EPOCH = 71
    LISTENER_NOT_FOUND = 72
    TOPIC_DELETION_DISABLED = 73
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75
    UNSUPPORTED_COMPRESSION_TYPE = 76
    STALE_BROKER_EPOCH = 77
    OFFSET_NOT_AVAILABLE = 78
    MEMBER_ID_REQUIRED = 79
    PREFERRED_LEADER_NOT_AVAILABLE = 80
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    ELIGIBLE_LEADERS_NOT_AVAILABLE = 83
    ELECTION_NOT_NEEDED = 84
    NO_REASSIGNMENT_IN_PROGRESS = 85
    GROUP_SUBSCRIBED_TO_TOPIC = 86
    INVALID_RECORD = 87
    UNSTABLE_OFFSET_COMMIT = 88
    THROTTLING_QUOTA_EXCEEDED = 89
    PRODUCER_FENCED = 90
    RESOURCE_NOT_FOUND = 91
    DUPLICATE_RESOURCE = 92
    UNACCEPTABLE_CREDENTIAL = 93
    INCONSISTENT_VOTER_SET = 94
    INVALID_UPDATE_VERSION = 95
    FEATURE_UPDATE_FAILED = 96
    PRINCIPAL_DESERIALIZATION_FAILURE = 97
    SNAPSHOT_NOT_FOUND = 98
    POSITION_OUT_OF_RANGE = 99
    UNKNOWN_TOPIC_ID = 100
    DUPLICATE_BROKER_REGISTRATION = 101
    BROKER_ID_NOT_REGISTERED = 102
    INCONSISTENT_TOPIC_ID = 103
    INCONSISTENT_CLUSTER_ID = 104
    TRANSACTIONAL_ID_NOT_FOUND = 105
    FETCH_SESSION_TOPIC_ID_ERROR = 106
    INELIGIBLE_REPLICA = 107
    NEW_LEADER_ELECTED = 108
    OFFSET_MOVED_TO_TIERED_STORAGE = 109
    FENCED_MEMBER_EPOCH = 110
    UNRELEASED_INSTANCE_ID = 111
    UNSUPPORTED_ASSIGNOR = 112
    STALE_MEMBER_EPOCH = 113
    MISMATCHED_ENDPOINT_TYPE = 114
    UNSUPPORTED_ENDPOINT_TYPE = 115
    UNKNOWN_CONTROLLER_ID = 116
    UNKNOWN_SUBSCRIPTION_ID = 117
    TELEMETRY_TOO_LARGE = 118
    INVALID_REGISTRATION = 119
    TRANSACTION_ABORTABLE = 120
    INVALID_RECORD_STATE = 121
    SHARE_SESSION_NOT_FOUND = 122
    INVALID_SHARE_SESSION_EPOCH = 123
    FENCED_STATE_EPOCH = 124
    INVALID_VOTER_KEY = 125
    DUPLICATE_VOTER = 126
    VOTER_NOT_FOUND = 127
    INVALID_REGULAR_EXPRESSION = 128
    REBOOTSTRAP_REQUIRED = 129
    STREAMS_INVALID_TOPOLOGY = 130
    STREAMS_INVALID_TOPOLOGY_EPOCH = 131
    STREAMS_TOPOLOGY_FENCED = 132
    SHARE_SESSION_LIMIT_REACHED = 133


@dataclass(frozen=True, slots=True)
class ErrorInfo:
    """One row of Kafka's error table."""

    code: int
    name: str
    retriable: bool
    message: str


# (code, retriable, message)
_TABLE: tuple[tuple[ErrorCode, bool, str], ...] = (
    (
        ErrorCode.UNKNOWN_SERVER_ERROR,
        False,
        "The server hit an unexpected error while handling the request.",
    ),
    (ErrorCode.NONE, False, "No error."),
    (
        ErrorCode.OFFSET_OUT_OF_RANGE,
        False,
        "The requested offset lies outside the partition's stored range.",
    ),
    (
        ErrorCode.CORRUPT_MESSAGE,
        True,
        "A record failed its checksum or size check, or is otherwise corrupt.",
    ),
    (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        True,
        "This server does not host the topic or partition.",
    ),
    (ErrorCode.INVALID_FETCH_SIZE, False, "The requested fetch size is invalid."),
    (
        ErrorCode.LEADER_NOT_AVAILABLE,
        True,
        "The partition has no leader right now (an election may be running).",
    ),
    (
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        True,
        "This broker is not the leader or a follower of the partition.",
    ),
    (ErrorCode.REQUEST_TIMED_OUT, True, "The request timed out."),
    (ErrorCode.BROKER_NOT_AVAILABLE, False, "The broker is not available."),
    (ErrorCode.REPLICA_NOT_AVAILABLE, True, "The replica is not available for the partition."),
    (
        ErrorCode.MESSAGE_TOO_LARGE,
        False,
        "The request held a message larger than the server accepts.",
    ),
    (
        ErrorCode.STALE_CONTROLLER_EPOCH,
        False,
        "The request came from a controller with an old epoch.",
    ),
    (
        ErrorCode.OFFSET_METADATA_TOO_LARGE,
        False,
        "The metadata attached to the offset commit is too large.",
    ),
    (ErrorCode.NETWORK_EXCEPTION, True, "The server disconnected before a response was received."),
    (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, True, "The coordinator is still loading its state."),
    (ErrorCode.COORDINATOR_NOT_AVAILABLE, True, "The coordinator is not available."),
    (
        ErrorCode.NOT_COORDINATOR,
        True,
        "This broker is not the coordinator for the group or transaction.",
    ),
    (
        ErrorCode.INVALID_TOPIC_EXCEPTION,
        False,
        "The topic name is invalid or the operation is not allowed on it.",
    ),
    (
        ErrorCode.RECORD_LIST_TOO_LARGE,
        False,
        "The produced batch is larger than the segment size allows.",
    ),
    (
        ErrorCode.NOT_ENOUGH_REPLICAS,
        True,
        "Fewer in-sync replicas than required; the write was refused.",
    ),
    (
        ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        True,
        "The write was stored but too few in-sync replicas acknowledged it.",
    ),
    (ErrorCode.INVALID_REQUIRED_ACKS, False, "The acks value is not one of -1, 0 or 1."),
    (ErrorCode.ILLEGAL_GENERATION, False, "The generation id is not the group's current one."),
    (
        ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
        False,
        "The member's protocol type or protocols do not match the group's.",
    ),
    (ErrorCode.INVALID_GROUP_ID, False, "The group id is empty or invalid."),
    (ErrorCode.UNKNOWN_MEMBER_ID, False, "The member id is not known to the coordinator."),
    (
        ErrorCode.INVALID_SESSION_TIMEOUT,
        False,
        "The session timeout is outside the broker's allowed range.",
    ),
    (ErrorCode.REBALANCE_IN_PROGRESS, False, "The group is rebalancing; rejoin it."),
    (ErrorCode.INVALID_COMMIT_OFFSET_SIZE, False, "The committed offset data is too large."),
    (ErrorCode.TOPIC_AUTHORIZATION_FAILED, False, "Not authorized to access the topic."),
    (ErrorCode.GROUP_AUTHORIZATION_FAILED, False, "Not authorized to access the group."),
    (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, False, "Not authorized for this cluster operation."),
    (ErrorCode.INVALID_TIMESTAMP, False, "A record timestamp is outside the accepted range."),
    (
        ErrorCode.UNSUPPORTED_SASL_MECHANISM,
        False,
        "The broker does not support the requested SASL mechanism.",
    ),
    (ErrorCode.ILLEGAL_SASL_STATE, False, "The request is not valid in the current SASL state."),
    (
        ErrorCode.UNSUPPORTED_VERSION,
        False,
        "The broker does not support this version of the request.",
    ),
    (ErrorCode.TOPIC_ALREADY_EXISTS, False, "The topic already exists."),
    (ErrorCode.INVALID_PARTITIONS, False, "The number of partitions is invalid."),
    (ErrorCode.INVALID_REPLICATION_FACTOR, False, "The replication factor is invalid."),
    (ErrorCode.INVALID_REPLICA_ASSIGNMENT, False, "The replica assignment is invalid."),
    (ErrorCode.INVALID_CONFIG, False, "The configuration is invalid."),
    (ErrorCode.NOT_CONTROLLER, True, "This broker is not the active controller."),
    (ErrorCode.INVALID_REQUEST, False, "The request is malformed or not valid for this broker."),
    (
        ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT,
        False,
        "The operation needs a newer message format than the topic uses.",
    ),
    (ErrorCode.POLICY_VIOLATION, False, "The request breaks a configured policy."),
    (
        ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
        False,
        "The broker got a sequence number it did not expect.",
    ),
    (
        ErrorCode.DUPLICATE_SEQUENCE_NUMBER,
        False,
        "The broker already has a batch with this sequence number.",
    ),
    (
        ErrorCode.INVALID_PRODUCER_EPOCH,
        False,
        "The producer epoch is older than the one the broker knows.",
    ),
    (
        ErrorCode.INVALID_TXN_STATE,
        False,
        "The operation is not valid in the transaction's current state.",
    ),
    (
        ErrorCode.INVALID_PRODUCER_ID_MAPPING,
        False,
        "The producer id does not belong to the transactional id.",
    ),
    (
        ErrorCode.INVALID_TRANSACTION_TIMEOUT,
        False,
        "The transaction timeout exceeds the broker's maximum.",
    ),
    (
        ErrorCode.CONCURRENT_TRANSACTIONS,
        True,
        "Another transaction operation for this producer is still in progress.",
    ),
    (
        ErrorCode.TRANSACTION_COORDINATOR_FENCED,
        False,
        "A newer transaction coordinator has taken over.",
    ),
    (
        ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        False,
        "Not authorized to use the transactional id.",
    ),
    (ErrorCode.SECURITY_DISABLED, False, "Security features are disabled."),
    (
        ErrorCode.OPERATION_NOT_ATTEMPTED,
        False,
        "The operation was not tried, because another part of the request failed.",
    ),
    (ErrorCode.KAFKA_STORAGE_ERROR, True, "The log directory is offline or its disk failed."),
    (ErrorCode.LOG_DIR_NOT_FOUND, False, "The requested log directory is not known to the broker."),
    (ErrorCode.SASL_AUTHENTICATION_FAILED, False, "SASL authentication failed."),
    (ErrorCode.UNKNOWN_PRODUCER_ID, False, "The broker holds no state for this producer id."),
    (ErrorCode.REASSIGNMENT_IN_PROGRESS, False, "A partition reassignment is already running."),
    (
        ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED,
        False,
        "Delegation token authentication is disabled.",
    ),
    (ErrorCode.DELEGATION_TOKEN_NOT_FOUND, False, "The delegation token was not found."),
    (
        ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH,
        False,
        "The principal does not own the delegation token.",
    ),
    (
        ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED,
        False,
        "Delegation token requests are not allowed on this kind of connection.",
    ),
    (
        ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED,
        False,
        "Not authorized for the delegation token operation.",
    ),
    (ErrorCode.DELEGATION_TOKEN_EXPIRED, False, "The delegation token has expired."),
    (ErrorCode.INVALID_PRINCIPAL_TYPE, False, "The principal type is not supported."),
    (ErrorCode.NON_EMPTY_GROUP, False, "The group still has members."),
    (ErrorCode.GROUP_ID_NOT_FOUND, False, "The group id does not exist."),
    (ErrorCode.FETCH_SESSION_ID_NOT_FOUND, True, "The fetch session id was not found."),
    (
        ErrorCode.INVALID_FETCH_SESSION_EPOCH,
        True,
        "The fetch session epoch is not the expected one.",
    ),
    (
        ErrorCode.LISTENER_NOT_FOUND,
        True,
        "The leader has no endpoint on the listener the request came in on.",
    ),
    (ErrorCode.TOPIC_DELETION_DISABLED, False, "Topic deletion is disabled."),
    (ErrorCode.FENCED_LEADER_EPOCH, True, "The request's leader epoch is older than the broker's."),
    (
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        True,
        "The request's leader epoch is newer than the broker's.",
    ),
    (
        ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
        False,
        "The compression type is not supported by this request version.",
    ),
    (ErrorCode.STALE_BROKER_EPOCH, False, "The broker epoch is stale."),
    (ErrorCode.OFFSET_NOT_AVAILABLE, True, "The leader's high watermark has not caught up yet."),
    (
        ErrorCode.MEMBER_ID_REQUIRED,
        False,
        "The member must rejoin with the member id the coordinator gave it.",
    ),
    (ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, True, "The preferred leader is not available."),
    (ErrorCode.GROUP_MAX_SIZE_REACHED, False, "The group has reached its maximum size."),
    (
        ErrorCode.FENCED_INSTANCE_ID,
        False,
        "Another member with the same group.instance.id has fenced this one.",
    ),
    (
        ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE,
        True,
        "No eligible leader is available for the partition.",
    ),
    (ErrorCode.ELECTION_NOT_NEEDED, True, "The leader election was not needed."),
    (ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, False, "No partition reassignment is running."),
    (
        ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC,
        False,
        "The group is subscribed to the topic, so its offsets cannot be deleted.",
    ),
    (ErrorCode.INVALID_RECORD, False, "A record broke a broker rule and the batch was refused."),
    (
        ErrorCode.UNSTABLE_OFFSET_COMMIT,
        True,
        "Offsets of an open transaction are pending for the partition.",
    ),
    (ErrorCode.THROTTLING_QUOTA_EXCEEDED, True, "The request exceeded the throttling quota."),
    (
        ErrorCode.PRODUCER_FENCED,
        False,
        "A newer producer with the same transactional id has fenced this one.",
    ),
    (ErrorCode.RESOURCE_NOT_FOUND, False, "The resource does not exist."),
    (ErrorCode.DUPLICATE_RESOURCE, False, "The request names the same resource more than once."),
    (
        ErrorCode.UNACCEPTABLE_CREDENTIAL,
        False,
        "The credential does not meet the broker's requirements.",
    ),
    (ErrorCode.INCONSISTENT_VOTER_SET, False, "The voter sets disagree."),
    (ErrorCode.INVALID_UPDATE_VERSION, False, "The update version is invalid."),
    (ErrorCode.FEATURE_UPDATE_FAILED, False, "The feature update could not be applied."),
    (
        ErrorCode.PRINCIPAL_DESERIALIZATION_FAILURE,
        False,
        "The forwarded principal could not be deserialized.",
    ),
    (ErrorCode.SNAPSHOT_NOT_FOUND, False, "The requested snapshot was not found."),
    (ErrorCode.POSITION_OUT_OF_RANGE, False, "The requested position is outside the snapshot."),
    (ErrorCode.UNKNOWN_TOPIC_ID, True, "This server does not host a topic with the id."),
    (
        ErrorCode.DUPLICATE_BROKER_REGISTRATION,
        False,
        "The broker registration duplicates an existing one.",
    ),
    (ErrorCode.BROKER_ID_NOT_REGISTERED, False, "The broker id is not registered."),
    (ErrorCode.INCONSISTENT_TOPIC_ID, True, "The topic id does not match the one in the log."),
    (ErrorCode.INCONSISTENT_CLUSTER_ID, False, "The cluster id does not match the broker's."),
    (ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, False, "The transactional id was not found."),
    (
        ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR,
        True,
        "Topic ids in the fetch session are missing or inconsistent.",
    ),
    (ErrorCode.INELIGIBLE_REPLICA, False, "The new ISR holds a replica that may not join it."),
    (
        ErrorCode.NEW_LEADER_ELECTED,
        False,
        "A new leader was elected while the request was waiting.",
    ),
    (ErrorCode.OFFSET_MOVED_TO_TIERED_STORAGE, False, "The offset was moved to tiered storage."),
    (
        ErrorCode.FENCED_MEMBER_EPOCH,
        False,
        "The member epoch is fenced; the member must rejoin with epoch 0.",
    ),
    (
        ErrorCode.UNRELEASED_INSTANCE_ID,
        False,
        "The group.instance.id is still in use by another member.",
    ),
    (
        ErrorCode.UNSUPPORTED_ASSIGNOR,
        False,
        "The requested assignor is not supported by the group.",
    ),
    (ErrorCode.STALE_MEMBER_EPOCH, False, "The member epoch is stale."),
    (
        ErrorCode.MISMATCHED_ENDPOINT_TYPE,
        False,
        "The request went to an endpoint of the wrong type.",
    ),
    (
        ErrorCode.UNSUPPORTED_ENDPOINT_TYPE,
        False,
        "This endpoint type does not support the request.",
    ),
    (ErrorCode.UNKNOWN_CONTROLLER_ID, False, "The controller id is not known."),
    (
        ErrorCode.UNKNOWN_SUBSCRIPTION_ID,
        False,
        "The client telemetry subscription id is not known.",
    ),
    (ErrorCode.TELEMETRY_TOO_LARGE, False, "The client telemetry payload is too large."),
    (ErrorCode.INVALID_REGISTRATION, False, "The controller refused the broker registration."),
    (
        ErrorCode.TRANSACTION_ABORTABLE,
        False,
        "The server hit an error that the producer can recover from by aborting.",
    ),
    (
        ErrorCode.INVALID_RECORD_STATE,
        False,
        "The record's delivery state does not allow the operation.",
    ),
    (ErrorCode.SHARE_SESSION_NOT_FOUND, True, "The share session was not found."),
    (
        ErrorCode.INVALID_SHARE_SESSION_EPOCH,
        True,
        "The share session epoch is not the expected one.",
    ),
    (ErrorCode.FENCED_STATE_EPOCH, False, "The share-group state epoch did not match."),
    (ErrorCode.INVALID_VOTER_KEY, False, "The voter key does not match the replica's key."),
    (ErrorCode.DUPLICATE_VOTER, False, "The voter is already in the voter set."),
    (ErrorCode.VOTER_NOT_FOUND, False, "The voter is not in the voter set."),
    (ErrorCode.INVALID_REGULAR_EXPRESSION, False, "The regular expression is not valid."),
    (
        ErrorCode.REBOOTSTRAP_REQUIRED,
        False,
        "Client metadata is stale; the client should bootstrap again.",
    ),
    (ErrorCode.STREAMS_INVALID_TOPOLOGY, False, "The Streams topology is invalid."),
    (ErrorCode.STREAMS_INVALID_TOPOLOGY_EPOCH, False, "The Streams topology epoch is invalid."),
    (ErrorCode.STREAMS_TOPOLOGY_FENCED, False, "The Streams topology epoch is outdated."),
    (
        ErrorCode.SHARE_SESSION_LIMIT_REACHED,
        True,
        "The broker's limit of share sessions has been reached.",
    ),
)

ERRORS: Mapping[ErrorCode, ErrorInfo] = MappingProxyType(
    {code: ErrorInfo(int(code), code.name, retriable, text) for code, retriable, text in _TABLE}
)


def error_info(code: int) -> ErrorInfo:
    """The table row for ``code``; codes newer than this table get a generic row."""
    try:
        return ERRORS[ErrorCode(code)]
    except ValueError:
        return ErrorInfo(code, f"UNKNOWN_ERROR_CODE_{code}", False, f"Error code {code}.")

