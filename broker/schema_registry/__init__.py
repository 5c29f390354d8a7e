"""The schema registry served inside the broker (docs/schema-registry.md): Confluent Schema
Registry's REST API, so confluent-kafka's and Confluent's Java serializers and Kafka Connect's
``AvroConverter`` find one at ``schema.registry.url`` without a second process.

The pieces, each with one job: ``records`` (the ``_schemas`` topic's key and value JSON, as
Confluent writes it), ``subjects`` (the registry state folded from that topic, pure, plus the
planning of writes), ``formats/`` (Avro, JSON Schema and Protobuf: parsing, canonical text,
compatibility), ``store`` (the ``_schemas`` partition: tail and append), ``leader`` (who may
write: the leader of ``_schemas``-0), ``forwarding`` (a follower hands writes to it),
``registry`` (the facade), ``api`` and ``http_server`` (the HTTP side). Nothing here is
imported unless ``schema.registry.listeners`` is set.
"""
