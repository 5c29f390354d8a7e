"""broker/security/tls_receive.py relies on a private attribute of trio's SSLStream; with
the installed trio the speed-up must be in place, and one receive_some must return every
TLS record already received (not one record per call)."""

from __future__ import annotations

import ssl

import trio
import trio.testing

from kafkette.broker.security.tls_receive import drain_tls_receives

RECORD = 1000  # bytes of plaintext per send_all: one TLS record each


def test_every_record_at_hand_comes_in_one_receive(tls_material) -> None:
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(
        str(tls_material.broker_cert_pem), str(tls_material.broker_key_pem)
    )
    client_context = ssl.create_default_context(cafile=str(tls_material.ca_pem))

    async def main() -> list[int]:
        client_raw, server_raw = trio.testing.memory_stream_pair()
        client = trio.SSLStream(client_raw, client_context, server_hostname="localhost")
        server = trio.SSLStream(server_raw, server_context, server_side=True)
        assert drain_tls_receives(server), "trio's SSLStream no longer has _ssl_object"
        async with trio.open_nursery() as nursery:
            nursery.start_soon(client.do_handshake)
            nursery.start_soon(server.do_handshake)
        for index in range(10):
            await client.send_all(bytes([index]) * RECORD)
        sizes = []
        received = 0
        with trio.fail_after(20):
            while received < 10 * RECORD:
                data = await server.receive_some(1 << 20)
                sizes.append(len(data))
                received += len(data)
        return sizes

    sizes = trio.run(main)
    # The memory stream hands over everything sent at once: the first receive decrypts
    # one record through trio, the rest come from OpenSSL's buffer in the same call.
    assert sizes == [10 * RECORD]
