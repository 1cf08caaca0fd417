"""The launcher's control endpoint, which `tensorweave scale` talks to.

An elastic launch (`--max-workers`) listens on a Unix socket in a private directory of
this user (`<tmp>/tensorweave-<uid>/jobs/<id>/`, mode 0700; the socket 0600), so only
this user's processes on this machine can reach it: no port, nothing on the network, and
the peer's uid is checked again on each connection (SO_PEERCRED). The job is named by a
short id, printed at start, or by its `--logdir`, where the launcher writes
`tensorweave-job.json` (0600) pointing at the socket; both go when the job ends.

One request per connection, one JSON line each way: ``{"op": "scale", "workers": 3}``
or ``{"op": "status"}``; the answer is ``{"ok": true, "message": ..., "workers": ...}``
or ``{"ok": false, "error": ...}``. The launcher's supervising loop answers, not the
socket's thread (`ControlServer.requests`), so tasks are started and stopped in one
place.

Example:
    >>> server = ControlServer(logdir="/tmp/run1")       # doctest: +SKIP
    >>> request("/tmp/run1", {"op": "scale", "workers": 3})  # doctest: +SKIP
    {'ok': True, 'message': 'starting worker 1, worker 2', ...}
"""
from __future__ import annotations

import json
import os
import queue
import secrets
import shutil
import socket
import struct
import tempfile
import threading
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ControlRequest", "ControlServer", "JOB_FILE", "request", "resolve"]

JOB_FILE = "tensorweave-job.json"
_SOCKET = "control.sock"
_MAX_REQUEST_BYTES = 4096
_REPLY_SECS = 30.0  # the loop answers within a round; a stopping job may take longer


def _jobs_dir() -> str:
    return os.path.join(tempfile.gettempdir(), f"tensorweave-{os.getuid()}", "jobs")


@dataclass
class ControlRequest:
    """One request for the launcher's loop; `answer` hands the reply back."""

    payload: dict[str, Any]
    _reply: queue.Queue = field(default_factory=lambda: queue.Queue(maxsize=1))

    def answer(self, reply: dict[str, Any]) -> None:
        self._reply.put(reply)


class ControlServer:
    """Listens for control requests; the launcher takes them from `requests`.

    Args:
        logdir: the job's --logdir, where the pointer file goes (None: none).

    Raises:
        OSError: the private directory or the socket cannot be made.
    """

    def __init__(self, logdir: str | None = None) -> None:
        self.job_id = secrets.token_hex(4)
        self.dir = os.path.join(_jobs_dir(), self.job_id)
        os.makedirs(os.path.dirname(self.dir), mode=0o700, exist_ok=True)
        os.mkdir(self.dir, 0o700)
        os.chmod(os.path.dirname(self.dir), 0o700)  # an older one made by another umask
        self.path = os.path.join(self.dir, _SOCKET)
        self.requests: queue.Queue[ControlRequest] = queue.Queue()
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.bind(self.path)  # inside a 0700 directory: private from the start
        os.chmod(self.path, 0o600)
        self._sock.listen(8)
        self._pointer = os.path.join(logdir, JOB_FILE) if logdir else None
        if self._pointer:
            fd = os.open(self._pointer, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as f:
                json.dump({"id": self.job_id, "control": self.path, "pid": os.getpid()}, f)
        self._closed = False
        threading.Thread(target=self._serve, daemon=True, name="tw-launch-control").start()

    def file(self, name: str) -> str:
        """A path in the job's private directory (the members file lives there)."""
        return os.path.join(self.dir, name)

    def close(self) -> None:
        """Stops listening and removes the socket, its directory and the pointer file."""
        self._closed = True
        self._sock.close()
        if self._pointer:
            try:
                os.unlink(self._pointer)
            except FileNotFoundError:
                pass
        shutil.rmtree(self.dir, ignore_errors=True)

    def _serve(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._handle, args=(conn,), daemon=True,
                             name="tw-launch-control-conn").start()

    def _handle(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(_REPLY_SECS)
            try:
                uid = struct.unpack("3i", conn.getsockopt(
                    socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))[1]
                if uid != os.getuid():
                    reply: dict[str, Any] = {"ok": False, "error": f"uid {uid} may not "
                                             "control this job"}
                else:
                    reply = self._relay(_read_line(conn))
                conn.sendall(json.dumps(reply).encode() + b"\n")
            except (OSError, ValueError) as e:
                try:
                    conn.sendall(json.dumps({"ok": False, "error": str(e)}).encode() + b"\n")
                except OSError:
                    pass

    def _relay(self, line: bytes) -> dict[str, Any]:
        payload = json.loads(line)
        if not isinstance(payload, dict):
            raise ValueError(f"a control request is a JSON object, got {payload!r}")
        req = ControlRequest(payload)
        self.requests.put(req)
        try:
            return req._reply.get(timeout=_REPLY_SECS)
        except queue.Empty:
            return {"ok": False, "error": "the launcher did not answer (is it stopping?)"}


def _read_line(conn: socket.socket) -> bytes:
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(_MAX_REQUEST_BYTES)
        if not chunk:
            break
        data += chunk
        if len(data) > _MAX_REQUEST_BYTES:
            raise ValueError(f"control request over {_MAX_REQUEST_BYTES} bytes")
    return data


def resolve(job: str) -> str:
    """The control socket of `job`: a launch's --logdir or the id it printed.

    Raises:
        ValueError: no running elastic launch is known by that name.

    Example:
        >>> resolve("/tmp/run1")  # doctest: +SKIP
        '/tmp/tensorweave-1000/jobs/3f9a2c1d/control.sock'
    """
    pointer = os.path.join(job, JOB_FILE)
    if os.path.isdir(job):
        try:
            with open(pointer, encoding="utf-8") as f:
                return str(json.load(f)["control"])
        except (OSError, ValueError, KeyError) as e:
            raise ValueError(f"{job!r} holds no running elastic job ({pointer}: {e}); a "
                             "job is controllable while `tensorweave launch --max-workers "
                             "M --logdir DIR` runs.") from None
    path = os.path.join(_jobs_dir(), os.path.basename(job), _SOCKET)
    if not os.path.exists(path):
        raise ValueError(f"No running elastic job {job!r}: give the --logdir of a `tensorweave "
                         "launch --max-workers M` or the id it printed.")
    return path


def request(job: str, payload: dict[str, Any], timeout: float = _REPLY_SECS + 5
            ) -> dict[str, Any]:
    """Sends one request to the launcher of `job` and returns its answer.

    Raises:
        ValueError: `job` names no running job, or it does not answer.

    Example:
        >>> request("/tmp/run1", {"op": "status"})  # doctest: +SKIP
        {'ok': True, 'message': 'workers 0, 2 of 3 slots', 'workers': [0, 2], ...}
    """
    path = resolve(job)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        try:
            s.connect(path)
            s.sendall(json.dumps(payload).encode() + b"\n")
            line = _read_line(s)
        except OSError as e:
            raise ValueError(f"The launcher of {job!r} does not answer at {path}: {e} (has "
                             "the job ended?)") from None
    if not line:
        raise ValueError(f"The launcher of {job!r} closed the connection without answering.")
    return json.loads(line)
