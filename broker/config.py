"""Broker configuration: Apache Kafka's names and defaults, parsed once.

``--config KEY=VALUE`` and ``--config-file server.properties`` both feed
``load_config``. Every name is checked against ``BROKER_CONFIGS``: a name we
act on, or one Kafka defines that a single-node broker accepts with no effect
(replication, thread pools, KRaft wiring), so a quick-start properties file
loads. Anything else is an error at start. The result is a frozen
``BrokerConfig``; nothing downstream reads raw strings.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kafkette.broker.groups.config import GroupConfig
from kafkette.broker.network.connection_limits import parse_ip_overrides
from kafkette.broker.schema_registry.config import SchemaRegistryConfig
from kafkette.broker.transactions.config import TransactionConfig
from kafkette.log.config import CleanerConfig, LogConfig, log_config_from_broker_props

if TYPE_CHECKING:
    from kafkette.broker.cluster.config import ClusterConfig

LONG_MAX = 9223372036854775807
INT_MAX = 2147483647


class ConfigError(ValueError):
    """A configuration name or value the broker cannot start with."""


@dataclass(frozen=True, slots=True)
class ConfigDef:
    """One broker config Kafka defines: its type, default, doc and validator."""

    name: str
    type: str  # Kafka's ConfigType names: BOOLEAN STRING INT SHORT LONG DOUBLE LIST CLASS PASSWORD
    default: str | None
    doc: str
    effective: bool = True  # False: accepted for compatibility, no effect on one node
    at_least: int | None = None  # Kafka's ConfigDef.Range.atLeast, where Kafka has one
    choices: tuple[str, ...] | None = None  # Kafka's ValidString / ValidList
    at_most: int | None = None  # with at_least: Kafka's ConfigDef.Range.between



def _d(
    name: str,
    type_: str,
    default: str | None,
    doc: str,
    effective: bool = True,
    *,
    at_least: int | None = None,
    choices: tuple[str, ...] | None = None,
    at_most: int | None = None,
) -> ConfigDef:
    return ConfigDef(name, type_, default, doc, effective, at_least, choices, at_most)


def _between(name: str, default: int, low: int, high: int, doc: str) -> ConfigDef:
    return _d(name, "INT", str(default), doc, at_least=low, at_most=high)


BROKER_CONFIGS: dict[str, ConfigDef] = {
    c.name: c
    for c in (
        _d("node.id", "INT", "1", "The node id of this broker, also its broker id.", at_least=0),
        _d("broker.id", "INT", "1", "Alias of node.id."),
        _d("num.partitions", "INT", "1", "Partitions of an auto-created topic.", at_least=1),
        _d("auto.create.topics.enable", "BOOLEAN", "true", "Create topics on Metadata requests."),
        _d(
            "default.replication.factor", "INT", "1",
            "Replication factor of auto-created topics in a cluster (one node: always 1).",
        ),
        _d("delete.topic.enable", "BOOLEAN", "true", "Allow DeleteTopics."),
        _d("log.dirs", "STRING", None, "Data directory; --data-dir takes precedence."),
        _d("log.dir", "STRING", "./kafkette-data", "Data directory when log.dirs is unset."),
        _d("log.segment.bytes", "INT", "1073741824", "Maximum size of a segment file."),
        _d(
            "log.roll.hours", "INT", "168", "Maximum age of the active segment, in hours.",
            at_least=1,
        ),
        _d("log.roll.ms", "LONG", None, "Maximum age of the active segment; beats log.roll.hours."),
        _d("log.retention.hours", "INT", "168", "Retention time in hours."),
        _d("log.retention.minutes", "INT", None, "Retention time in minutes."),
        _d("log.retention.ms", "LONG", None, "Retention time; -1 keeps forever."),
        _d("log.retention.bytes", "LONG", "-1", "Retention size per partition; -1 unbounded."),
        _d(
            "log.retention.check.interval.ms", "LONG", "300000", "How often retention runs.",
            at_least=1,
        ),
        _d(
            "log.index.interval.bytes", "INT", "4096", "Bytes between offset index entries.",
            at_least=0,
        ),
        _d(
            "log.index.size.max.bytes", "INT", "10485760", "Maximum size of an index file.",
            at_least=4,
        ),
        _d(
            "log.flush.interval.messages", "LONG", str(LONG_MAX), "Messages between fsyncs.",
            at_least=1,
        ),
        _d("log.flush.interval.ms", "LONG", None, "Maximum time between fsyncs."),
        _d("log.flush.scheduler.interval.ms", "LONG", str(LONG_MAX), "How often flush runs."),
        _d(
            "log.cleanup.policy",
            "LIST",
            "delete",
            "delete, compact, or both (compact,delete): see docs/storage-format.md.",
            choices=("compact", "delete"),
        ),
        _d(
            "log.message.timestamp.type",
            "STRING",
            "CreateTime",
            "CreateTime or LogAppendTime.",
            choices=("CreateTime", "LogAppendTime"),
        ),
        _d(
            "log.segment.delete.delay.ms", "LONG", "60000", "Delay before a segment file goes.",
            at_least=0,
        ),
        _d("log.roll.jitter.ms", "LONG", None, "Jitter on segment roll.", False),
        _d("log.roll.jitter.hours", "INT", "0", "Jitter on segment roll.", False, at_least=0),
        _d("log.cleaner.enable", "BOOLEAN", "true", "Run the log cleaner (compaction)."),
        _d(
            "log.cleaner.delete.retention.ms", "LONG", "86400000",
            "How long tombstones stay after the cleaner first passed them.", at_least=0,
        ),
        _d("log.cleaner.threads", "INT", "1", "Log cleaner threads.", at_least=0),
        _d(
            "log.cleaner.backoff.ms", "LONG", "15000",
            "Sleep of the cleaner when no log is cleanable.", at_least=0,
        ),
        _d(
            "log.cleaner.io.max.bytes.per.second", "DOUBLE", "1.7976931348623157E308",
            "Cleaner I/O throttle (read + write).",
        ),
        _d(
            "log.cleaner.dedupe.buffer.size", "LONG", "134217728",
            "Memory of the cleaner's key map, split across threads.",
        ),
        _d("log.cleaner.io.buffer.size", "INT", "524288", "Ignored (reads are 1 MiB).", False),
        _d(
            "log.cleaner.io.buffer.load.factor", "DOUBLE", "0.9",
            "Ignored (the map fills to 0.9).", False,
        ),
        _d(
            "log.cleaner.min.cleanable.ratio", "DOUBLE", "0.5",
            "Dirty ratio a log needs before it is cleaned.",
        ),
        _d(
            "log.cleaner.min.compaction.lag.ms", "LONG", "0",
            "Records stay uncompacted at least this long.", at_least=0,
        ),
        _d(
            "log.cleaner.max.compaction.lag.ms", "LONG", str(LONG_MAX),
            "Records are compacted after at most this long (closed segments).", at_least=1,
        ),
        _d(
            "message.max.bytes", "INT", "1048588", "Largest record batch a topic accepts.",
            at_least=0,
        ),
        _d(
            "producer.id.expiration.ms", "INT", "86400000",
            "Idle time before a partition forgets an idempotent producer.", at_least=1,
        ),
        _d("socket.request.max.bytes", "INT", "104857600", "Largest request frame.", at_least=1),
        _d(
            "compression.type",
            "STRING",
            "producer",
            "Stored as produced (no recompression).",
            choices=("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
        ),
        _d(
            "min.insync.replicas", "INT", "1",
            "In-sync replicas an acks=all produce needs (always met on one node).", at_least=1,
        ),
        _d(
            "offsets.topic.num.partitions", "INT", "50", "Partitions of __consumer_offsets.",
            at_least=1,
        ),
        _d(
            "offsets.topic.replication.factor", "SHORT", "3",
            "Replication factor of __consumer_offsets in a cluster (capped at the live brokers).",
            at_least=1,
        ),
        _d(
            "offsets.topic.segment.bytes", "INT", "104857600",
            "segment.bytes of __consumer_offsets (a compacted topic).", at_least=1,
        ),
        _d(
            "offsets.retention.minutes", "INT", "10080", "How long committed offsets live.",
            at_least=1,
        ),
        _d(
            "offsets.retention.check.interval.ms", "LONG", "600000", "How often offsets expire.",
            at_least=1,
        ),
        _d(
            "offsets.commit.timeout.ms", "INT", "5000",
            "How long a group coordinator's write waits for its replicas (cluster mode).",
            at_least=1,
        ),
        _d("group.initial.rebalance.delay.ms", "INT", "3000", "Wait for more members."),
        _d("group.min.session.timeout.ms", "INT", "6000", "Smallest session timeout."),
        _d("group.max.session.timeout.ms", "INT", "1800000", "Largest session timeout."),
        _d("group.max.size", "INT", str(INT_MAX), "Largest group.", at_least=1),
        # KIP-848 consumer groups (broker/groups/consumer, docs/consumer-group-protocol.md).
        _d(
            "group.consumer.session.timeout.ms", "INT", "45000",
            "Session timeout of consumer-protocol members.", at_least=1,
        ),
        _d(
            "group.consumer.heartbeat.interval.ms", "INT", "5000",
            "Heartbeat interval given to consumer-protocol members.", at_least=1,
        ),
        _d("group.consumer.max.size", "INT", str(INT_MAX), "Largest consumer group.", at_least=1),
        _d(
            "group.consumer.assignors", "LIST", "uniform,range",
            "Server-side assignors; the first is the default.",
        ),
        _d(
            "group.consumer.migration.policy", "STRING", "bidirectional",
            "Classic <-> consumer group conversion.",
            choices=("disabled", "upgrade", "downgrade", "bidirectional"),
        ),
        # KIP-932 share groups (broker/share_groups, docs/share-groups.md): Kafka 4.3's
        # names, defaults and ranges.
        _between("group.share.session.timeout.ms", 45000, 1, INT_MAX,
                 "Session timeout of share-group members."),
        _between("group.share.min.session.timeout.ms", 45000, 1, INT_MAX,
                 "Smallest share.session.timeout.ms a group may set."),
        _between("group.share.max.session.timeout.ms", 60000, 1, INT_MAX,
                 "Largest share.session.timeout.ms a group may set."),
        _between("group.share.heartbeat.interval.ms", 5000, 1, INT_MAX,
                 "Heartbeat interval given to share-group members."),
        _between("group.share.min.heartbeat.interval.ms", 5000, 1, INT_MAX,
                 "Smallest share.heartbeat.interval.ms a group may set."),
        _between("group.share.max.heartbeat.interval.ms", 15000, 1, INT_MAX,
                 "Largest share.heartbeat.interval.ms a group may set."),
        _between("group.share.max.size", 200, 1, 1000, "Largest share group."),
        _d("group.share.assignors", "LIST", "simple", "Share-group assignors (only simple).",
           choices=("simple",)),
        _between("group.share.record.lock.duration.ms", 30000, 1000, 3600000,
                 "How long a share-group member holds an acquired record."),
        _between("group.share.min.record.lock.duration.ms", 15000, 1000, 30000,
                 "Smallest share.record.lock.duration.ms a group may set."),
        _between("group.share.max.record.lock.duration.ms", 60000, 30000, 3600000,
                 "Largest share.record.lock.duration.ms a group may set."),
        _between("group.share.delivery.count.limit", 5, 2, 10,
                 "Deliveries of a record before it is archived."),
        _between("group.share.min.delivery.count.limit", 2, 2, 5,
                 "Smallest share.delivery.count.limit a group may set."),
        _between("group.share.max.delivery.count.limit", 10, 5, 25,
                 "Largest share.delivery.count.limit a group may set."),
        _between("group.share.partition.max.record.locks", 2000, 100, 10000,
                 "In-flight records of one share partition."),
        _between("group.share.min.partition.max.record.locks", 100, 100, 2000,
                 "Smallest share.partition.max.record.locks a group may set."),
        _between("group.share.max.partition.max.record.locks", 4000, 2000, 10000,
                 "Largest share.partition.max.record.locks a group may set."),
        _between("group.share.max.share.sessions", 2000, 1, INT_MAX,
                 "Share sessions a broker keeps (ShareFetch)."),
        _d("offset.metadata.max.bytes", "INT", "4096", "Longest metadata of a commit."),
        _d(
            "transaction.state.log.replication.factor", "SHORT", "3",
            "Replication factor of __transaction_state in a cluster (capped at the live brokers).",
            at_least=1,
        ),
        _d(
            "transaction.state.log.min.isr", "INT", "2",
            "min.insync.replicas of __transaction_state in a cluster.", at_least=1,
        ),
        # The cluster (docs/cluster.md): read only when zookeeper.connect is set.
        _d(
            "zookeeper.connect", "STRING", None,
            "host:port[,host:port...][/chroot] of ZooKeeper; unset: a single node.",
        ),
        _d(
            "broker.rack", "STRING", None,
            "Rack of this broker, shown in Metadata (replica assignment is rack-unaware).",
        ),
        _d(
            "zookeeper.session.timeout.ms", "INT", "18000",
            "ZooKeeper session timeout: how long a dead broker stays registered.", at_least=1,
        ),
        _d(
            "zookeeper.connection.timeout.ms", "INT", None,
            "How long to wait for ZooKeeper at start; unset: zookeeper.session.timeout.ms.",
            at_least=1,
        ),
        _d(
            "max.incremental.fetch.session.cache.slots", "INT", "1000",
            "Incremental fetch sessions (KIP-227) kept at most; 0 turns them off.", at_least=0,
        ),
        _d(
            "replica.lag.time.max.ms", "LONG", "30000",
            "A follower not caught up for this long leaves the ISR.", at_least=1,
        ),
        _d(
            "replica.fetch.max.bytes", "INT", "1048576",
            "Bytes a follower asks per partition.", at_least=0,
        ),
        _d(
            "replica.fetch.response.max.bytes", "INT", "10485760",
            "Bytes a follower asks per fetch.", at_least=0,
        ),
        _d("replica.fetch.wait.max.ms", "INT", "500", "Follower fetch long-poll time."),
        _d("replica.fetch.min.bytes", "INT", "1", "Follower fetch minimum bytes."),
        _d(
            "replica.fetch.backoff.ms", "INT", "1000",
            "Follower pause after a failed fetch.", at_least=0,
        ),
        _d("replica.socket.timeout.ms", "INT", "30000", "Follower request timeout."),
        _d(
            "replica.high.watermark.checkpoint.interval.ms", "LONG", "5000",
            "How often high watermarks are written to replication-offset-checkpoint.",
        ),
        _d(
            "num.replica.fetchers", "INT", "1",
            "Fetcher tasks per leader broker (kafkette runs one).", at_least=1,
        ),
        _d(
            "unclean.leader.election.enable", "BOOLEAN", "false",
            "Elect a replica outside the ISR when no ISR member is alive (loses data).",
        ),
        _d(
            "auto.leader.rebalance.enable", "BOOLEAN", "true",
            "Move leadership back to preferred replicas in the ISR (docs/cluster.md).",
        ),
        _d(
            "leader.imbalance.check.interval.seconds", "LONG", "300",
            "How often the controller checks for leaders other than the preferred replica.",
            at_least=1,
        ),
        _d(
            "leader.imbalance.per.broker.percentage", "INT", "10",
            "Share of a broker's preferred partitions led elsewhere before a rebalance.",
            at_least=0,
        ),
        _d(
            "controlled.shutdown.enable", "BOOLEAN", "true",
            "Move leaderships away before stopping (docs/cluster.md).",
        ),
        _d(
            "transaction.state.log.num.partitions", "INT", "50",
            "Partitions of __transaction_state (used when it is created).", at_least=1,
        ),
        _d(
            "transaction.state.log.segment.bytes", "INT", "104857600",
            "segment.bytes of __transaction_state (a compacted topic).", at_least=1,
        ),
        _d(
            "transaction.state.log.load.buffer.size", "INT", "5242880",
            "Ignored: the load reads 4 MiB at a time.", False, at_least=1,
        ),
        _d(
            "transaction.max.timeout.ms", "INT", "900000",
            "Largest transaction.timeout.ms a producer may ask for.", at_least=1,
        ),
        _d(
            "transactional.id.expiration.ms", "INT", "604800000",
            "Idle time after which a transactional id is forgotten.", at_least=1,
        ),
        _d(
            "transaction.abort.timed.out.transaction.cleanup.interval.ms", "INT", "10000",
            "How often transactions past their timeout are aborted.", at_least=1,
        ),
        _d(
            "transaction.remove.expired.transaction.cleanup.interval.ms", "INT", "3600000",
            "How often expired transactional ids are removed.", at_least=1,
        ),
        _d(
            "transaction.partition.verification.enable", "BOOLEAN", "true",
            "Refuse transactional produce to partitions not added to the transaction.",
        ),
        _d("max.connections", "INT", str(INT_MAX), "Open connections at most.", at_least=0),
        _d(
            "quota.window.num", "INT", "11",
            "Samples kept for client quota rates (broker/quotas/).", at_least=1,
        ),
        _d(
            "quota.window.size.seconds", "INT", "1",
            "Time span of one client quota sample, in seconds.", at_least=1,
        ),
        _d(
            "max.connections.per.ip",
            "INT",
            str(INT_MAX),
            "Open connections per client address at most.",
            at_least=0,
        ),
        _d(
            "max.connections.per.ip.overrides",
            "STRING",
            "",
            "HOST:COUNT pairs overriding max.connections.per.ip.",
        ),
        _d("connections.max.idle.ms", "LONG", "600000", "Close connections idle this long."),
        _d(
            "queued.max.request.bytes",
            "LONG",
            "-1",
            "Bytes of requests being read or handled; -1: socket.request.max.bytes.",
        ),
        _d("queued.max.requests", "INT", "500", "Ignored: one request per connection.", False,
           at_least=1),
        _d("num.network.threads", "INT", "3", "Ignored: trio tasks.", False, at_least=1),
        _d("num.io.threads", "INT", "8", "Ignored: trio worker threads.", False, at_least=1),
        _d("num.recovery.threads.per.data.dir", "INT", "2", "Ignored.", False, at_least=1),
        _d("socket.send.buffer.bytes", "INT", "102400", "Ignored.", False),
        _d("socket.receive.buffer.bytes", "INT", "102400", "Ignored.", False),
        # --- listeners and TLS (broker/security/listeners.py, tls.py) ---
        _d(
            "listeners", "STRING", None,
            "NAME://HOST:PORT,... to listen on (Kafka's form); --listen HOST:PORT (one"
            " PLAINTEXT listener, default 127.0.0.1:9092) is the simple form and wins.",
        ),
        _d(
            "advertised.listeners", "STRING", None,
            "NAME://HOST:PORT per listener told to clients and other brokers (port 0: the"
            " bound port). With --listen: its PLAINTEXT entry, in a cluster only"
            " (--advertised-listener wins).",
        ),
        _d(
            "listener.security.protocol.map", "STRING",
            "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT",
            "LISTENER:PROTOCOL pairs: the security protocol of each listener name.",
        ),
        _d(
            "inter.broker.listener.name", "STRING", None,
            "The listener brokers of a cluster use among themselves.",
        ),
        _d(
            "security.inter.broker.protocol", "STRING", "PLAINTEXT",
            "The inter-broker listener by protocol name (when inter.broker.listener.name"
            " is not set).",
            choices=("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"),
        ),
        _d(
            "controller.listener.names", "STRING", None,
            "KRaft controller listeners: not bound (kafkette has no controller quorum).",
        ),
        _d(
            "ssl.keystore.type", "STRING", "JKS",
            "PKCS12, PEM, or JKS (a PKCS12 file; a real JKS file is refused).",
        ),
        _d("ssl.keystore.location", "STRING", None, "The keystore file."),
        _d("ssl.keystore.password", "PASSWORD", None, "The keystore's password (not PEM)."),
        _d("ssl.key.password", "PASSWORD", None, "The private key's password."),
        _d("ssl.keystore.key", "PASSWORD", None, "PEM keystore: the PKCS#8 key inline."),
        _d(
            "ssl.keystore.certificate.chain", "PASSWORD", None,
            "PEM keystore: the certificate chain inline.",
        ),
        _d("ssl.truststore.type", "STRING", "JKS", "PKCS12, PEM, or JKS (a PKCS12 file)."),
        _d(
            "ssl.truststore.location", "STRING", None,
            "The truststore file; unset: the system's CAs.",
        ),
        _d("ssl.truststore.password", "PASSWORD", None, "The truststore's password."),
        _d(
            "ssl.truststore.certificates", "PASSWORD", None,
            "PEM truststore: the trusted certificates inline.",
        ),
        _d(
            "ssl.client.auth", "STRING", "none",
            "Client certificates on SSL listeners: required, requested or none.",
            choices=("required", "requested", "none"),
        ),
        _d("ssl.enabled.protocols", "LIST", "TLSv1.2,TLSv1.3", "TLS versions accepted."),
        _d("ssl.protocol", "STRING", "TLSv1.3", "Ignored: ssl.enabled.protocols decides.", False),
        _d(
            "ssl.cipher.suites", "LIST", "",
            "Cipher suites (Java/IANA or OpenSSL names); empty: OpenSSL's defaults.",
        ),
        _d(
            "ssl.endpoint.identification.algorithm", "STRING", "https",
            "https: the inter-broker connection checks the other broker's host name.",
        ),
        _d(
            "ssl.principal.mapping.rules", "STRING", "DEFAULT",
            "RULE:pattern/replacement/[LU],...,DEFAULT: a client certificate's principal.",
        ),
        _d("ssl.keymanager.algorithm", "STRING", "SunX509", "Ignored (Java's).", False),
        _d("ssl.trustmanager.algorithm", "STRING", "PKIX", "Ignored (Java's).", False),
        _d("ssl.provider", "STRING", None, "Ignored (Java's).", False),
        _d("ssl.secure.random.implementation", "STRING", None, "Ignored (Java's).", False),
        _d("ssl.engine.factory.class", "CLASS", None, "Ignored (Java's).", False),
        _d("ssl.allow.dn.changes", "BOOLEAN", "false", "Ignored (no dynamic update).", False),
        _d("ssl.allow.san.changes", "BOOLEAN", "false", "Ignored (no dynamic update).", False),
        # --- end of listeners and TLS ---
        # --- SASL (broker/security/sasl/) ---
        _d(
            "sasl.enabled.mechanisms", "LIST", "GSSAPI",
            "SASL mechanisms SASL listeners offer: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512,"
            " OAUTHBEARER (GSSAPI is refused: no Kerberos).",
        ),
        _d(
            "sasl.mechanism.inter.broker.protocol", "STRING", "GSSAPI",
            "SASL mechanism brokers use between themselves on a SASL inter-broker listener.",
        ),
        _d(
            "sasl.jaas.config", "PASSWORD", None,
            "JAAS login module of SASL listeners (PlainLoginModule user_<name>=\"<password>\""
            " options are the PLAIN users); listener.name.<l>.<mechanism>.sasl.jaas.config wins.",
        ),
        _d(
            "connections.max.reauth.ms", "LONG", "0",
            "Longest SASL session before the client must re-authenticate (KIP-368); 0: never.",
        ),
        _d(
            "connection.failed.authentication.delay.ms", "INT", "100",
            "Delay before a failed authentication is answered and the connection closed.",
            at_least=0,
        ),
        _d(
            "sasl.server.max.receive.size", "INT", "524288",
            "Largest frame a client may send before it has authenticated.",
        ),
        _d(
            "sasl.server.callback.handler.class", "CLASS", None,
            "Refused when set: kafkette's own checks replace Kafka's callback handlers.",
        ),
        _d("sasl.kerberos.service.name", "STRING", None, "Ignored: no GSSAPI.", False),
        _d(
            "sasl.kerberos.principal.to.local.rules", "LIST", "DEFAULT", "Ignored: no GSSAPI.",
            False,
        ),
        _d(
            "sasl.oauthbearer.jwks.endpoint.url", "STRING", None,
            "Ignored: OAUTHBEARER tokens are checked as Kafka's unsecured validator does.", False,
        ),
        _d("sasl.oauthbearer.expected.audience", "LIST", None, "Ignored (see above).", False),
        _d("sasl.oauthbearer.expected.issuer", "STRING", None, "Ignored (see above).", False),
        _d("sasl.oauthbearer.sub.claim.name", "STRING", "sub", "Ignored (see above).", False),
        _d("sasl.oauthbearer.scope.claim.name", "STRING", "scope", "Ignored (see above).", False),
        _d(
            "sasl.oauthbearer.clock.skew.seconds", "INT", "30", "Ignored (see above).", False
        ),
        # --- end of SASL ---
        # --- authorizer (broker/security/authorizer/) ---
        _d(
            "authorizer.class.name", "STRING", "",
            "Kafka's StandardAuthorizer (or the old AclAuthorizer name) turns ACLs on;"
            " empty: no authorizer, everything allowed.",
            choices=(
                "",
                "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                "kafka.security.authorizer.AclAuthorizer",
                "kafka.security.auth.SimpleAclAuthorizer",
            ),
        ),
        _d(
            "super.users", "STRING", "",
            "Principals allowed everything, separated by ';' (User:admin;User:ops).",
        ),
        _d(
            "allow.everyone.if.no.acl.found", "BOOLEAN", "false",
            "Allow anyone to use a resource that no ACL covers.",
        ),
        # --- end of authorizer ---
        # --- schema registry (broker/schema_registry/; Confluent's names) ---
        _d(
            "schema.registry.listeners", "STRING", None,
            "[http://|https://]HOST:PORT of the schema registry (port 0: any free port);"
            " no scheme: https when the broker has an SSL listener. Unset: no registry.",
        ),
        _d(
            "schema.registry.advertised.url", "STRING", None,
            "The registry URL other brokers forward writes to (default: the listener's"
            " scheme and port with the broker's advertised host).",
        ),
        _d(
            "schema.compatibility.level", "STRING", "backward",
            "Default compatibility level: none, backward, backward_transitive, forward,"
            " forward_transitive, full or full_transitive (any case).",
        ),
        _d("kafkastore.topic", "STRING", "_schemas", "The topic that stores the schemas."),
        _d(
            "kafkastore.topic.replication.factor", "INT", "3",
            "Replicas of the schemas topic (at most the live brokers).", at_least=1,
        ),
        _d(
            "kafkastore.timeout.ms", "INT", "5000",
            "How long a registry write waits for the schemas topic to commit it.", at_least=0,
        ),
        _d("mode.mutability", "BOOLEAN", "true", "Allow changes of the registry's mode."),
        # --- end of schema registry ---
        _d("controller.quorum.voters", "STRING", None, "Ignored.", False),
        _d("controller.quorum.bootstrap.servers", "STRING", None, "Ignored.", False),
        _d(
            "process.roles",
            "LIST",
            None,
            "Ignored: broker and controller.",
            False,
            choices=("broker", "controller"),
        ),
        _d(
            "share.coordinator.state.topic.replication.factor",
            "SHORT",
            "3",
            "Replicas of __share_group_state in a cluster (at most the live brokers).",
            at_least=1,
        ),
        _d(
            "share.coordinator.state.topic.min.isr", "SHORT", "2",
            "min.insync.replicas of __share_group_state in a cluster.", at_least=1,
        ),
        _d(
            "share.coordinator.state.topic.num.partitions", "INT", "50",
            "Partitions of __share_group_state (at its creation).", at_least=1,
        ),
        _d(
            "share.coordinator.state.topic.segment.bytes", "INT", "104857600",
            "Segment size of __share_group_state.", at_least=1,
        ),
    )
}

# Topic-level configs: name -> (broker config that supplies the default, type, doc).
TOPIC_CONFIGS: dict[str, tuple[str | None, str, str]] = {
    "cleanup.policy": ("log.cleanup.policy", "LIST", "delete, compact or compact,delete."),
    "compression.type": ("compression.type", "STRING", "Stored as produced."),
    "delete.retention.ms": ("log.cleaner.delete.retention.ms", "LONG", "Tombstone retention."),
    "file.delete.delay.ms": ("log.segment.delete.delay.ms", "LONG", "Delay before deleting."),
    "flush.messages": ("log.flush.interval.messages", "LONG", "Messages between fsyncs."),
    "flush.ms": ("log.flush.interval.ms", "LONG", "Time between fsyncs."),
    "index.interval.bytes": ("log.index.interval.bytes", "INT", "Bytes between index entries."),
    "max.message.bytes": ("message.max.bytes", "INT", "Largest record batch."),
    "message.timestamp.type": (
        "log.message.timestamp.type",
        "STRING",
        "CreateTime or LogAppendTime.",
    ),
    "min.insync.replicas": (
        "min.insync.replicas", "INT", "In-sync replicas an acks=all produce needs.",
    ),
    "retention.bytes": ("log.retention.bytes", "LONG", "Retention size per partition."),
    "retention.ms": ("log.retention.ms", "LONG", "Retention time."),
    "segment.bytes": ("log.segment.bytes", "INT", "Segment file size."),
    "segment.index.bytes": ("log.index.size.max.bytes", "INT", "Index file size."),
    "segment.ms": ("log.roll.ms", "LONG", "Segment age before rolling."),
    "segment.jitter.ms": ("log.roll.jitter.ms", "LONG", "Jitter on segment roll."),
    "unclean.leader.election.enable": (
        "unclean.leader.election.enable", "BOOLEAN", "Elect out-of-sync replicas (loses data).",
    ),
    "min.cleanable.dirty.ratio": (
        "log.cleaner.min.cleanable.ratio", "DOUBLE", "Dirty ratio before a clean.",
    ),
    "min.compaction.lag.ms": (
        "log.cleaner.min.compaction.lag.ms", "LONG", "Minimum age before compaction.",
    ),
    "max.compaction.lag.ms": (
        "log.cleaner.max.compaction.lag.ms", "LONG", "Maximum age before compaction.",
    ),
    "preallocate": (None, "BOOLEAN", "Ignored."),
    "message.timestamp.before.max.ms": (None, "LONG", "Ignored."),
    "message.timestamp.after.max.ms": (None, "LONG", "Ignored."),
}
_TOPIC_ONLY_DEFAULTS = {
    "preallocate": "false",
    "message.timestamp.before.max.ms": str(LONG_MAX),
    "message.timestamp.after.max.ms": str(LONG_MAX),
}


def _parse_bool(name: str, raw: str) -> bool:
    value = raw.strip().lower()
    if value in ("true", "false"):
        return value == "true"
    raise ConfigError(f"{name} must be true or false, got {raw!r}")


def _parse_int(name: str, raw: str) -> int:
    try:
        return int(raw.strip())
    except ValueError:
        raise ConfigError(f"{name} must be a whole number, got {raw!r}") from None


# Java's integer types: a value outside them is refused as Kafka's parser refuses it.
_INTEGER_BITS = {"SHORT": 16, "INT": 32, "LONG": 64}


def check_value(name: str, type_: str, raw: str) -> None:
    """Raise ConfigError if ``raw`` is not a valid value of ``type_``."""
    if type_ == "BOOLEAN":
        _parse_bool(name, raw)
    elif type_ in _INTEGER_BITS:
        value = _parse_int(name, raw)
        bits = _INTEGER_BITS[type_]
        if not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
            raise ConfigError(f"{name}={raw} does not fit Kafka's {type_} type")
    elif type_ == "DOUBLE":
        try:
            float(raw)
        except ValueError:
            raise ConfigError(f"{name} must be a number, got {raw!r}") from None


@dataclass(frozen=True)
class BrokerConfig:
    """The broker's settings, typed. ``explicit`` keeps what the user set, by name."""

    node_id: int = 1
    num_partitions: int = 1
    auto_create_topics: bool = True
    default_replication_factor: int = 1
    delete_topic_enable: bool = True
    data_dir: Path = Path("./kafkette-data")
    message_max_bytes: int = 1048588
    socket_request_max_bytes: int = 104857600
    retention_check_interval_ms: int = 300000
    flush_scheduler_interval_ms: int = LONG_MAX
    max_connections: int = INT_MAX
    max_connections_per_ip: int = INT_MAX
    max_connections_per_ip_overrides: Mapping[str, int] = field(default_factory=dict)
    connections_max_idle_ms: int = 600000
    queued_max_request_bytes: int = -1
    log: LogConfig = field(default_factory=LogConfig)
    cleaner: CleanerConfig = field(default_factory=CleanerConfig)
    groups: GroupConfig = field(default_factory=GroupConfig)
    transactions: TransactionConfig = field(default_factory=TransactionConfig)
    # The schema registry (broker/schema_registry, docs/schema-registry.md): enabled when
    # ``schema.registry.listeners`` is set.
    schema_registry: SchemaRegistryConfig = field(default_factory=SchemaRegistryConfig)
    # Set when zookeeper.connect is: this broker is one of a cluster (docs/cluster.md).
    cluster: ClusterConfig | None = None
    explicit: Mapping[str, str] = field(default_factory=dict)
    # Configs given at start by a dedicated flag rather than KEY=VALUE (``--listen`` is
    # ``listeners``, ``--advertised-listener`` ``advertised.listeners``, ``--data-dir``
    # ``log.dirs``): Kafka reports them STATIC_BROKER_CONFIG like any other set at start.
    flags: Mapping[str, str] = field(default_factory=dict)

    def given_at_start(self) -> dict[str, str]:
        """Every config set at start, by name: the file, ``--config`` and the flags
        (a flag wins, as ``--listen`` replaces ``listeners=``)."""
        return {**self.explicit, **self.flags}

    def value_of(self, name: str) -> str | None:
        """A broker config's effective value as Kafka's DescribeConfigs shows it."""
        if name in self.flags:
            return self.flags[name]
        if name in self.explicit:
            return self.explicit[name]
        if name == "log.dirs":
            return str(self.data_dir)
        if name == "log.roll.ms":
            return str(self.log.segment_ms)
        if name == "log.retention.ms":
            return str(self.log.retention_ms)
        if name == "log.flush.interval.ms":
            return str(self.log.flush_interval_ms)
        definition = BROKER_CONFIGS.get(name)
        return None if definition is None else definition.default

    @property
    def request_memory_bytes(self) -> int:
        """The request memory pool's size: ``queued.max.request.bytes``, or when it is
        -1 (or 0) one ``socket.request.max.bytes``, so that a burst of huge frames
        cannot exhaust memory while a single largest request is still admissible.
        (Kafka's -1 means no pool at all; see docs/operations.md.)"""
        if self.queued_max_request_bytes > 0:
            return self.queued_max_request_bytes
        return self.socket_request_max_bytes

    def topic_default(self, name: str) -> str | None:
        """The broker-supplied default of a topic-level config."""
        if name in _TOPIC_ONLY_DEFAULTS:
            return _TOPIC_ONLY_DEFAULTS[name]
        entry = TOPIC_CONFIGS.get(name)
        if entry is None or entry[0] is None:
            return None
        if name == "segment.jitter.ms":
            return "0"
        return self.value_of(entry[0])


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """Java's properties lines: one ending in an odd number of backslashes goes on
    with the next, whose leading blanks are dropped (how a PEM key written across lines,
    ``ssl.keystore.key=-----BEGIN ... \\``, reads); comment lines never continue."""
    lines: list[tuple[int, str]] = []
    pending: str | None = None
    first = 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.lstrip()
        if pending is None:
            if not line.strip() or line[0] in "#!":
                continue
            first = number
        backslashes = len(line) - len(line.rstrip("\\"))
        if backslashes % 2:
            pending = (pending or "") + line[:-1]
            continue
        lines.append((first, (pending or "") + line))
        pending = None
    if pending is not None:
        lines.append((first, pending))
    return lines


def parse_properties(text: str) -> dict[str, str]:
    """A Java .properties file, the subset Kafka's server.properties uses."""
    props: dict[str, str] = {}
    for number, line in _logical_lines(text):
        stripped = line.strip()
        for sep in ("=", ":"):
            if sep in stripped:
                key, _, value = stripped.partition(sep)
                props[key.strip()] = value.strip()
                break
        else:
            raise ConfigError(f"line {number}: expected KEY=VALUE, got {stripped!r}")
    return props


def parse_assignments(items: Iterable[str]) -> dict[str, str]:
    """``--config KEY=VALUE`` items."""
    props: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--config expects KEY=VALUE, got {item!r}")
        props[key.strip()] = value.strip()
    return props


def _check_validator(definition: ConfigDef, raw: str) -> None:
    """Kafka's per-config validator (atLeast, ValidString, ValidList), same wording."""
    if definition.at_least is not None:
        value = _parse_int(definition.name, raw)
        if value < definition.at_least:
            raise ConfigError(
                f"invalid value {value} for configuration {definition.name}: "
                f"value must be at least {definition.at_least}"
            )
        if definition.at_most is not None and value > definition.at_most:
            raise ConfigError(
                f"invalid value {value} for configuration {definition.name}: "
                f"value must be no more than {definition.at_most}"
            )
    if definition.choices is not None:
        items = [item.strip() for item in raw.split(",")] if definition.type == "LIST" else [raw]
        for item in items:
            if item not in definition.choices:
                raise ConfigError(
                    f"invalid value {item!r} for configuration {definition.name}: "
                    f"string must be one of: {', '.join(definition.choices)}"
                )


def advertised_listener(config: BrokerConfig) -> tuple[str, int] | None:
    """``advertised.listeners``' PLAINTEXT endpoint (or its only one) as (host, port), in
    cluster mode only: a single node keeps ignoring it (a quick-start properties file
    naming another host or port changes nothing there, as before)."""
    raw = config.explicit.get("advertised.listeners", "").strip()
    if config.cluster is None:
        return None
    if not raw:
        return None
    entries = [e.strip() for e in raw.split(",") if e.strip()]
    chosen = next((e for e in entries if e.upper().startswith("PLAINTEXT://")), None)
    if chosen is None and len(entries) == 1:
        chosen = entries[0]
    _, sep, hostport = (chosen or "").partition("://")
    host, colon, port = hostport.rpartition(":")
    if not sep or not colon or not port.isdigit() or int(port) > 65535:
        raise ConfigError(
            f"advertised.listeners must name a PLAINTEXT://HOST:PORT listener, got {raw!r}"
        )
    return host.strip("[]"), int(port)


def _check_listeners(config: BrokerConfig) -> None:
    """``listeners``, the protocol map, ``advertised.listeners`` and the
    ``listener.name.<l>.ssl.*`` names (broker/security/listeners.py); the TLS files are
    read when the broker is made (``Broker.__init__``)."""
    from kafkette.broker.security.listeners import (
        ListenerConfigError,
        check_listener_prefixed,
        plan_listeners,
    )

    try:
        plan = plan_listeners(config.explicit, clustered=config.cluster is not None)
        tls_names = {name for name in BROKER_CONFIGS if name.startswith("ssl.")}
        check_listener_prefixed(config.explicit, plan, tls_names)
    except ListenerConfigError as exc:
        raise ConfigError(str(exc)) from None
    for key, raw in config.explicit.items():
        if key.startswith(LISTENER_PREFIX):
            suffix = key[len(LISTENER_PREFIX):].partition(".")[2]
            definition = BROKER_CONFIGS.get(suffix)
            if definition is not None and suffix.startswith("ssl."):
                check_value(key, definition.type, raw)
                _check_validator(definition, raw)


def _check_combinations(config: BrokerConfig) -> None:
    """The checks Kafka's KafkaConfig makes across configs (``validateValues``)."""
    if config.log.retention_ms == 0:
        raise ConfigError(
            "log.retention.ms must be unlimited (-1) or, greater than or equal to 1"
        )
    if 0 < config.queued_max_request_bytes < config.socket_request_max_bytes:
        raise ConfigError(
            "queued.max.request.bytes must be larger or equal to socket.request.max.bytes"
        )
    if config.max_connections_per_ip == 0 and not config.max_connections_per_ip_overrides:
        raise ConfigError(
            "max.connections.per.ip can be set to zero only if "
            "max.connections.per.ip.overrides property is set"
        )
    # Kafka: connection.failed.authentication.delay.ms (100) must stay below it.
    advertised_listener(config)
    _check_listeners(config)
    cluster = config.cluster
    if cluster is not None:
        if cluster.replica_socket_timeout_ms < cluster.replica_fetch_wait_max_ms:
            raise ConfigError(
                "replica.socket.timeout.ms should always be at least replica.fetch.wait.max.ms"
                " to prevent unnecessary socket timeouts"
            )
        if cluster.replica_fetch_wait_max_ms > cluster.replica_lag_time_max_ms:
            raise ConfigError(
                "replica.fetch.wait.max.ms should always be less than or equal to"
                " replica.lag.time.max.ms to prevent frequent changes in ISR"
            )
    if 0 <= config.connections_max_idle_ms <= 100:
        raise ConfigError(
            "connections.max.idle.ms must be above 100 "
            "(connection.failed.authentication.delay.ms), or negative to never close idle ones"
        )
    _check_share_group_bounds(config.groups)
    _check_schema_registry(config.explicit)


def _check_schema_registry(props: Mapping[str, str]) -> None:
    """``schema.compatibility.level`` (any case, as Confluent upper-cases it) and the
    form of ``schema.registry.listeners``."""
    from kafkette.broker.schema_registry.config import COMPATIBILITY_LEVELS

    level = props.get("schema.compatibility.level")
    if level is not None and level.strip().upper() not in COMPATIBILITY_LEVELS:
        raise ConfigError(
            f"invalid value {level!r} for configuration schema.compatibility.level: string"
            f" must be one of: {', '.join(name.lower() for name in COMPATIBILITY_LEVELS)}"
        )
    listeners = props.get("schema.registry.listeners", "").strip()
    if listeners:
        from kafkette.broker.network.http_listener import parse_listen_address

        try:
            parse_listen_address(listeners)
        except ValueError as exc:
            raise ConfigError(f"schema.registry.listeners: {exc}") from None


# Share-group settings Kafka keeps between a min and a max broker config.
_SHARE_BOUNDED = (
    "session.timeout.ms", "heartbeat.interval.ms", "record.lock.duration.ms",
    "delivery.count.limit", "partition.max.record.locks",
)


def _check_share_group_bounds(groups: GroupConfig) -> None:
    """Kafka's GroupCoordinatorConfig/ShareGroupConfig checks: each ``group.share.X``
    between ``group.share.min.X`` and ``group.share.max.X``, the heartbeat below the
    session timeout."""
    for suffix in _SHARE_BOUNDED:
        field_of = suffix.replace(".", "_")
        value = getattr(groups, f"group_share_{field_of}")
        low = getattr(groups, f"group_share_min_{field_of}")
        high = getattr(groups, f"group_share_max_{field_of}")
        if value < low:
            raise ConfigError(f"group.share.{suffix} must be greater than or equal to "
                              f"group.share.min.{suffix}")
        if value > high:
            raise ConfigError(f"group.share.{suffix} must be less than or equal to "
                              f"group.share.max.{suffix}")
    if groups.group_share_heartbeat_interval_ms >= groups.group_share_session_timeout_ms:
        raise ConfigError("group.share.heartbeat.interval.ms must be less than "
                          "group.share.session.timeout.ms")


LISTENER_PREFIX = "listener.name."


def load_config(props: Mapping[str, str], *, data_dir: Path | None = None) -> BrokerConfig:
    """Check every name and value and build the typed config."""
    # listener.name.<listener>.<config>: per-listener TLS and SASL settings, checked by
    # the security package against the listeners they name (broker/security/).
    per_listener = {name for name in props if name.startswith(LISTENER_PREFIX)}
    unknown = sorted(set(props) - set(BROKER_CONFIGS) - per_listener)
    if unknown:
        raise ConfigError(
            "unknown broker config "
            + ", ".join(unknown)
            + " (kafkette takes Apache Kafka's broker config names; see docs/operations.md)"
        )
    for name, raw in props.items():
        if name in per_listener:
            continue
        definition = BROKER_CONFIGS[name]
        check_value(name, definition.type, raw)
        _check_validator(definition, raw)
    if "group.consumer.assignors" in props:  # KIP-848 assignors: names or Kafka's classes
        from kafkette.broker.groups.consumer.assignors import assignor_names

        try:
            assignor_names(props["group.consumer.assignors"])
        except ValueError as exc:
            raise ConfigError(str(exc)) from None

    def get(name: str) -> str:
        value = props.get(name, BROKER_CONFIGS[name].default)
        assert value is not None
        return value

    def integer(name: str) -> int:
        return _parse_int(name, get(name))

    node_id = integer("node.id") if "node.id" in props else integer("broker.id")
    configured_dir = props.get("log.dirs", "").split(",")[0].strip() or get("log.dir")
    try:
        log = log_config_from_broker_props(props)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    try:
        ip_overrides = parse_ip_overrides(get("max.connections.per.ip.overrides"))
    except ValueError as exc:
        raise ConfigError(f"max.connections.per.ip.overrides: {exc}") from None
    cleaner = CleanerConfig(
        enable=_parse_bool("log.cleaner.enable", get("log.cleaner.enable")),
        threads=integer("log.cleaner.threads"),
        backoff_ms=integer("log.cleaner.backoff.ms"),
        io_max_bytes_per_second=float(get("log.cleaner.io.max.bytes.per.second")),
        dedupe_buffer_size=integer("log.cleaner.dedupe.buffer.size"),
    )
    config = BrokerConfig(
        node_id=node_id,
        num_partitions=integer("num.partitions"),
        auto_create_topics=_parse_bool(
            "auto.create.topics.enable", get("auto.create.topics.enable")
        ),
        default_replication_factor=integer("default.replication.factor"),
        delete_topic_enable=_parse_bool("delete.topic.enable", get("delete.topic.enable")),
        data_dir=data_dir if data_dir is not None else Path(configured_dir),
        message_max_bytes=integer("message.max.bytes"),
        socket_request_max_bytes=integer("socket.request.max.bytes"),
        retention_check_interval_ms=integer("log.retention.check.interval.ms"),
        flush_scheduler_interval_ms=integer("log.flush.scheduler.interval.ms"),
        max_connections=integer("max.connections"),
        max_connections_per_ip=integer("max.connections.per.ip"),
        max_connections_per_ip_overrides=ip_overrides,
        connections_max_idle_ms=integer("connections.max.idle.ms"),
        queued_max_request_bytes=integer("queued.max.request.bytes"),
        log=log,
        cleaner=cleaner,
        groups=GroupConfig.from_properties(props),
        transactions=TransactionConfig.from_properties(props),
        schema_registry=SchemaRegistryConfig.from_properties(props),
        cluster=_cluster_config(props, node_id),
        explicit=dict(props),
    )
    _check_combinations(config)
    _check_security(config)
    return config


def _check_security(config: BrokerConfig) -> None:
    """The security package's own checks of its SASL settings (broker/security/sasl/),
    when anything names SASL: a plain broker does not load that package at start."""
    if not any("sasl" in f"{name}={value}".lower() for name, value in config.explicit.items()):
        return
    from kafkette.broker.security.sasl.settings import SaslConfigError, check_sasl_config

    try:
        check_sasl_config(config.explicit)
    except SaslConfigError as exc:
        raise ConfigError(str(exc)) from None


def _cluster_config(props: Mapping[str, str], node_id: int) -> ClusterConfig | None:
    """The cluster settings, or None on a single node (nothing of the cluster package
    is imported then: a single node starts as fast as before)."""
    if not props.get("zookeeper.connect", "").strip():
        return None
    from kafkette.broker.cluster.config import ClusterConfig

    return ClusterConfig.from_properties(props, node_id)
