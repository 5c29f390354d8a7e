"""ACLs and the authorizer, with the semantics of Kafka's StandardAuthorizer."""
