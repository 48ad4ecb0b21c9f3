"""Developer tooling, kept out of the product packages (store, replicator, jobs, schemas).

Jar resolution with the machine's Maven (:mod:`devtools.maven`), a real KRaft broker as a local
JVM process (:mod:`devtools.kafka_process`), compiled Java harnesses that ask Kafka's own
classes (:mod:`devtools.java`) and the conformance-vector runner (:mod:`devtools.conformance`).
Used by the tests, the benchmarks and ``python -m devtools jars|kafka``; with a Docker engine,
testcontainers can stand in for the local broker.  Nothing in the product imports it
(``tests/test_architecture.py``).
"""
