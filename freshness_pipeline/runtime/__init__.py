"""The processes and servers the project starts and stops by pid: the Spark service and
cluster, Kafka, Postgres, the object store, the stack that runs them together."""
