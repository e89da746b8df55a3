"""The lakehouse's object store: a local S3 API server for the demo and tests, and the
preflight check every S3 lakehouse passes before a run starts.

`ObjectStoreServer` runs s3proxy (Maven, fetched by `make setup` into `.cache/s3proxy`)
over a local folder on 127.0.0.1, creates the bucket through the S3 API, and is stopped by
the process id it started. Its credentials are a fixed local development pair: the server
serves a scratch folder to this host only; a real store's credentials come from the
environment or the standard AWS chain (settings.py), never from the repository.

`check_object_store(settings)` tells, before anything is written, which of the endpoint,
the bucket or the credentials is wrong, in one error.
"""

from __future__ import annotations

import secrets
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from freshness_pipeline.config.paths import PROJECT_ROOT
from freshness_pipeline.config.settings import child_environment
from freshness_pipeline.hudi.location import compatible_s3_checksums
from freshness_pipeline.runtime.ports import free_port, port_is_open
from freshness_pipeline.runtime.processes import ServerProcess
from freshness_pipeline.runtime.tls import TlsFiles, server_keystore

if TYPE_CHECKING:
    import pyarrow.fs as pafs

    from freshness_pipeline.config.settings import Settings

S3PROXY_MAIN = "org.gaul.s3proxy.Main"
DEFAULT_S3PROXY_DIR = PROJECT_ROOT / ".cache" / "s3proxy"
# The local store's own pair: it serves a scratch folder on 127.0.0.1 to this host only.
LOCAL_ACCESS_KEY = "freshness-local"
LOCAL_SECRET_KEY = "freshness-local-secret"
LOCAL_REGION = "us-east-1"

# s3proxy logs every request at DEBUG; INFO keeps its start and errors.
LOGBACK_XML = """<configuration>
  <appender name="STDOUT" class="ch.qos.logback.core.ConsoleAppender">
    <encoder><pattern>%d{yy/MM/dd HH:mm:ss} %-5level %logger{20}: %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="STDOUT"/></root>
</configuration>
"""


class ObjectStoreError(RuntimeError):
    """The object store cannot be used: names what failed (endpoint, bucket, credentials,
    server start) and what to do."""


@dataclass(frozen=True)
class ObjectStoreConfig:
    """One local S3 API server: `data_dir` is the folder it serves (a bucket is a
    sub-folder), `log_dir` holds its configuration and log; port 0 picks a free one."""

    data_dir: Path
    log_dir: Path
    bucket: str = "lakehouse"
    port: int = 0
    access_key: str = LOCAL_ACCESS_KEY
    secret_key: str = LOCAL_SECRET_KEY
    s3proxy_dir: Path = DEFAULT_S3PROXY_DIR  # s3proxy and its jars (`make setup`)
    tls: TlsFiles | None = None  # HTTPS only, with this CA's server certificate

    @property
    def log_path(self) -> Path:
        return self.log_dir / "s3proxy.log"


def _java() -> str:
    java = shutil.which("java")
    if java is None:
        raise ObjectStoreError("no `java` on PATH: the local object store (s3proxy) needs a JDK")
    return java


class ObjectStoreServer(ServerProcess):
    """Starts s3proxy on 127.0.0.1 over `config.data_dir`, creates the bucket, and stops
    the process group it started (never by name)."""

    def __init__(self, config: ObjectStoreConfig) -> None:
        self.config = config
        self.port = config.port or 0
        self.process: subprocess.Popen | None = None

    @property
    def scheme(self) -> str:
        return "https" if self.config.tls is not None else "http"

    @property
    def endpoint(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        jars = self.config.s3proxy_dir
        if not any(jars.glob("s3proxy-*.jar")):
            raise ObjectStoreError(
                f"no s3proxy jar in {jars}: run `make setup` (it fetches s3proxy and its "
                "dependencies with mvn, infra/s3proxy/pom.xml)"
            )
        return [
            _java(),
            "-Xmx256m",
            f"-Dlogback.configurationFile={self.config.log_dir / 'logback.xml'}",
            "-cp",
            f"{jars}/*",
            S3PROXY_MAIN,
            "--properties",
            str(self.config.log_dir / "s3proxy.conf"),
        ]

    def _properties(self) -> str:
        config = self.config
        # jclouds.* is the backend (a folder); s3proxy.* what clients see: SigV2 or V4
        # signatures with this one key pair, on 127.0.0.1 only. jclouds' `filesystem`
        # backend, not s3proxy's `filesystem-nio2`: nio2 answers HEAD of a folder as an
        # object, so s3a's mkdirs of a Hudi table path failed ("since it is a file").
        if config.tls is None:
            serving = [f"s3proxy.endpoint={self.endpoint}"]
        else:  # HTTPS only: no plain listener at all
            password = secrets.token_urlsafe(18)
            keystore = server_keystore(config.tls, config.log_dir / "s3proxy.p12", password)
            serving = [
                f"s3proxy.secure-endpoint={self.endpoint}",
                f"s3proxy.keystore-path={keystore}",
                f"s3proxy.keystore-password={password}",
            ]
        return "\n".join(
            [
                *serving,
                "s3proxy.authorization=aws-v2-or-v4",
                f"s3proxy.identity={config.access_key}",
                f"s3proxy.credential={config.secret_key}",
                "jclouds.provider=filesystem",
                f"jclouds.filesystem.basedir={config.data_dir}",
                f"jclouds.identity={config.access_key}",
                f"jclouds.credential={config.secret_key}",
                "",
            ]
        )

    def start(self, timeout_s: float = 60.0) -> ObjectStoreServer:
        config = self.config
        if self.port == 0:
            self.port = free_port()
        elif port_is_open("127.0.0.1", self.port):
            raise ObjectStoreError(
                f"port {self.port} is already in use; stop the other server or use port 0"
            )
        argv = self.command()  # checks the jars before anything starts
        config.data_dir.mkdir(parents=True, exist_ok=True)
        config.log_dir.mkdir(parents=True, exist_ok=True)
        conf = config.log_dir / "s3proxy.conf"
        conf.touch(mode=0o600)  # holds the local key pair: readable by us only
        conf.write_text(self._properties())
        (config.log_dir / "logback.xml").write_text(LOGBACK_XML)
        log = config.log_path.open("ab")
        self.process = subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=child_environment(),
            start_new_session=True,
        )
        log.close()
        deadline = time.monotonic() + timeout_s
        while not port_is_open("127.0.0.1", self.port):
            if self.process.poll() is not None:
                raise ObjectStoreError(
                    f"s3proxy exited with code {self.process.returncode} while starting; "
                    f"see {config.log_path}"
                )
            if time.monotonic() > deadline:
                self.stop()
                raise ObjectStoreError(
                    f"s3proxy did not listen on 127.0.0.1:{self.port} within {timeout_s:.0f} "
                    f"s; see {config.log_path}"
                )
            time.sleep(0.2)
        try:
            self._create_bucket()
        except Exception:
            self.stop()
            raise
        return self

    def filesystem(self) -> pafs.S3FileSystem:
        """A pyarrow client of this store (tests and the bucket creation)."""
        import pyarrow.fs as pafs

        compatible_s3_checksums()
        return pafs.S3FileSystem(
            access_key=self.config.access_key,
            secret_key=self.config.secret_key,
            region=LOCAL_REGION,
            endpoint_override=f"127.0.0.1:{self.port}",
            scheme=self.scheme,
            allow_bucket_creation=True,
            **(
                {"tls_ca_file_path": str(self.config.tls.ca_cert)}
                if self.config.tls is not None
                else {}
            ),
        )

    def _create_bucket(self) -> None:
        import pyarrow.fs as pafs

        fs = self.filesystem()
        if fs.get_file_info(self.config.bucket).type == pafs.FileType.NotFound:
            fs.create_dir(self.config.bucket)

    def settings_env(self, prefix: str = "tables") -> dict[str, str]:
        """Environment variables that point a process's Settings at this store: the
        lakehouse `s3://bucket/prefix`, the endpoint, path-style access and the key pair
        (AWS_* names, the standard chain's; they never go into logs, tags or metadata)."""
        path = "/".join(p for p in (self.config.bucket, prefix.strip("/")) if p)
        return {
            "FRESHNESS_LAKEHOUSE": f"s3://{path}",
            "FRESHNESS_S3_ENDPOINT": self.endpoint,
            "FRESHNESS_S3_REGION": LOCAL_REGION,
            "FRESHNESS_S3_PATH_STYLE": "true",
            "AWS_ACCESS_KEY_ID": self.config.access_key,
            "AWS_SECRET_ACCESS_KEY": self.config.secret_key,
            **(
                {"FRESHNESS_S3_CA_BUNDLE": str(self.config.tls.ca_cert)}
                if self.config.tls is not None
                else {}
            ),
        }


# --- preflight ---------------------------------------------------------------------------

_DENIED = ("ACCESS_DENIED", "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "403")


def check_object_store(settings: Settings, timeout_s: float = 5.0) -> None:
    """For an S3 lakehouse: the endpoint answers, the bucket exists and the credentials are
    accepted (the prefix can be listed). Raises one ObjectStoreError naming what failed,
    before any process starts or writes; a local lakehouse passes at once."""
    import pyarrow.fs as pafs

    root = settings.lakehouse.root
    if root.is_local:
        return
    bucket = root.path.split("/", 1)[0]
    endpoint = settings.s3.endpoint
    if endpoint:
        parts = urlsplit(endpoint if "://" in endpoint else f"http://{endpoint}")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        host = parts.hostname or ""
        if not port_is_open(host, port, timeout=timeout_s):
            raise ObjectStoreError(
                f"object store endpoint unreachable: nothing answers at {endpoint} "
                f"(FRESHNESS_S3_ENDPOINT); start the store or fix the endpoint"
            )
    fs, _ = root.filesystem(connect_timeout_s=timeout_s, retries=1)
    where = f"{endpoint or 'AWS S3'}"
    try:
        info = fs.get_file_info(bucket)
    except OSError as exc:
        raise _classify(exc, bucket, where) from exc
    if info.type == pafs.FileType.NotFound:
        raise ObjectStoreError(
            f"bucket missing: {bucket!r} does not exist at {where} (FRESHNESS_LAKEHOUSE="
            f"{root.hudi_rs}); create it or fix the lakehouse location"
        )
    try:
        fs.get_file_info(pafs.FileSelector(root.path, allow_not_found=True))
    except OSError as exc:
        raise _classify(exc, bucket, where) from exc


def _classify(exc: OSError, bucket: str, where: str) -> ObjectStoreError:
    text = str(exc)
    if any(marker in text for marker in _DENIED):
        return ObjectStoreError(
            f"credentials refused by {where} for bucket {bucket!r}: check AWS_ACCESS_KEY_ID / "
            f"AWS_SECRET_ACCESS_KEY (or your AWS profile / role) ({text.splitlines()[0]})"
        )
    return ObjectStoreError(
        f"object store at {where} failed for bucket {bucket!r}: {text.splitlines()[0]}"
    )
