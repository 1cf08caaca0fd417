"""Who may talk to a task: mutual TLS with a cluster CA and/or a shared token.

Off by default (any process that reaches a task's port may run graphs there,
as in TF 1.x). A cluster opts in on every task and client alike, with these
environment variables (knobs of `tensorweave/base/knobs.py`; or
`Server(..., credentials=Credentials(...))`):

    TENSORWEAVE_TLS_CA, TENSORWEAVE_TLS_CERT, TENSORWEAVE_TLS_KEY
        PEM files: the cluster CA, this process's certificate and its key. Every
        connection (gRPC, big-tensor pulls, same-host sockets) is TLS, and both
        ends must show a certificate the CA signed.
    TENSORWEAVE_TLS_SERVER_NAME
        check servers' certificates against this name instead of the host of
        the address dialled (one certificate for every task; `tensorweave certs`
        puts "tensorweave-cluster" in its certificates for this).
    TENSORWEAVE_AUTH_TOKEN_FILE
        a file holding the cluster's shared secret. Every call carries a digest
        of it (gRPC metadata; the side channels' handshake), compared in
        constant time. Without TLS this authenticates but does not encrypt.

The socket-level handshakes of the side channels are in `sidechannel.py`;
gRPC's part (channel credentials, the servers' check) in `grpc_auth.py`.

Example:
    >>> creds = Credentials.from_files(token_file="/run/secrets/tw/token")
    >>> server = tf.train.Server(cluster, "ps", 0, credentials=creds)  # doctest: +SKIP
"""
from __future__ import annotations

import hashlib
import hmac
import os
import ssl
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field

from tensorweave.base import knobs
from tensorweave.framework import errors

__all__ = ["CA_ENV", "CERT_ENV", "CLUSTER_NAME", "Credentials", "KEY_ENV", "NONE",
           "SERVER_NAME_ENV", "TOKEN_FILE_ENV", "default", "refused", "set_default"]

# The variables' names, for messages and for the launcher that sets them.
CA_ENV = knobs.TLS_CA.name
CERT_ENV = knobs.TLS_CERT.name
KEY_ENV = knobs.TLS_KEY.name
SERVER_NAME_ENV = knobs.TLS_SERVER_NAME.name
TOKEN_FILE_ENV = knobs.AUTH_TOKEN_FILE.name
# In the order of `from_files`' arguments.
_KNOBS = (knobs.TLS_CA, knobs.TLS_CERT, knobs.TLS_KEY, knobs.AUTH_TOKEN_FILE,
          knobs.TLS_SERVER_NAME)
CLUSTER_NAME = "tensorweave-cluster"
_TLS_ENVS = (CA_ENV, CERT_ENV, KEY_ENV)
_DIGEST_SALT = b"tensorweave-auth-v1\0"
TLS_HINT = (f"set {CA_ENV}, {CERT_ENV} and {KEY_ENV} to the cluster CA and a certificate "
            "it signed (`tensorweave launch --tls` makes them for a local cluster; "
            "`tensorweave certs` for a real one)")
TOKEN_HINT = (f"set {TOKEN_FILE_ENV} to the cluster's token file (`tensorweave launch` "
              "gives its tasks one and prints its path; `tensorweave manifest` mounts it at "
              "/etc/tensorweave/auth/token; `tensorweave certs` writes one for a real cluster)")


def _read(path: str, what: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise ValueError(f"Cannot read the {what} {path!r}: {e.strerror or e}. Fix the path "
                         "or unset the variable.") from None


@dataclass(frozen=True, repr=False)
class Credentials:
    """A process's credentials for the cluster's connections (both directions).

    Attributes:
        ca, cert, key: PEM bytes of the cluster CA, this process's certificate and
            key (all three or none).
        token: the shared secret (b"" for none).
        server_name: the name servers' certificates are checked against (None: the
            host of the address dialled).
    """

    ca: bytes = b""
    cert: bytes = b""
    key: bytes = b""
    token: bytes = b""
    server_name: str | None = None
    _contexts: dict = field(default_factory=dict, init=False, compare=False, hash=False,
                            repr=False)

    def __post_init__(self) -> None:
        given = [bool(self.ca), bool(self.cert), bool(self.key)]
        if any(given) and not all(given):
            raise ValueError(f"TLS needs the CA, a certificate and its key together; got only "
                             f"{[n for n, g in zip(_TLS_ENVS, given) if g]}: {TLS_HINT}.")

    @property
    def tls(self) -> bool:
        return bool(self.ca)

    @property
    def enabled(self) -> bool:
        return self.tls or bool(self.token)

    @property
    def digest(self) -> bytes:
        """What goes on the wire for the token: 32 bytes (never the token itself)."""
        return hashlib.sha256(_DIGEST_SALT + self.token).digest() if self.token else b""

    def token_matches(self, digest: bytes) -> bool:
        """Constant-time comparison of a peer's digest with ours."""
        return hmac.compare_digest(digest, self.digest)

    def bearer_matches(self, token: bytes) -> bool:
        """Whether `token`, sent as it is (an HTTP `Authorization: Bearer` header: a
        Prometheus scrape), is the cluster's; compared as digests, in constant time."""
        return bool(self.token) and self.token_matches(
            hashlib.sha256(_DIGEST_SALT + token).digest())

    def __repr__(self) -> str:  # never the key or the token (logs, tracebacks)
        return f"Credentials({self.describe()}, server_name={self.server_name!r})"

    def describe(self) -> str:
        parts = (["mutual TLS"] if self.tls else []) + (["auth token"] if self.token else [])
        return " + ".join(parts) or "none"

    @classmethod
    def from_files(cls, ca: str | None = None, cert: str | None = None, key: str | None = None,
                   token_file: str | None = None, server_name: str | None = None
                   ) -> "Credentials":
        """Credentials from PEM files and a token file (each None: not used).

        Raises:
            ValueError: a file cannot be read, the token file is empty, or the TLS
                files are incomplete.
        """
        token = b""
        if token_file:
            token = _read(token_file, "auth token file").strip()
            if not token:
                raise ValueError(f"The auth token file {token_file!r} is empty; write a long "
                                 "random secret into it.")
        return cls(ca=_read(ca, "TLS CA file") if ca else b"",
                   cert=_read(cert, "TLS certificate file") if cert else b"",
                   key=_read(key, "TLS key file") if key else b"",
                   token=token, server_name=server_name or None)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> "Credentials":
        """Credentials named by the TENSORWEAVE_TLS_* / TENSORWEAVE_AUTH_TOKEN_FILE variables."""
        return cls.from_files(*(k.get(environ) for k in _KNOBS))

    def server_context(self) -> ssl.SSLContext:
        """TLS for accepting: our certificate, and the client's required and checked."""
        return self._context(server=True)

    def client_context(self) -> ssl.SSLContext:
        """TLS for connecting: the server's certificate checked against the CA, ours shown."""
        return self._context(server=False)

    def _context(self, server: bool) -> ssl.SSLContext:
        ctx = self._contexts.get(server)
        if ctx is not None:
            return ctx
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER if server else ssl.PROTOCOL_TLS_CLIENT)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.load_verify_locations(cadata=self.ca.decode("ascii"))
        _load_chain(ctx, self.cert, self.key)
        ctx.verify_mode = ssl.CERT_REQUIRED
        if server:
            ctx.set_alpn_protocols(["h2"])  # gRPC clients insist on HTTP/2's ALPN
        self._contexts[server] = ctx
        return ctx


def _load_chain(ctx: ssl.SSLContext, cert: bytes, key: bytes) -> None:
    # ssl loads certificates only from files: a private temporary directory, removed at once.
    import tempfile
    with tempfile.TemporaryDirectory(prefix="tw-tls-") as d:
        cert_path, key_path = os.path.join(d, "cert.pem"), os.path.join(d, "key.pem")
        for path, data in ((cert_path, cert), (key_path, key)):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        try:
            ctx.load_cert_chain(cert_path, key_path)
        except ssl.SSLError as e:
            raise ValueError(f"The TLS certificate and key do not load or do not match "
                             f"({e.reason or e}); check {CERT_ENV} and {KEY_ENV}.") from None


NONE = Credentials()
_default: list[Credentials] = []
_env_cache: dict[tuple, Credentials] = {}
_lock = threading.Lock()


def set_default(credentials: Credentials | None) -> None:
    """Makes `credentials` this process's own (for clients and servers that get none);
    None goes back to the environment variables."""
    with _lock:
        _default[:] = [credentials] if credentials is not None else []


def default() -> Credentials:
    """This process's credentials: `set_default`'s, else the environment's."""
    with _lock:
        if _default:
            return _default[0]
    key = tuple(k.get() for k in _KNOBS)
    if not any(key[:4]):
        return NONE
    with _lock:
        creds = _env_cache.get(key)
    if creds is None:
        creds = Credentials.from_env()
        with _lock:
            _env_cache[key] = creds
    return creds


def refused(code: int, who: str, reason: str, hint: str, method: str = "") -> errors.OpError:
    """The error a client sees when `who` (a task) refuses its credentials; `method`
    names the call refused ("JobDone"), when known."""
    what = f"the {method} call" if method else "this connection"
    return errors.make_error(code, f"Task {who} refused {what}: {reason}; {hint}.")
