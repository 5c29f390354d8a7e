"""Consumer groups: the pure state machine and the committed-offsets records."""
