"""Where the session's jars come from: the cluster first, then a configured list, then Maven."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.common.session import JARS_ENV, JARS_FILE_ENV, SessionSetupError, session_jars


def test_jars_already_given_to_the_cluster_are_not_added_again() -> None:
    assert session_jars({"spark.jars": "/opt/delta.jar"}, {}) is None
    assert session_jars({"spark.jars.packages": "io.delta:delta-spark_2.13:4.0.0"}, {}) is None
    submitted = {"PYSPARK_SUBMIT_ARGS": "--packages io.delta:delta-spark_2.13:4.0.0 pyspark-shell"}
    assert session_jars({}, submitted) is None


def test_a_configured_classpath_wins_over_maven(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jar", tmp_path / "b.jar"
    a.write_bytes(b"")
    b.write_bytes(b"")
    assert session_jars({}, {JARS_ENV: f"{a},{b}"}) == [str(a), str(b)]
    listing = tmp_path / "classpath.txt"
    listing.write_text(f"{a}\n{b}\n")
    assert session_jars({}, {JARS_FILE_ENV: str(listing)}) == [str(a), str(b)]


def test_a_configured_jar_that_does_not_exist_is_named(tmp_path: Path) -> None:
    with pytest.raises(SessionSetupError, match=r"missing\.jar"):
        session_jars({}, {JARS_ENV: str(tmp_path / "missing.jar")})
    with pytest.raises(SessionSetupError, match=r"nowhere\.txt"):
        session_jars({}, {JARS_FILE_ENV: str(tmp_path / "nowhere.txt")})


def test_a_local_session_runs_on_the_client_compiler_alone(spark: object) -> None:
    """The local session's JVM was started with the option (read back from the JVM itself)."""
    jvm = spark.sparkContext._jvm  # type: ignore[attr-defined]
    arguments = list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    assert "-XX:TieredStopAtLevel=1" in arguments


def test_a_local_session_has_room_for_compiled_code_in_a_long_run(spark: object) -> None:
    """The JVM's own setting (48 MB by default on the client compiler alone): 256 MB."""
    jvm = spark.sparkContext._jvm  # type: ignore[attr-defined]
    management = jvm.java.lang.management.ManagementFactory
    bean = jvm.com.sun.management.HotSpotDiagnosticMXBean._java_lang_class
    diagnostics = management.getPlatformMXBean(bean)
    assert int(diagnostics.getVMOption("ReservedCodeCacheSize").getValue()) == 256 * 1024 * 1024


@pytest.mark.unit
def test_a_streaming_job_compiles_for_a_long_run_and_a_question_for_a_short_one() -> None:
    from jobs.common.session import session_settings

    option = "spark.driver.extraJavaOptions"
    question = session_settings("local[2]")[option].split()
    stream = session_settings("local[2]", streaming=True)[option].split()
    assert question == ["-XX:TieredStopAtLevel=1", "-XX:ReservedCodeCacheSize=256m"]
    # Both compilers, the same room, and the throughput collector.
    assert stream == ["-XX:ReservedCodeCacheSize=256m", "-XX:+UseParallelGC"]
    # A cluster's JVMs are the cluster's to configure; a given option wins everywhere.
    assert option not in session_settings("spark://127.0.0.1:7077", streaming=True)
    assert session_settings("local[2]", {option: "-Xss4m"}, streaming=True)[option] == "-Xss4m"
