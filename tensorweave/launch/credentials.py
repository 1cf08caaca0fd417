"""Throw-away credentials for a cluster: a CA, per-task certificates, a token.

`tensorweave launch` uses `LocalCredentials` to make them in a private temporary
directory for one run (a token always, unless `--insecure`; with `--tls` also a CA
and a certificate per task), and hands each task the environment variables of
`tensorweave.distributed.transport.credentials` that point at its files.
`tensorweave manifest` likewise writes a Secret holding a generated token into its
manifests and mounts it in every pod (`secure_manifests`).
`write_cluster_certificates` makes the same files for a real cluster (`tensorweave
certs`), e.g. to put in a Kubernetes Secret.

Certificates are EC P-256, valid for both server and client authentication
(every task is both), with the task's host names as subject alternative names
plus the loopback names ("localhost", "ip6-localhost", 127.0.0.1 and ::1: see
`base.address.LOOPBACK_NAMES`), and the fixed name `CLUSTER_NAME`, which
`TENSORWEAVE_TLS_SERVER_NAME` can select so one certificate fits every task.

Example:
    >>> creds = LocalCredentials(tls=True, token=False)
    >>> env = creds.env(Task("ps", 0))
    >>> sorted(env)
    ['TENSORWEAVE_TLS_CA', 'TENSORWEAVE_TLS_CERT', 'TENSORWEAVE_TLS_KEY']
    >>> creds.close()
"""
from __future__ import annotations

import argparse
import datetime
import ipaddress
import os
import secrets
import shutil
import sys
import tempfile
from collections.abc import Iterable
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tensorweave.base.address import LOOPBACK_NAMES
from tensorweave.distributed.topology import Task
from tensorweave.distributed.transport.credentials import (
    CA_ENV, CERT_ENV, CLUSTER_NAME, KEY_ENV, SERVER_NAME_ENV, TOKEN_FILE_ENV, Credentials)

__all__ = ["CertificateAuthority", "LocalCredentials", "add_certs_parser", "add_launch_flags",
           "add_manifest_flags", "add_server_flags", "apply_server_flags",
           "launch_credentials", "mount_secrets", "run_with_credentials", "secure_manifests",
           "write_cluster_certificates"]

_VALID_DAYS = 365
_LOCAL_NAMES = (*sorted(LOOPBACK_NAMES), CLUSTER_NAME)  # base.address: one loopback set


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

    def issue(self, common_name: str, hosts: Iterable[str], local: bool = True
              ) -> tuple[bytes, bytes]:
        """A (certificate PEM, private key PEM) for a task reachable at `hosts` (and, with
        `local`, at localhost) and named `CLUSTER_NAME`; usable as server and client."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.timezone.utc)
        cert = (
            x509.CertificateBuilder().subject_name(_name(common_name))
            .issuer_name(self._cert.subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=_VALID_DAYS))
            .add_extension(x509.SubjectAlternativeName(
                _alt_names([*hosts, *(_LOCAL_NAMES if local else [CLUSTER_NAME])])),
                critical=False)
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
    """A throw-away CA with per-task certificates and/or a token, for a local cluster.

    Args:
        tls: make a CA, and a certificate for each task when `env` first asks.
        token: make a random shared token.

    The files live in a private temporary directory until `close()`.
    """

    def __init__(self, tls: bool, token: bool) -> None:
        self.directory = tempfile.mkdtemp(prefix="tensorweave-credentials-")
        self._ca = CertificateAuthority() if tls else None
        self._ca_path = (_write(os.path.join(self.directory, "ca.crt"), self._ca.cert_pem)
                         if self._ca else "")
        self._token_path = (_write(os.path.join(self.directory, "token"),
                                   secrets.token_hex(32).encode()) if token else "")
        self._env: dict[str, dict[str, str]] = {}

    def env(self, task: Task) -> dict[str, str]:
        """The environment variables that give `task` its credentials (its own
        certificate, for its loopback address)."""
        env = self._env.get(task.name)
        if env is None:
            env = {}
            if self._ca is not None:
                cert, key = self._ca.issue(f"/job:{task.job}/task:{task.index}", [])
                stem = os.path.join(self.directory, f"{task.job}-{task.index}")
                env = {CA_ENV: self._ca_path, CERT_ENV: _write(stem + ".crt", cert),
                       KEY_ENV: _write(stem + ".key", key)}
            if self._token_path:
                env[TOKEN_FILE_ENV] = self._token_path
            self._env[task.name] = env
        return dict(env)

    def describe(self) -> str:
        """What the tasks get ("auth token", "mutual TLS + auth token")."""
        return " + ".join((["mutual TLS"] if self._ca else [])
                          + (["auth token"] if self._token_path else [])) or "nothing"

    def env_hint(self) -> str:
        """The variable a client outside the launch sets to reach the tasks."""
        tls = (f"{CA_ENV}, {CERT_ENV} and {KEY_ENV} to {self.directory}'s ca.crt and a "
               "task's .crt and .key") if self._ca else ""
        token = f"{TOKEN_FILE_ENV}={self._token_path}" if self._token_path else ""
        return " and ".join(p for p in (token, tls) if p)

    def close(self) -> None:
        """Deletes the files."""
        shutil.rmtree(self.directory, ignore_errors=True)


# ----- command-line flags and manifests (used by cli.py) ------------------------------

TLS_MOUNT = "/etc/tensorweave/tls"
AUTH_MOUNT = "/etc/tensorweave/auth"


def add_server_flags(p: argparse.ArgumentParser) -> None:
    """`tensorweave server`'s credential flags (each sets its environment variable)."""
    p.add_argument("--tls-ca", metavar="PEM", help=f"cluster CA certificate ({CA_ENV})")
    p.add_argument("--tls-cert", metavar="PEM", help=f"this task's certificate ({CERT_ENV})")
    p.add_argument("--tls-key", metavar="PEM", help=f"this task's private key ({KEY_ENV})")
    p.add_argument("--tls-server-name", metavar="NAME",
                   help=f"check peers' certificates against NAME ({SERVER_NAME_ENV})")
    p.add_argument("--auth-token-file", metavar="FILE",
                   help=f"the cluster's shared token ({TOKEN_FILE_ENV})")


def apply_server_flags(args: argparse.Namespace) -> None:
    """Puts the flags' values into this process's environment (server and clients)."""
    for flag, name in (("tls_ca", CA_ENV), ("tls_cert", CERT_ENV), ("tls_key", KEY_ENV),
                       ("tls_server_name", SERVER_NAME_ENV),
                       ("auth_token_file", TOKEN_FILE_ENV)):
        value = getattr(args, flag, None)
        if value:
            os.environ[name] = value
    Credentials.from_env()  # a missing or unreadable file: ValueError naming it, now


_INSECURE_HELP = ("no generated auth token: any process that reaches a task's port may run "
                  "graphs there (without credentials a task still admits only its "
                  "cluster's hosts, see --allow-from)")


def add_launch_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tls", action="store_true",
                   help="mutual TLS on every connection: a throw-away CA and a certificate "
                        "per task, deleted when the run ends")
    p.add_argument("--auth-token", action="store_true",
                   help="a throw-away shared token that every connection must present (the "
                        "default; deleted when the run ends)")
    p.add_argument("--insecure", action="store_true", help=_INSECURE_HELP)


def _check_insecure(args: argparse.Namespace, *flags: str) -> None:
    given = [f"--{f.replace('_', '-')}" for f in flags if getattr(args, f, None)]
    if getattr(args, "insecure", False) and given:
        raise ValueError(f"--insecure turns credentials off, {' and '.join(given)} asks for "
                         "them; drop one.")


def launch_credentials(args: argparse.Namespace) -> LocalCredentials | None:
    """The credentials of a `launch`: a generated token (and, with `--tls`, a CA and a
    certificate per task); None with `--insecure`.

    Raises:
        ValueError: `--insecure` with `--tls` or `--auth-token`.
    """
    _check_insecure(args, "tls", "auth_token")
    if args.insecure:
        return None
    return LocalCredentials(tls=args.tls, token=True)


def add_manifest_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tls-secret", metavar="NAME",
                   help=f"Kubernetes Secret with ca.crt, tls.crt, tls.key (`tensorweave "
                        f"certs`), mounted at {TLS_MOUNT} in every pod: mutual TLS")
    p.add_argument("--auth-secret", metavar="NAME",
                   help=f"an existing Kubernetes Secret with a 'token' key, mounted at "
                        f"{AUTH_MOUNT}, instead of the generated one (default: the manifests "
                        "hold a Secret <name>-auth with a generated token)")
    p.add_argument("--insecure", action="store_true", help=_INSECURE_HELP)


def secure_manifests(docs: list[dict[str, Any]], args: argparse.Namespace, name: str,
                     namespace: str) -> list[dict[str, Any]]:
    """`docs` with the job's credentials: unless `--insecure`, a token Secret (a Secret
    `<name>-auth` with a generated token written first, or `--auth-secret`'s), and
    `--tls-secret`, mounted in every pod with the variables that point at them.

    Raises:
        ValueError: `--insecure` with `--tls-secret` or `--auth-secret`.
    """
    _check_insecure(args, "tls_secret", "auth_secret")
    auth = None if args.insecure else args.auth_secret
    if not args.insecure and not auth:
        auth = f"{name}-auth"
        docs = [{"apiVersion": "v1", "kind": "Secret",
                 "metadata": {"name": auth, "namespace": namespace,
                              "labels": {"app.kubernetes.io/managed-by": "tensorweave"}},
                 "type": "Opaque", "stringData": {"token": secrets.token_hex(32)}}, *docs]
    return mount_secrets(docs, args.tls_secret, auth)


def mount_secrets(docs: list[dict[str, Any]], tls_secret: str | None,
                  auth_secret: str | None) -> list[dict[str, Any]]:
    """Mounts the Secrets into every pod of `docs` (TFJob replicas, Jobs) and sets the
    environment variables that point at them; returns `docs`.

    Example:
        >>> docs = mount_secrets(build_manifests(opts), "tw-tls", None)  # doctest: +SKIP
    """
    mounts: list[tuple[str, str, dict[str, str]]] = []
    if tls_secret:
        mounts.append((tls_secret, TLS_MOUNT, {
            CA_ENV: f"{TLS_MOUNT}/ca.crt", CERT_ENV: f"{TLS_MOUNT}/tls.crt",
            KEY_ENV: f"{TLS_MOUNT}/tls.key", SERVER_NAME_ENV: CLUSTER_NAME}))
    if auth_secret:
        mounts.append((auth_secret, AUTH_MOUNT, {TOKEN_FILE_ENV: f"{AUTH_MOUNT}/token"}))
    for pod in _pod_specs(docs) if mounts else []:
        for i, (secret, path, env) in enumerate(mounts):
            volume = f"tensorweave-credentials-{i}"
            pod.setdefault("volumes", []).append(
                {"name": volume, "secret": {"secretName": secret, "defaultMode": 0o400}})
            for container in pod["containers"]:
                container.setdefault("volumeMounts", []).append(
                    {"name": volume, "mountPath": path, "readOnly": True})
                container.setdefault("env", []).extend(
                    {"name": k, "value": v} for k, v in env.items())
    return docs


def _pod_specs(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    specs = []
    for doc in docs:
        if doc.get("kind") == "TFJob":
            specs += [r["template"]["spec"] for r in doc["spec"]["tfReplicaSpecs"].values()]
        elif doc.get("kind") == "Job":
            specs.append(doc["spec"]["template"]["spec"])
    return specs


def add_certs_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "certs", help="write a cluster CA, a certificate and a token for a real cluster",
        description="Write ca.crt, tls.crt, tls.key (one certificate every task uses, valid "
                    f"for the given hosts and the name {CLUSTER_NAME!r}) and a random token "
                    "into DIR, e.g. for: kubectl create secret generic NAME --from-file=DIR")
    p.add_argument("--out", required=True, metavar="DIR", help="directory to write into")
    p.add_argument("--host", action="append", default=[], metavar="HOST",
                   help="a host name or address the tasks are reached at (repeatable)")
    p.add_argument("--no-token", action="store_true", help="do not write a token file")
    p.set_defaults(run=_run_certs, takes_command=False)


def _run_certs(args: argparse.Namespace, command: list[str]) -> int:
    files = write_cluster_certificates(args.out, args.host, token=not args.no_token)
    print("tensorweave certs: wrote " + ", ".join(sorted(files.values())), file=sys.stderr)
    return 0


def run_with_credentials(args: argparse.Namespace, options: Any, run: Any) -> int:
    """Runs `run()` with the launch's credentials (`launch_credentials`) given to every
    task (`options.task_env`), deleting them afterwards."""
    creds = launch_credentials(args)
    if creds is None:
        return int(run())
    tls = " and a TLS certificate" if "TLS" in creds.describe() else ""
    print(f"tensorweave launch: every task has a generated auth token{tls}; another client "
          f"of this cluster sets {creds.env_hint()} (--insecure: none)", file=sys.stderr)
    options.task_env = creds.env
    try:
        return int(run())
    finally:
        creds.close()
