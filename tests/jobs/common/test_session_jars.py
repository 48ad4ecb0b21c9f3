"""Where a job finds its jars in development: the list ``python -m devtools jars`` writes."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.common.session import SessionSetupError, jars_file, listed_jars

pytestmark = pytest.mark.unit


def test_default_list_is_in_the_cache_directory_and_the_variable_overrides_it(tmp_path: Path) -> None:
    assert jars_file({"ACLSTORE_CACHE_DIR": str(tmp_path)}) == tmp_path / "spark-jars.txt"
    assert jars_file({"ACLSTORE_SPARK_JARS_FILE": "/x/list.txt"}) == Path("/x/list.txt")


def test_listed_jars_are_read_one_a_line(tmp_path: Path) -> None:
    jars = [tmp_path / "a.jar", tmp_path / "b.jar"]
    for jar in jars:
        jar.write_bytes(b"PK")
    (tmp_path / "spark-jars.txt").write_text(f"{jars[0]}\n{jars[1]}\n")
    assert listed_jars({"ACLSTORE_CACHE_DIR": str(tmp_path)}) == [str(j) for j in jars]


def test_a_missing_list_or_jar_names_the_fix(tmp_path: Path) -> None:
    env = {"ACLSTORE_CACHE_DIR": str(tmp_path)}
    with pytest.raises(SessionSetupError, match=r"make jars.*ACLSTORE_SPARK_JARS_FILE"):
        listed_jars(env)
    (tmp_path / "spark-jars.txt").write_text(f"{tmp_path / 'gone.jar'}\n")
    with pytest.raises(SessionSetupError, match=r"gone\.jar"):
        listed_jars(env)
