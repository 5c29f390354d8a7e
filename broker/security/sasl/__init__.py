"""SASL authentication: PLAIN, SCRAM-SHA-256/512 and OAUTHBEARER, as Kafka's broker does."""
