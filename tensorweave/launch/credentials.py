"""Throw-away credentials for a cluster: a CA, per-task certificates, a token.

`tensorweave launch --tls` (or `--auth-token`) uses `LocalCredentials` to make
them in a private temporary directory for one run, and hands each task the
environment variables of `tensorweave.distributed.transport.credentials` that
point at its files. `write_cluster_certificates` makes the same files for a
real cluster (`tensorweave certs`), e.g. to put in a Kubernetes Secret.

Certificates are EC P-256, valid for both server and client authentication
(every task is both), with the task's host names as subject alternative names
plus "localhost", 127.0.0.1 and ::1, and the fixed name `CLUSTER_NAME`, which
`TENSORWEAVE_TLS_SERVER_NAME` can select so one certificate fits every task.

Example:
    >>> creds = LocalCredentials(Topology.local(1, 2), tls=True, token=False)
    >>> env = creds.env(creds.topology.tasks[0])
    >>> sorted(env)
    ['TENSORWEAVE_TLS_CA', 'TENSORWEAVE_TLS_CERT', 'TENSORWEAVE_TLS_KEY']
    >>> creds.close()
"""
from __future__ import annotations

import datetime
import ipaddress
import os
import secrets
import shutil
import tempfile
from collections.abc import Iterable

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tensorweave.distributed.topology import Task, Topology
from tensorweave.distributed.transport.credentials import (
    CA_ENV, CERT_ENV, CLUSTER_NAME, KEY_ENV, TOKEN_FILE_ENV)

__all__ = ["CertificateAuthority", "LocalCredentials", "write_cluster_certificates"]

_VALID_DAYS = 365
_LOCAL_NAMES = ("localhost", "127.0.0.1", "::1", CLUSTER_NAME)


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "tensorweave"),
                      x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _alt_names(hosts: Iterable[str]) -> list[x509.GeneralName]:
    names: list[x509.GeneralName] = []
    for host in dict.fromkeys(h.strip("[]") for h in hosts if h):
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    return names


class CertificateAuthority:
    """A fresh CA key and self-signed certificate that signs task certificates.

    Example:
        >>> ca = CertificateAuthority()
        >>> cert_pem, key_pem = ca.issue("/job:ps/task:0", ["ps0.example"])
    """

    def __init__(self, common_name: str = "tensorweave cluster CA") -> None:
        self._key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.timezone.utc)
        self._cert = (
            x509.CertificateBuilder().subject_name(_name(common_name))
            .issuer_name(_name(common_name)).public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=_VALID_DAYS))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(
                digital_signature=True, key_cert_sign=True, crl_sign=True,
                content_commitment=False, key_encipherment=False, data_encipherment=False,
                key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
            .sign(self._key, hashes.SHA256()))

    @property
    def cert_pem(self) -> bytes:
        return self._cert.public_bytes(serialization.Encoding.PEM)

    def issue(self, common_name: str, hosts: Iterable[str]) -> tuple[bytes, bytes]:
        """A (certificate PEM, private key PEM) for a task reachable at `hosts`
        (also valid for localhost and the cluster name); usable as server and client."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.timezone.utc)
        cert = (
            x509.CertificateBuilder().subject_name(_name(common_name))
            .issuer_name(self._cert.subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=_VALID_DAYS))
            .add_extension(x509.SubjectAlternativeName(
                _alt_names([*hosts, *_LOCAL_NAMES])), critical=False)
            .add_extension(x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
                critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .sign(self._key, hashes.SHA256()))
        return cert.public_bytes(serialization.Encoding.PEM), _pem_key(key)


def _write(path: str, data: bytes) -> str:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # keys: owner only
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return path


def write_cluster_certificates(directory: str, hosts: Iterable[str],
                               token: bool = True) -> dict[str, str]:
    """Writes ca.crt, tls.crt, tls.key (one certificate for every host) and, with
    `token`, a random auth token file `token` into `directory`.

    Returns:
        File name -> path of what was written.

    Example:
        >>> write_cluster_certificates("/tmp/tw-certs", ["ps-0.train", "worker-0.train"])
        ... # doctest: +SKIP
    """
    os.makedirs(directory, mode=0o700, exist_ok=True)
    ca = CertificateAuthority()
    cert, key = ca.issue("tensorweave task", hosts)
    files = {"ca.crt": ca.cert_pem, "tls.crt": cert, "tls.key": key}
    if token:
        files["token"] = secrets.token_hex(32).encode()
    return {name: _write(os.path.join(directory, name), data) for name, data in files.items()}


class LocalCredentials:
    """A throw-away CA and per-task certificates and/or a token for a local cluster.

    Args:
        topology: the cluster's tasks.
        tls: make a CA and one certificate per task.
        token: make a random shared token.

    The files live in a private temporary directory until `close()`.
    """

    def __init__(self, topology: Topology, tls: bool, token: bool) -> None:
        self.topology = topology
        self.directory = tempfile.mkdtemp(prefix="tensorweave-credentials-")
        self._env: dict[str, dict[str, str]] = {}
        ca = CertificateAuthority() if tls else None
        ca_path = _write(os.path.join(self.directory, "ca.crt"), ca.cert_pem) if ca else ""
        token_path = (_write(os.path.join(self.directory, "token"),
                             secrets.token_hex(32).encode()) if token else "")
        for task in topology.tasks:
            env: dict[str, str] = {}
            if ca is not None:
                address = topology.address(task) or ""
                cert, key = ca.issue(task.name, [address.rpartition(":")[0]])
                stem = os.path.join(self.directory, f"{task.job}-{task.index}")
                env[CA_ENV] = ca_path
                env[CERT_ENV] = _write(stem + ".crt", cert)
                env[KEY_ENV] = _write(stem + ".key", key)
            if token_path:
                env[TOKEN_FILE_ENV] = token_path
            self._env[task.name] = env

    def env(self, task: Task) -> dict[str, str]:
        """The environment variables that give `task` its credentials."""
        return dict(self._env[task.name])

    def close(self) -> None:
        """Deletes the files."""
        shutil.rmtree(self.directory, ignore_errors=True)
