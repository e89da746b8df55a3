"""A private certificate authority for the local servers' TLS (the secure profile and its
tests): a CA, a server certificate for 127.0.0.1 and localhost, and a client certificate
for mutual TLS, as PEM files a firm's own CA would hand out.

A deployment uses its firm's CA instead; these files only stand in for it, so every client
is tested the way it runs there: trusting a CA file, never `verify=false`. Private keys are
written readable by their owner only.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

VALID_DAYS = 30
SERVER_NAMES = ("localhost",)
SERVER_ADDRESSES = ("127.0.0.1",)


@dataclass(frozen=True)
class TlsFiles:
    """PEM files: the CA's certificate (what clients trust), a server's certificate and
    key, a client's certificate and key, and the server's key and chain in one file (the
    form Kafka's PEM keystore and s3proxy's importer read)."""

    folder: Path

    @property
    def ca_cert(self) -> Path:
        return self.folder / "ca.pem"

    @property
    def ca_key(self) -> Path:
        return self.folder / "ca.key"

    @property
    def server_cert(self) -> Path:
        return self.folder / "server.pem"

    @property
    def server_key(self) -> Path:
        return self.folder / "server.key"

    @property
    def server_bundle(self) -> Path:
        return self.folder / "server-bundle.pem"

    @property
    def client_cert(self) -> Path:
        return self.folder / "client.pem"

    @property
    def client_key(self) -> Path:
        return self.folder / "client.key"

    def exists(self) -> bool:
        return all(
            p.exists() for p in (self.ca_cert, self.server_cert, self.server_key, self.client_cert)
        )


def _write(path: Path, data: bytes, private: bool = False) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if private else 0o644)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    tmp.replace(path)


def make_ca(
    folder: Path, client_name: str = "freshness-client", ca_name: str = "freshness test CA"
) -> TlsFiles:
    """A new CA in `folder` with a server certificate (127.0.0.1, localhost; server and
    client use, as a Kafka broker talking to itself needs) and a client certificate
    (`client_name` as its common name); kept when the folder already holds them."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    files = TlsFiles(folder)
    if files.exists():
        return files
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    now = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)

    def key() -> rsa.RSAPrivateKey:
        return rsa.generate_private_key(public_exponent=65537, key_size=2048)

    def pem_key(private: rsa.RSAPrivateKey) -> bytes:
        return private.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,  # what Kafka's PEM keystore reads
            serialization.NoEncryption(),
        )

    def name(common: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])

    def signed(common: str, public, signer, issuer: x509.Name | None, extensions: list):
        """A certificate for `common` with `extensions` ((extension, critical) pairs),
        signed by `signer` as `issuer` (None: itself)."""
        builder = (
            x509.CertificateBuilder()
            .subject_name(name(common))
            .issuer_name(issuer or name(common))
            .public_key(public)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now)
            .not_valid_after(now + dt.timedelta(days=VALID_DAYS))
        )
        for extension, critical in extensions:
            builder = builder.add_extension(extension, critical=critical)
        return builder.sign(signer, hashes.SHA256())

    ca_key = key()
    signs_only = dict.fromkeys(
        ("content_commitment", "key_encipherment", "data_encipherment", "key_agreement",
         "encipher_only", "decipher_only"), False,
    )  # fmt: skip
    ca_cert = signed(
        ca_name,
        ca_key.public_key(),
        ca_key,
        None,
        [
            (x509.BasicConstraints(ca=True, path_length=0), True),
            (
                x509.KeyUsage(
                    digital_signature=True, key_cert_sign=True, crl_sign=True, **signs_only
                ),
                True,
            ),  # fmt: skip
            (x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False),
        ],
    )

    def issue(common: str, usages: list, names: x509.SubjectAlternativeName | None):
        leaf_key = key()
        extensions = [
            (x509.BasicConstraints(ca=False, path_length=None), True),
            (x509.ExtendedKeyUsage(usages), False),
            (x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False),
            *([(names, False)] if names is not None else []),
        ]
        return leaf_key, signed(common, leaf_key.public_key(), ca_key, ca_cert.subject, extensions)

    sans = x509.SubjectAlternativeName(
        [x509.DNSName(n) for n in SERVER_NAMES]
        + [x509.IPAddress(ipaddress.ip_address(a)) for a in SERVER_ADDRESSES]
    )
    both = [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
    server_key, server_cert = issue("localhost", both, sans)
    client_key, client_cert = issue(client_name, [ExtendedKeyUsageOID.CLIENT_AUTH], None)

    def pem(cert: x509.Certificate) -> bytes:
        return cert.public_bytes(serialization.Encoding.PEM)

    _write(files.ca_key, pem_key(ca_key), private=True)
    _write(files.ca_cert, pem(ca_cert))
    _write(files.server_key, pem_key(server_key), private=True)
    _write(files.server_cert, pem(server_cert) + pem(ca_cert))
    _write(files.server_bundle, pem_key(server_key) + pem(server_cert) + pem(ca_cert), private=True)
    _write(files.client_key, pem_key(client_key), private=True)
    _write(files.client_cert, pem(client_cert))
    return files


def server_keystore(files: TlsFiles, path: Path, password: str) -> Path:
    """The server's key and certificate chain as a PKCS#12 keystore (what a Java server
    such as s3proxy's Jetty reads), owner-readable only."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.serialization import pkcs12

    key = serialization.load_pem_private_key(files.server_key.read_bytes(), password=None)
    chain = x509.load_pem_x509_certificates(files.server_cert.read_bytes())
    data = pkcs12.serialize_key_and_certificates(
        b"server",
        key,  # type: ignore[arg-type]  # an RSA key we made, of the PKCS12-able kinds
        chain[0],
        chain[1:],
        serialization.BestAvailableEncryption(password.encode()),
    )
    _write(path, data, private=True)
    return path


def java_truststore(ca_bundle: Path, path: Path, password: str) -> Path:
    """A PKCS#12 truststore for the JVMs (s3a's AWS SDK, Spark): the JDK's own CAs and
    every certificate of `ca_bundle`, so a private CA is trusted without dropping the
    public ones (keytool, the JDK's own tool, marks the entries as trusted)."""
    import shutil
    import subprocess
    import tempfile

    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    keytool = shutil.which("keytool")
    if keytool is None:
        raise FileNotFoundError("keytool (the JDK's) is not on PATH; install a Java 17 JDK")
    cacerts = Path(os.path.realpath(keytool)).parent.parent / "lib" / "security" / "cacerts"
    tmp = path.with_suffix(".building")
    tmp.unlink(missing_ok=True)

    def run(*args: str) -> None:
        done = subprocess.run([keytool, *args], capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"keytool {args[0]} failed: {(done.stderr or done.stdout)[-500:]}")

    # A truststore's password guards no secret (it holds public certificates): it may be
    # on keytool's command line, like the JDK's own `changeit`.
    common = ["-storetype", "PKCS12", "-storepass", password]
    if cacerts.exists():
        run("-importkeystore", "-srckeystore", str(cacerts), "-srcstorepass", "changeit",
            "-destkeystore", str(tmp), "-deststoretype", "PKCS12", "-deststorepass", password,
            "-noprompt")  # fmt: skip
    certs = x509.load_pem_x509_certificates(ca_bundle.read_bytes())
    with tempfile.TemporaryDirectory() as scratch:
        for i, cert in enumerate(certs):
            pem = Path(scratch) / f"ca{i}.pem"
            pem.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
            run("-importcert", "-alias", f"freshness-ca-{i}", "-file", str(pem),
                "-keystore", str(tmp), *common, "-noprompt")  # fmt: skip
    os.chmod(tmp, 0o600)
    tmp.replace(path)
    return path
