"""ACLs for a mutual-TLS principal: the client certificate's subject, as Kafka names it.

One in-process broker: an SSL listener requiring client certificates beside a
PLAINTEXT listener, the StandardAuthorizer, no super user. ACLs made in the data dir
by a first start (User:ANONYMOUS as super user) give the test client's certificate
(``User:CN=client,OU=test,O=kafkette``) WRITE and READ on one topic; the client over
TLS may produce there, an anonymous PLAINTEXT client may not.
"""

from __future__ import annotations

from pathlib import Path

from confluent_kafka import KafkaError
from confluent_kafka.admin import AclOperation, NewTopic, ResourceType

from tests.security import acl_support as support

CLIENT = "User:CN=client,OU=test,O=kafkette"
TIMEOUT = 20


def test_a_client_certificate_subject_is_the_principal_acls_name(tmp_path: Path, tls) -> None:
    configs = {
        "listeners": "SSL://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
        **tls.broker(client_auth="required", listener="SSL"),
    }
    topic = support.name("mtls")
    broker = support.start_broker(tmp_path, configs, super_users="User:ANONYMOUS")
    try:
        admin = support.admin(str(broker.broker.endpoint_for("PLAINTEXT")))
        admin.create_topics([NewTopic(topic, 1)], request_timeout=20)[topic].result(TIMEOUT)
        support.create_acls(admin, [
            support.binding(ResourceType.TOPIC, topic, AclOperation.WRITE, principal=CLIENT),
        ])
    finally:
        broker.stop(timeout=30)
    broker = support.start_broker(tmp_path, configs)  # no super user now
    try:
        over_tls = {"bootstrap.servers": str(broker.broker.endpoint_for("SSL")),
                    **tls.confluent(mutual=True)}
        assert support.produce_one(over_tls, topic) is None
        anonymous = {"bootstrap.servers": str(broker.broker.endpoint_for("PLAINTEXT"))}
        error = support.produce_one(anonymous, topic)
        assert error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    finally:
        broker.stop(timeout=30)

