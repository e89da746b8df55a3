"""A local Postgres server for Dagster's storage in the cluster profile.

The server is Debian's `postgresql` package (`make postgres` installs it when its binaries
are missing). This module initialises a data folder once (`initdb`, password auth over TCP
with a password generated here and kept in a 0600 file beside the data), starts `postgres`
itself in the foreground (not `pg_ctl start`, which daemonises and would leave us no pid of
our own) on 127.0.0.1 and a free port, creates the database, and stops it by the process
group it started. Postgres refuses to run as root, so when we are root `initdb` and
`postgres` run as the `postgres` user through `runuser -u postgres --`.
"""

from __future__ import annotations

import os
import pwd
import secrets
import signal
import stat
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from freshness_pipeline.runtime.ports import free_port, port_is_open
from freshness_pipeline.runtime.processes import ServerProcess
from freshness_pipeline.runtime.tls import TlsFiles

HOST = "127.0.0.1"
SERVER_USER = "postgres"  # the OS user that runs the server when we are root
DB_USER = "dagster"


class PostgresError(RuntimeError):
    """Postgres is not installed, cannot use its folder, or did not start."""


def postgres_bin_dir() -> Path:
    """The newest Debian-packaged Postgres binaries (/usr/lib/postgresql/<major>/bin)."""
    found = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/postgres"),
        key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0,
    )
    if not found:
        raise PostgresError(
            "no Postgres server in /usr/lib/postgresql/*/bin: run `make postgres` (it installs "
            "Debian's postgresql package)"
        )
    return found[-1].parent


@dataclass(frozen=True)
class PostgresConfig:
    base_dir: Path  # data/, the log and the password file; owned by the server's user
    port: int = 0  # 0: a free port
    database: str = "dagster"
    # TLS with this CA's server certificate; connections without TLS are then refused
    # (pg_hba: hostssl only) and ours verify the server (sslmode=verify-full).
    tls: TlsFiles | None = None

    @property
    def data_dir(self) -> Path:
        return self.base_dir / "data"

    @property
    def log_path(self) -> Path:
        return self.base_dir / "postgres.log"

    @property
    def password_file(self) -> Path:
        return self.base_dir / "password"

    @property
    def hba_file(self) -> Path:
        return self.base_dir / "pg_hba.conf"


# With TLS: every TCP connection must be TLS with a password; any other is refused.
TLS_HBA = """\
local     all all                scram-sha-256
hostssl   all all 127.0.0.1/32   scram-sha-256
hostnossl all all 0.0.0.0/0      reject
"""


def _as_server_user(argv: list[str]) -> list[str]:
    return ["runuser", "-u", SERVER_USER, "--", *argv] if os.geteuid() == 0 else argv


def _check_reachable_by(path: Path, user: str) -> None:
    """Every folder above `path` must let `user` through, or initdb fails obscurely."""
    for folder in path.resolve().parents:
        mode = folder.stat().st_mode
        if not mode & stat.S_IXOTH and folder.stat().st_uid != pwd.getpwnam(user).pw_uid:
            raise PostgresError(
                f"the Postgres folder {path} is inside {folder}, which the `{user}` user may "
                "not enter (mode "
                f"{stat.filemode(mode)}); choose a folder whose parents are world-executable"
            )


class PostgresServer(ServerProcess):
    """Initialises (once), starts and stops one Postgres server; `dsn` reaches it."""

    def __init__(self, config: PostgresConfig) -> None:
        self.config = config
        self.port = config.port or free_port()
        self.process: subprocess.Popen | None = None
        self.bin_dir = postgres_bin_dir()

    @property
    def password(self) -> str:
        return self.config.password_file.read_text().strip()

    @property
    def params(self) -> dict[str, str]:
        """libpq's TLS parameters a client of this server uses (none without TLS)."""
        tls = self.config.tls
        if tls is None:
            return {}
        return {"sslmode": "verify-full", "sslrootcert": str(tls.ca_cert)}

    @property
    def url(self) -> str:
        """The database as SQLAlchemy spells it, without the password (that travels apart,
        as FRESHNESS_POSTGRES_PASSWORD)."""
        return f"postgresql+psycopg2://{DB_USER}@{HOST}:{self.port}/{self.config.database}"

    def _initdb(self) -> None:
        config = self.config
        config.base_dir.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            _check_reachable_by(config.base_dir, SERVER_USER)
            user = pwd.getpwnam(SERVER_USER)
            os.chown(config.base_dir, user.pw_uid, user.pw_gid)
        if (config.data_dir / "PG_VERSION").exists():
            return
        password = secrets.token_urlsafe(24)
        pwfile = config.base_dir / "initdb-password"
        pwfile.write_text(password + "\n")
        os.chmod(pwfile, 0o600)
        if os.geteuid() == 0:
            os.chown(pwfile, user.pw_uid, user.pw_gid)
        result = subprocess.run(
            _as_server_user(
                [
                    str(self.bin_dir / "initdb"),
                    "-D",
                    str(config.data_dir),
                    "-U",
                    DB_USER,
                    f"--pwfile={pwfile}",
                    "--auth-host=scram-sha-256",
                    "--auth-local=scram-sha-256",
                    "--encoding=UTF8",
                    "--no-instructions",
                ]
            ),
            capture_output=True,
            text=True,
        )
        pwfile.unlink()
        if result.returncode != 0:
            raise PostgresError(f"initdb failed: {result.stderr[-2000:]}")
        config.password_file.write_text(password + "\n")
        os.chmod(config.password_file, 0o600)

    def start(self, timeout_s: float = 60.0) -> PostgresServer:
        config = self.config
        if port_is_open(HOST, self.port):
            raise PostgresError(f"port {self.port} on {HOST} is already in use")
        self._initdb()
        tls_args = self._tls_args()
        log = config.log_path.open("ab")
        argv = _as_server_user(
            [
                str(self.bin_dir / "postgres"),
                "-D",
                str(config.data_dir),
                "-p",
                str(self.port),
                "-c",
                f"listen_addresses={HOST}",
                "-c",
                f"unix_socket_directories={config.base_dir}",
                # Dagster's daemon, webserver, code server and each run open pools.
                "-c",
                "max_connections=200",
                *tls_args,
            ]
        )
        try:
            self.process = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        finally:
            log.close()
        try:
            self._wait_ready(timeout_s)
            self._create_database()
        except BaseException:
            self.stop()
            raise
        return self

    def _tls_args(self) -> list[str]:
        """The server's certificate and key (copies the server's user owns, as Postgres
        wants of its key) and the TLS-only pg_hba, as `-c` settings; none without TLS."""
        tls = self.config.tls
        if tls is None:
            return []
        base = self.config.base_dir
        owned = {
            base / "server.crt": (tls.server_cert.read_bytes(), 0o644),
            base / "server.key": (tls.server_key.read_bytes(), 0o600),
            self.config.hba_file: (TLS_HBA.encode(), 0o600),
        }
        for path, (data, mode) in owned.items():
            path.write_bytes(data)
            os.chmod(path, mode)
            if os.geteuid() == 0:
                user = pwd.getpwnam(SERVER_USER)
                os.chown(path, user.pw_uid, user.pw_gid)
        settings = {
            "ssl": "on",
            "ssl_cert_file": base / "server.crt",
            "ssl_key_file": base / "server.key",
            "hba_file": self.config.hba_file,
        }
        return [arg for key, value in settings.items() for arg in ("-c", f"{key}={value}")]

    def _connect(self, database: str):
        import psycopg2

        return psycopg2.connect(
            host=HOST,
            port=self.port,
            user=DB_USER,
            password=self.password,
            dbname=database,
            connect_timeout=3,
            **self.params,
        )

    def _wait_ready(self, timeout_s: float) -> None:
        import psycopg2

        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise PostgresError(
                    f"postgres exited with code {self.process.returncode} while starting; "
                    f"see {self.config.log_path}"
                )
            try:
                self._connect("postgres").close()
                return
            except psycopg2.OperationalError:
                time.sleep(0.3)
        raise PostgresError(
            f"postgres did not accept connections within {timeout_s:.0f} s; "
            f"see {self.config.log_path}"
        )

    def _create_database(self) -> None:
        conn = self._connect("postgres")
        try:
            conn.autocommit = True
            with conn.cursor() as cursor:
                cursor.execute(
                    "SELECT 1 FROM pg_database WHERE datname = %s", (self.config.database,)
                )
                if cursor.fetchone() is None:
                    # a name we chose (PostgresConfig), quoted as an identifier
                    cursor.execute(f'CREATE DATABASE "{self.config.database}"')
        finally:
            conn.close()

    stop_signal = signal.SIGINT

    def stop(self, timeout_s: float = 30.0) -> None:
        """SIGINT to the process group started here: Postgres's fast shutdown (clients are
        disconnected, the data is checkpointed); SIGKILL if it hangs. The group, since
        the child we started is `runuser` and Postgres its child."""
        proc = self.process
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)
        super().stop(timeout_s)
