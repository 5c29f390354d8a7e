"""Client telemetry (KIP-714) as a Kafka 4.0 broker without a metrics plugin answers it.

A client asks GetTelemetrySubscriptions for what to collect (the metrics of every
client-metrics subscription whose ``match`` fits it, the shortest of their push
intervals) and then pushes them with PushTelemetry. With no ClientTelemetryReceiver
plugin Kafka 4.0 leaves both APIs out of ApiVersions, yet still serves them: it
assigns instance ids, computes subscription ids, throttles, checks and decompresses
the payload, and then hands it to no one. kafkette does the same and keeps nothing
of a payload.

What a client is, per instance id, lives here in memory, as in Kafka: lost at a
restart, and dropped when the connection that last used it closes (Kafka's
ClientConnectionDisconnectListener) or after max(60 s, 3 push intervals) unused. The
subscription id derives only from the metrics, the interval and the instance id, so
after a restart a client's old id still matches and its next push is accepted (the
first push of a fresh instance is). Every behaviour below was measured against Kafka
4.0.0:

- the subscription id is CRC32C of Java's ``HashSet.toString()`` of the requested
  metrics followed by the push interval, XORed with the instance id's Java hash, so
  the metrics are listed in Java's HashSet order and a client sees the ids a Kafka
  broker gave it in the measured cases (Java breaks ties within a HashSet bucket by
  chain order, which matches insertion order here only while no bucket is treeified
  or resized mid-chain);
- a subscription with ``*`` among its metrics asks for everything: the list is ``["*"]``;
- any change to the subscriptions re-evaluates an instance at its next request (with
  the identity recorded at its first), and that re-evaluation resets its throttling;
- GetTelemetrySubscriptions is throttled (THROTTLING_QUOTA_EXCEEDED) until a push
  interval has passed since the instance's last accepted get or push, even right after
  a push that failed with UNKNOWN_SUBSCRIPTION_ID or UNSUPPORTED_COMPRESSION_TYPE
  (Kafka 4.0's exemption for those is dead code: see ``accept_get``);
- PushTelemetry checks, in this order: a terminating instance (INVALID_REQUEST),
  throttling (the push timestamp is updated whenever a push may come, terminating or
  not; a terminating push is never refused for it; a push right after a get is always
  accepted), the subscription id (UNKNOWN_SUBSCRIPTION_ID), the compression
  (UNSUPPORTED_COMPRESSION_TYPE), the size (TELEMETRY_TOO_LARGE), and that the payload
  decompresses (INVALID_RECORD). Whatever the outcome, the instance's terminating flag
  then becomes the push's (Kafka sets it in a ``finally``): a terminating push followed
  by two plain ones answers 0, INVALID_REQUEST, then THROTTLING_QUOTA_EXCEEDED.
  Every outcome is kept as the instance's last error (NONE after an accepted get).

The modules:

- instances.py: the client instances and their throttling (``TelemetryState``);
- subscription_ids.py: the subscription id, hashed as Java hashes it;
- push.py: PushTelemetry's checks;
- resources.py: the subscriptions as CLIENT_METRICS config resources (their checks);
- subscriptions.py: the broker's subscription store, chosen at start: file_store.py
  (``client-metrics.json``) on a single node, zk_store.py (``/config/client-metrics``)
  in a cluster.

The handlers (``handlers/telemetry.py``, ``handlers/client_metrics_resources.py``) only decode,
call these and encode.
"""
