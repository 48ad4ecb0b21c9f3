"""Build the broker's authorizer plugin (``plugin/``, a Maven module) for tests and benchmarks.

The jar is built from source by Maven against :data:`devtools.maven.KAFKA_VERSION`, the Kafka
the tests' broker runs; nothing prebuilt is committed.  A jar newer than every source file is
reused.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Final

from devtools.errors import RuntimeSetupError
from devtools.maven import KAFKA_VERSION, exclusive, require_java, require_tool

PLUGIN_DIR: Final = Path(__file__).resolve().parent.parent / "plugin"
ARTIFACT: Final = "aclstore-kafka-authorizer"
AUTHORIZER_CLASS: Final = "io.aclstore.kafka.AclstoreAuthorizer"
"""The value of the broker's ``authorizer.class.name``."""


def _jar() -> Path | None:
    jars = sorted((PLUGIN_DIR / "target").glob(f"{ARTIFACT}-*.jar"))
    return jars[-1] if jars else None


def _up_to_date(jar: Path) -> bool:
    built = jar.stat().st_mtime
    sources = [PLUGIN_DIR / "pom.xml", *(PLUGIN_DIR / "src").rglob("*")]
    return all(p.stat().st_mtime <= built for p in sources if p.is_file())


def plugin_jar(*, rebuild: bool = False) -> Path:
    """The plugin's jar, built now with ``mvn package`` unless an up-to-date one exists.

    A build holds a lock in ``plugin/target``: a second caller (another test worker) waits for
    it and then takes the jar it built, rather than building into the same folder at once.
    """
    jar = _jar()
    if jar is not None and not rebuild and _up_to_date(jar):
        return jar
    with exclusive(PLUGIN_DIR / "target" / ".build.lock"):
        jar = _jar()
        if jar is not None and not rebuild and _up_to_date(jar):
            return jar
        return _build()


def _build() -> Path:
    mvn = require_tool("mvn", "install Apache Maven (Debian: apt-get install maven)")
    require_java()
    cmd = [mvn, "-B", "-q", "package", "-DskipTests", f"-Dkafka.version={KAFKA_VERSION}"]
    settings = os.environ.get("ACLSTORE_MAVEN_SETTINGS")
    if settings:
        cmd += ["-s", settings]
    proc = subprocess.run(cmd, cwd=PLUGIN_DIR, capture_output=True, text=True, check=False)
    jar = _jar()
    if proc.returncode != 0 or jar is None:
        errors = [line for line in (proc.stdout + proc.stderr).splitlines() if "ERROR" in line]
        raise RuntimeSetupError(
            f"building the authorizer plugin in {PLUGIN_DIR} failed: "
            f"{' | '.join(errors[:3]) or 'run mvn package there to see why'}"
        )
    return jar
