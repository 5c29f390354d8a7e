"""Request handlers, one module per family, in one table keyed by API key.

A handler is ``async def handle(broker, request) -> dict | None``: it gets the
decoded request (``request.body``, snake_case fields) and returns the response
body as a dict (fields it leaves out take the definition's defaults), or None
for a request that gets no response (Produce with acks=0).

``HANDLER_LOCATIONS`` is the whole table (API key -> ``module.function`` in this
package); ``HANDLERS`` imports a handler's module on the first request for its API
and keeps the function, so ``kafkette serve`` starts without importing the
handlers of features a client may never use (SASL, ACLs, quotas, telemetry,
reassignments, KIP-848 groups, transactions, ...). What ApiVersions advertises
comes from ``kafkette.wire.apis``, never from what has been imported.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from kafkette.wire.apis import SUPPORTED, ApiKey

if TYPE_CHECKING:
    from kafkette.broker.server import Broker
    from kafkette.wire.connection import Request

Handler = Callable[["Broker", "Request"], Awaitable[dict | None]]

HANDLER_LOCATIONS: dict[ApiKey, str] = {
    ApiKey.API_VERSIONS: "api_versions.handle_api_versions",
    ApiKey.SASL_HANDSHAKE: "sasl.handle_sasl_handshake",
    ApiKey.SASL_AUTHENTICATE: "sasl.handle_sasl_authenticate",
    ApiKey.DESCRIBE_CLIENT_QUOTAS: "client_quotas.handle_describe_client_quotas",
    ApiKey.ALTER_CLIENT_QUOTAS: "client_quotas.handle_alter_client_quotas",
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: (
        "user_scram_credentials.handle_describe_user_scram_credentials"
    ),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: (
        "user_scram_credentials.handle_alter_user_scram_credentials"
    ),
    ApiKey.METADATA: "metadata.handle_metadata",
    ApiKey.DESCRIBE_CLUSTER: "metadata.handle_describe_cluster",
    ApiKey.DESCRIBE_LOG_DIRS: "log_dirs.handle_describe_log_dirs",
    ApiKey.ALTER_REPLICA_LOG_DIRS: "log_dirs.handle_alter_replica_log_dirs",
    ApiKey.DESCRIBE_QUORUM: "describe_quorum.handle_describe_quorum",
    ApiKey.UPDATE_FEATURES: "update_features.handle_update_features",
    ApiKey.LIST_CLIENT_METRICS_RESOURCES: (
        "client_metrics_resources.handle_list_client_metrics_resources"
    ),
    ApiKey.GET_TELEMETRY_SUBSCRIPTIONS: "telemetry.handle_get_telemetry_subscriptions",
    ApiKey.PUSH_TELEMETRY: "telemetry.handle_push_telemetry",
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: "describe_topic_partitions.handle_describe_topic_partitions",
    ApiKey.SHARE_GROUP_HEARTBEAT: "share_groups.handle_share_group_heartbeat",
    ApiKey.SHARE_GROUP_DESCRIBE: "share_groups.handle_share_group_describe",
    ApiKey.SHARE_FETCH: "share_fetch.handle_share_fetch",
    ApiKey.SHARE_ACKNOWLEDGE: "share_fetch.handle_share_acknowledge",
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: (
        "share_group_offsets.handle_describe_share_group_offsets"
    ),
    ApiKey.ALTER_SHARE_GROUP_OFFSETS: "share_group_offsets.handle_alter_share_group_offsets",
    ApiKey.DELETE_SHARE_GROUP_OFFSETS: "share_group_offsets.handle_delete_share_group_offsets",
    ApiKey.INITIALIZE_SHARE_GROUP_STATE: "share_state.handle_initialize_share_group_state",
    ApiKey.READ_SHARE_GROUP_STATE: "share_state.handle_read_share_group_state",
    ApiKey.WRITE_SHARE_GROUP_STATE: "share_state.handle_write_share_group_state",
    ApiKey.DELETE_SHARE_GROUP_STATE: "share_state.handle_delete_share_group_state",
    ApiKey.READ_SHARE_GROUP_STATE_SUMMARY: (
        "share_state.handle_read_share_group_state_summary"
    ),
    ApiKey.ELECT_LEADERS: "elect_leaders.handle_elect_leaders",
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: (
        "partition_reassignments.handle_alter_partition_reassignments"
    ),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: (
        "partition_reassignments.handle_list_partition_reassignments"
    ),
    ApiKey.PRODUCE: "produce.handle_produce",
    ApiKey.FETCH: "fetch.handle_fetch",
    ApiKey.LIST_OFFSETS: "list_offsets.handle_list_offsets",
    ApiKey.OFFSET_FOR_LEADER_EPOCH: "offset_for_leader_epoch.handle_offset_for_leader_epoch",
    ApiKey.DELETE_RECORDS: "delete_records.handle_delete_records",
    ApiKey.CREATE_TOPICS: "admin_topics.handle_create_topics",
    ApiKey.DELETE_TOPICS: "admin_topics.handle_delete_topics",
    ApiKey.CREATE_PARTITIONS: "admin_topics.handle_create_partitions",
    ApiKey.DESCRIBE_ACLS: "acls.handle_describe_acls",
    ApiKey.CREATE_ACLS: "acls.handle_create_acls",
    ApiKey.DELETE_ACLS: "acls.handle_delete_acls",
    ApiKey.DESCRIBE_CONFIGS: "admin_configs.handle_describe_configs",
    ApiKey.ALTER_CONFIGS: "admin_configs.handle_alter_configs",
    ApiKey.INCREMENTAL_ALTER_CONFIGS: "admin_configs.handle_incremental_alter_configs",
    ApiKey.INIT_PRODUCER_ID: "init_producer_id.handle_init_producer_id",
    ApiKey.FIND_COORDINATOR: "find_coordinator.handle_find_coordinator",
    ApiKey.JOIN_GROUP: "classic_group_membership.handle_join_group",
    ApiKey.SYNC_GROUP: "classic_group_membership.handle_sync_group",
    ApiKey.HEARTBEAT: "classic_group_membership.handle_heartbeat",
    ApiKey.LEAVE_GROUP: "classic_group_membership.handle_leave_group",
    ApiKey.OFFSET_COMMIT: "offset_commit_fetch.handle_offset_commit",
    ApiKey.OFFSET_FETCH: "offset_commit_fetch.handle_offset_fetch",
    ApiKey.LIST_GROUPS: "group_admin.handle_list_groups",
    ApiKey.DESCRIBE_GROUPS: "group_admin.handle_describe_groups",
    ApiKey.CONSUMER_GROUP_HEARTBEAT: "consumer_groups.handle_consumer_group_heartbeat",
    ApiKey.CONSUMER_GROUP_DESCRIBE: "consumer_groups.handle_consumer_group_describe",
    ApiKey.DELETE_GROUPS: "group_admin.handle_delete_groups",
    ApiKey.OFFSET_DELETE: "group_admin.handle_offset_delete",
    ApiKey.TXN_OFFSET_COMMIT: "txn_offset_commit.handle_txn_offset_commit",
    ApiKey.ADD_PARTITIONS_TO_TXN: "transactions.handle_add_partitions_to_txn",
    ApiKey.ADD_OFFSETS_TO_TXN: "transactions.handle_add_offsets_to_txn",
    ApiKey.END_TXN: "transactions.handle_end_txn",
    ApiKey.WRITE_TXN_MARKERS: "transactions.handle_write_txn_markers",
    ApiKey.DESCRIBE_PRODUCERS: "transactions.handle_describe_producers",
    ApiKey.DESCRIBE_TRANSACTIONS: "transactions.handle_describe_transactions",
    ApiKey.LIST_TRANSACTIONS: "transactions.handle_list_transactions",
}

assert set(HANDLER_LOCATIONS) == set(SUPPORTED), "every advertised API has a handler"


class HandlerTable(dict[ApiKey, Handler]):
    """API key -> handler, filled on first use from ``HANDLER_LOCATIONS``.

    A dict holding the handlers resolved so far: a lookup of a resolved key is a plain
    dict lookup (``__missing__`` runs only on a miss), so the request path pays
    nothing after an API's first request. Index it (``table[key]``); ``get``, ``in``
    and iteration see only what has been resolved. Resolved in the event loop's
    thread; Python's import lock makes a concurrent first use from another thread
    safe too. An API key that has no handler raises ``KeyError``, as before.
    """

    def __missing__(self, key: ApiKey) -> Handler:
        handler = resolve(HANDLER_LOCATIONS[key])
        self[key] = handler
        return handler

    def resolve_all(self) -> None:
        """Import every handler now (tests; a caller that wants no first-use cost)."""
        for key, location in HANDLER_LOCATIONS.items():
            if key not in self:
                self[key] = resolve(location)


def resolve(location: str) -> Handler:
    """The handler at ``module.function`` of this package (imports the module)."""
    module, _, name = location.rpartition(".")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


HANDLERS = HandlerTable()
