"""KIP-848 consumer groups: the consumer-protocol state machine (``state``) and the
server-side assignors (``assignors``). See docs/consumer-group-protocol.md."""
