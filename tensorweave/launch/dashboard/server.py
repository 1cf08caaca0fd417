"""The dashboard's web server: the page, its own JS and CSS, and small JSON endpoints.

Plain `http.server` on one port (loopback by default): `/` is the page, `/static/NAME`
the script and style shipped in this package (nothing from a CDN, so it works offline
and through `ssh -L` / `kubectl port-forward`), and the page polls three small JSON
endpoints about once a second (no long-lived connection to hold open):

- `/api/cluster`: tasks, links with bytes/s, ps loads and hottest variables, sync
  waits, the global step, steps/s and loss, now;
- `/api/series?since=T`: history points after time T (seconds since the epoch);
- `/api/events?after=N`: events whose id is above N (restarts, faults, tasks that stop
  answering).

It reads nothing of the cluster but `GET /metrics` (collector.py), and it answers
anyone who reaches its port: it binds 127.0.0.1 unless told otherwise.

Example:
    >>> d = Dashboard(Collector({"ps 0": "localhost:2222"}), port=0)  # doctest: +SKIP
    >>> d.start(); print(d.url)                                      # doctest: +SKIP
    http://127.0.0.1:41234/
"""
from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tensorweave.launch.dashboard.collector import Collector

__all__ = ["Dashboard"]

_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
          ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml"}
_STATIC_NAME = re.compile(r"^[A-Za-z0-9_-]+\.(?:js|css|svg|html)$")  # no path, no dots


def _static(name: str) -> bytes | None:
    """A file shipped in static/ (package data), or None."""
    if not _STATIC_NAME.match(name):
        return None
    path = resources.files("tensorweave.launch.dashboard").joinpath("static", name)
    return path.read_bytes() if path.is_file() else None


def _float(query: dict[str, list[str]], key: str) -> float:
    try:
        return float(query.get(key, ["0"])[0])
    except ValueError:
        return 0.0


class _Handler(BaseHTTPRequestHandler):
    dashboard: Dashboard  # set on the subclass made per server
    protocol_version = "HTTP/1.1"
    server_version = "tensorweave-dashboard"

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        collector = self.dashboard.collector
        if url.path in ("/", "/index.html"):
            self._file("index.html")
        elif url.path.startswith("/static/"):
            self._file(url.path[len("/static/"):])
        elif url.path == "/api/cluster":
            self._json(dict(collector.cluster(), title=self.dashboard.title))
        elif url.path == "/api/series":
            self._json({"points": collector.series(_float(query, "since"))})
        elif url.path == "/api/events":
            self._json({"events": collector.events(int(_float(query, "after")))})
        else:
            self._send(404, b"not found: the page is /, its data /api/cluster, "
                       b"/api/series, /api/events\n", "text/plain; charset=utf-8")

    def _file(self, name: str) -> None:
        data = _static(name)
        if data is None:
            self._send(404, f"no static file {name!r}\n".encode(), "text/plain")
            return
        self._send(200, data, _TYPES[name[name.rfind("."):]])

    def _json(self, value: Any) -> None:
        # NaN and infinities are not JSON: none of ours should be there, and None is safe.
        self._send(200, json.dumps(value, allow_nan=False, default=str).encode(),
                   "application/json")

    def _send(self, status: int, body: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")  # every poll must see now
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        """Quiet: a poll a second per open page would drown the launcher's output."""


class Dashboard:
    """Serves the page for `collector`'s cluster on host:port (0: a free port).

    Args:
        collector: where the numbers come from (started and closed with the server).
        host: the address to listen on; 127.0.0.1 by default (reach it from elsewhere
            through a port-forward, or pass "0.0.0.0" knowing anyone may read it).
        port: the port; 0 picks a free one (see `url`).
        title: shown on the page.

    Raises:
        OSError: the port cannot be listened on (in use, not ours).
    """

    def __init__(self, collector: Collector, host: str = "127.0.0.1", port: int = 0,
                 title: str = "tensorweave") -> None:
        self.collector = collector
        self.title = title
        handler = type("Handler", (_Handler,), {"dashboard": self})
        self._server = ThreadingHTTPServer((host, port), handler)
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The page's address, e.g. http://127.0.0.1:8080/."""
        host, port = str(self._server.server_address[0]), self._server.server_address[1]
        shown = host if ":" not in host else f"[{host}]"
        return f"http://{shown}:{port}/"

    def start(self) -> None:
        """Starts scraping and serving, each in a daemon thread; returns at once."""
        self.collector.start()
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.2},
                                        name="dashboard-http", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stops serving and scraping."""
        if self._thread is not None:
            self._server.shutdown()
        self._server.server_close()
        self.collector.close()
