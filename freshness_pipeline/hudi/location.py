"""Where a Hudi table lives: the only place that spells a table's location.

A location is a local folder (a path or `file://` URI) or an S3 prefix (`s3://` or
`s3a://`). Three readers spell the same table differently, and only this module knows
how: Spark (through Hadoop) wants `s3a://bucket/prefix/table`, hudi-rs wants
`s3://bucket/prefix/table` plus storage options, and pyarrow wants a file system object
plus `bucket/prefix/table`. A local table is its absolute path for all three. Nothing
else joins strings into table paths.
"""

from __future__ import annotations

import functools
import os
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow.fs as pafs


LOCAL, S3 = "file", "s3"


def compatible_s3_checksums() -> None:
    """AWS SDK knobs, not our settings: since 2025 the SDK inside pyarrow sends and asks
    for flexible checksums by default, which S3-compatible stores (s3proxy, older MinIO
    and Ceph) refuse ("Unknown header x-amz-checksum-mode", SHA-256 mismatch on upload);
    "when_required" is the SDK's earlier behaviour, which AWS accepts as well. Set before
    a pyarrow S3 client is built, for a store behind an endpoint override only."""
    for name in ("AWS_REQUEST_CHECKSUM_CALCULATION", "AWS_RESPONSE_CHECKSUM_VALIDATION"):
        os.environ.setdefault(name, "when_required")


class LocationError(ValueError):
    """A lakehouse location this project cannot use; the message says what is accepted."""


def _split(uri: str) -> tuple[str, str]:
    """(scheme, path without scheme) with the scheme normalised: s3a -> s3, none -> file."""
    text = uri.strip()
    if "://" not in text:
        return LOCAL, str(Path(text).expanduser().resolve())
    scheme, rest = text.split("://", 1)
    scheme = scheme.lower()
    if scheme == "file":
        return LOCAL, str(Path(rest).resolve())
    if scheme in ("s3", "s3a"):
        bucket = rest.split("/", 1)[0]
        if not bucket:
            raise LocationError(f"{uri!r} names no bucket; expected s3://bucket/prefix")
        return S3, rest.rstrip("/")
    raise LocationError(
        f"{uri!r}: unsupported scheme {scheme!r}; a lakehouse is a local folder (a path or "
        "file://...) or an S3 prefix (s3://bucket/prefix, s3a:// accepted)"
    )


# A storage option of ours, not object_store's: the CA bundle an https endpoint's
# certificate chains to (FRESHNESS_S3_CA_BUNDLE). pyarrow takes it as tls_ca_file_path;
# hudi-rs (rustls with the platform's roots) reads SSL_CERT_FILE, so `trust_ca_bundle`
# points that at the platform's CAs plus this one.
CA_BUNDLE_OPTION = "freshness_ca_bundle"
SYSTEM_CA_FILES = (
    Path("/etc/ssl/certs/ca-certificates.crt"),  # Debian, Ubuntu
    Path("/etc/pki/tls/certs/ca-bundle.crt"),  # RHEL, Fedora
    Path("/etc/ssl/cert.pem"),  # Alpine, macOS
)


@functools.cache  # once per bundle and process: hudi-rs handles are built every tick
def trust_ca_bundle(ca_bundle: str) -> None:
    """Makes this process's rustls clients (hudi-rs) trust `ca_bundle` beside the
    platform's CAs: SSL_CERT_FILE names a combined file (written once per bundle)."""
    import hashlib
    import tempfile

    source = Path(ca_bundle)
    data = source.read_bytes()
    digest = hashlib.sha256(data).hexdigest()[:16]
    combined = Path(tempfile.gettempdir()) / f"freshness-ca-{os.getuid()}-{digest}.pem"
    if not combined.exists():
        system = next((p for p in SYSTEM_CA_FILES if p.exists()), None)
        text = (system.read_bytes() if system else b"") + b"\n" + data
        tmp = combined.with_suffix(".tmp")
        tmp.write_bytes(text)
        tmp.replace(combined)
    os.environ["SSL_CERT_FILE"] = str(combined)


@dataclass(frozen=True)
class Location:
    """One table or file: a normalised scheme, its path, and the storage options (S3
    endpoint, credentials) the non-Spark readers need."""

    scheme: str
    path: str  # local: absolute path; s3: bucket/key
    # Endpoint and credentials: never in a repr (logs, run metadata).
    storage_options: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def parse(cls, uri: str, storage_options: Mapping[str, str] | None = None) -> Location:
        scheme, path = _split(uri)
        return cls(scheme, path, dict(storage_options or {}))

    def child(self, *parts: str) -> Location:
        path = posixpath.join(self.path, *(p.strip("/") for p in parts))
        return Location(self.scheme, path, self.storage_options)

    @property
    def is_local(self) -> bool:
        return self.scheme == LOCAL

    @property
    def spark(self) -> str:
        """For Spark and Hudi's Spark writer (Hadoop file systems)."""
        return self.path if self.is_local else f"s3a://{self.path}"

    def spark_file(self, relative_path: str) -> str:
        """A file under this location as Spark spells it (hot path: a tick spells thousands)."""
        return f"{self.spark}/{relative_path}"

    @property
    def hudi_rs(self) -> str:
        """For hudi-rs (object_store), with `storage_options` beside it."""
        return self.path if self.is_local else f"s3://{self.path}"

    def with_storage_options(self, storage_options: Mapping[str, str]) -> Location:
        return Location(self.scheme, self.path, dict(storage_options))

    @property
    def object_store_options(self) -> dict[str, str]:
        """The storage options as hudi-rs (object_store) takes them: ours left out, a CA
        bundle made trusted through the environment (`trust_ca_bundle`)."""
        options = dict(self.storage_options)
        bundle = options.pop(CA_BUNDLE_OPTION, None)
        if bundle:
            trust_ca_bundle(bundle)
        return options

    def filesystem(
        self, connect_timeout_s: float | None = None, retries: int | None = None
    ) -> tuple[pafs.FileSystem, str]:
        """A pyarrow file system and this location's path on it (S3: from the storage
        options; without keys in them, the standard AWS credential chain)."""
        import pyarrow.fs as pafs

        if self.is_local:
            return pafs.LocalFileSystem(), self.path
        options = self.storage_options
        endpoint = options.get("aws_endpoint_url") or options.get("endpoint_url")
        scheme = None
        if endpoint and "://" in endpoint:
            scheme, endpoint = endpoint.split("://", 1)
        extra: dict[str, object] = {}
        if connect_timeout_s is not None:
            extra["connect_timeout"] = connect_timeout_s
            extra["request_timeout"] = connect_timeout_s
        if endpoint:
            compatible_s3_checksums()
        if retries is not None:
            extra["retry_strategy"] = pafs.AwsStandardS3RetryStrategy(max_attempts=retries)
        if options.get(CA_BUNDLE_OPTION):
            extra["tls_ca_file_path"] = options[CA_BUNDLE_OPTION]
        fs = pafs.S3FileSystem(
            access_key=options.get("aws_access_key_id"),
            secret_key=options.get("aws_secret_access_key"),
            session_token=options.get("aws_session_token"),
            region=options.get("aws_region"),
            endpoint_override=endpoint,
            scheme=scheme or "https",
            force_virtual_addressing=options.get("aws_virtual_hosted_style_request") == "true",
            **extra,
        )
        return fs, self.path

    def local_path(self) -> Path:
        if not self.is_local:
            raise LocationError(f"{self.hudi_rs} is not on the local file system")
        return Path(self.path)
