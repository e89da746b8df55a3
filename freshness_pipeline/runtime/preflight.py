"""Before anything starts: is every server the settings name reachable?

A wrong Spark master, Postgres URL or password, or object store endpoint, bucket or key
would otherwise surface minutes later as a failed run or a
Dagster process that dies at start, after ingestion had begun writing. `preflight` checks
each named server once, briefly, and raises one `PreflightError` naming every one that
failed, before the stack starts anything.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping
from urllib.parse import urlsplit

from freshness_pipeline.config.settings import Settings
from freshness_pipeline.runtime.spark_service import is_loopback

TIMEOUT_S = 3.0


class PreflightError(RuntimeError):
    """A server the settings name cannot be used; the message names each one and why."""


def check_spark_master(master: str) -> str | None:
    """None when a `spark://host:port` master accepts a connection (or the master is not a
    standalone one); otherwise what failed."""
    if not master.startswith("spark://"):
        return None
    host, _, port = master[len("spark://") :].rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=TIMEOUT_S):
            return None
    except OSError as exc:
        return f"Spark master {master} (FRESHNESS_SPARK_MASTER) is unreachable: {exc}"


def check_postgres(
    postgres_url: str | None, password: str | None, params: Mapping[str, str] | None = None
) -> str | None:
    """None when Dagster's Postgres database accepts our user and password (over TLS as
    `params` say: sslmode, sslrootcert)."""
    if not postgres_url:
        return None
    import psycopg2

    url = urlsplit(postgres_url)
    try:
        psycopg2.connect(
            host=url.hostname,
            port=url.port or 5432,
            user=url.username,
            password=password or "",
            dbname=url.path.strip("/"),
            connect_timeout=int(TIMEOUT_S),
            **dict(params or {}),
        ).close()
        return None
    except psycopg2.Error as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return f"Postgres {postgres_url} (FRESHNESS_POSTGRES_URL) refused us: {reason}"


def check_lakehouse_store(settings: Settings) -> str | None:
    """None for a local lakehouse, or an `s3://` one whose endpoint, bucket and
    credentials work (object_store.check_object_store says which failed)."""
    from freshness_pipeline.runtime.object_store import ObjectStoreError, check_object_store

    try:
        check_object_store(settings)
        return None
    except ObjectStoreError as exc:
        return str(exc)


def check_jobs(settings: Settings) -> str | None:
    """None when the jobs check (`freshness check`: their SQL against their declarations,
    the tables they read and the layouts of the tables they write); otherwise every
    problem, one line each."""
    from freshness_pipeline.execution.check import (
        change_problems,
        input_changes,
        input_schemas,
        layout_problems,
    )
    from freshness_pipeline.execution.check import check_jobs as check

    schemas, problems = input_schemas(settings.jobs, settings.lakehouse)
    problems += [str(p) for p in check(settings.jobs, schemas)]
    problems += [str(p) for p in layout_problems(settings.jobs, settings.lakehouse)]
    changes = input_changes(settings.jobs, settings.lakehouse)
    problems += [str(p) for p in change_problems(settings.jobs, changes)]
    if not problems:
        return None
    return "the jobs do not check (`freshness check` says the same):\n" + "\n".join(problems)


def preflight(settings: Settings) -> None:
    """Raises PreflightError naming every unreachable server and every problem of the
    jobs; returns when all answer and the jobs check."""
    failures = [
        failure
        for failure in (
            check_spark_master(settings.spark_master),
            check_postgres(
                settings.postgres_url, settings.postgres_password, settings.postgres_params
            ),
            check_lakehouse_store(settings),
        )
        if failure
    ]
    if not failures:  # the tables are reachable: read what the jobs need of them
        failures += [f for f in (check_jobs(settings),) if f]
    if failures:
        raise PreflightError("cannot start: " + "; ".join(failures))


def protections(settings: Settings) -> list[str]:
    """Which protection each service these settings reach is under, one line each, said
    plainly when there is none (the stack logs them at start; `freshness protections`)."""
    lines = []
    if settings.source == "kafka":
        client = settings.kafka.client
        protocol = client.get("security.protocol", "PLAINTEXT").upper()
        if protocol == "SASL_SSL":
            how = f"SASL_SSL ({client.get('sasl.mechanisms', 'GSSAPI')} over TLS"
            how += f", CA {client['ssl.ca.location']})" if "ssl.ca.location" in client else ")"
        elif protocol == "SSL":
            mutual = "ssl.certificate.location" in client
            how = "TLS" + (" with a client certificate (mutual TLS)" if mutual else "")
        else:
            how = f"{protocol}: no TLS, no authentication (set FRESHNESS_KAFKA_CONFIG)"
        lines.append(f"Kafka {settings.kafka.bootstrap_servers}: {how}")
    if settings.postgres_url:
        mode = settings.postgres_sslmode or "prefer (libpq's default: TLS if offered, unverified)"
        ca = f", CA {settings.postgres_sslrootcert}" if settings.postgres_sslrootcert else ""
        lines.append(f"Postgres: sslmode {mode}{ca}")
    if not settings.is_local:
        endpoint = settings.s3.endpoint or "AWS S3 (https)"
        tls = "plain HTTP" if endpoint.startswith("http://") else "HTTPS"
        ca = f", private CA {settings.s3.ca_bundle}" if settings.s3.ca_bundle else ""
        lines.append(f"object store {endpoint}: {tls}{ca}")
    if settings.spark_master.startswith("spark://"):
        auth = (
            "spark.authenticate on"
            if settings.spark_auth_secret
            else ("spark.authenticate OFF: anyone reaching the master can run executors")
        )
        lines.append(f"Spark master {settings.spark_master}: {auth}")
    bind = settings.spark_service_bind
    if settings.spark_remote_tls is not None:
        lines.append(
            f"Spark service {settings.spark_remote}: through the TLS proxy, our certificate"
        )
    elif is_loopback(bind):
        lines.append(f"Spark service: Connect bound to {bind} (loopback only)")
    else:
        lines.append(
            f"Spark service: Connect OPEN on {bind} (declared: FRESHNESS_SPARK_SERVICE_OPEN)"
        )
    return lines
