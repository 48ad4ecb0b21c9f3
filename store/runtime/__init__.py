"""The local runtime: Kafka and Spark jars from Maven Central, and a real KRaft broker as a
local JVM process.  Used by the tests, the benchmarks and ``aclstore dev kafka``; with a
Docker engine, testcontainers can stand in for the local process.
"""
