"""Reading one task's `GET /metrics` (docs/metrics.md): the request and the text format.

The dashboard scrapes as Prometheus does: one HTTP/1.1 request per connection, the
cluster's token as `Authorization: Bearer`, HTTPS with a certificate the cluster CA signed
when the cluster has TLS. It reads only what tensorweave's tasks write (the text format
0.0.4 of `runtime/metrics.py`): `name{label="value",...} number` lines, `#` lines aside.

Example:
    >>> m = parse_exposition('steps_total 12\\nsent_bytes_total{peer="/job:ps/task:0"} 64\\n')
    >>> m.value("steps_total"), m.by_label("sent_bytes_total", "peer")
    (12.0, {'/job:ps/task:0': 64.0})
"""
from __future__ import annotations

import http.client
import math
import re
import socket
from dataclasses import dataclass, field

from tensorweave.base.address import parse_host_port
from tensorweave.distributed.transport.credentials import Credentials

__all__ = ["Metrics", "ScrapeError", "parse_exposition", "scrape"]

# name, then an optional {labels}, then the value (a timestamp after it is not written
# by our tasks and is ignored).
_LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
_UNESCAPE = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}


class ScrapeError(Exception):
    """A task could not be scraped: refused, unreachable, or an answer other than 200."""


@dataclass
class Metrics:
    """One scrape's samples: family name -> [(labels, value)]."""

    samples: dict[str, list[tuple[dict[str, str], float]]] = field(default_factory=dict)

    def value(self, name: str, **labels: str) -> float | None:
        """The sum of `name`'s samples whose labels include `labels`; None if none."""
        found = [v for lab, v in self.samples.get(name, ())
                 if all(lab.get(k) == want for k, want in labels.items())]
        return sum(found) if found else None

    def by_label(self, name: str, label: str, **where: str) -> dict[str, float]:
        """`name`'s values summed per value of `label` (samples matching `where`)."""
        out: dict[str, float] = {}
        for lab, v in self.samples.get(name, ()):
            if label in lab and all(lab.get(k) == want for k, want in where.items()):
                out[lab[label]] = out.get(lab[label], 0.0) + v
        return out

    def labels(self, name: str) -> list[dict[str, str]]:
        """The label sets of `name`'s samples."""
        return [lab for lab, _ in self.samples.get(name, ())]


def _number(text: str) -> float:
    special = {"+Inf": math.inf, "-Inf": -math.inf, "NaN": math.nan}
    return special[text] if text in special else float(text)


def parse_exposition(text: str) -> Metrics:
    """Parses Prometheus text format; lines it cannot read are skipped, not fatal (a
    dashboard shows what it can).

    Args:
        text: the body of a `GET /metrics` answer.
    """
    metrics = Metrics()
    for line in text.splitlines():
        m = _LINE.match(line)
        if m is None or line.startswith("#"):
            continue
        name, raw_labels, raw_value = m.groups()
        labels = {k: re.sub(r"\\[\\\"n]", lambda e: _UNESCAPE[e.group(0)], v)
                  for k, v in _LABEL.findall(raw_labels or "")}
        try:
            value = _number(raw_value)
        except ValueError:
            continue
        metrics.samples.setdefault(name, []).append((labels, value))
    return metrics


def scrape(address: str, credentials: Credentials | None = None,
           timeout: float = 2.0) -> Metrics:
    """GET /metrics from the task at `address` ("host:port").

    Raises:
        ScrapeError: the task refused, did not answer within `timeout`, or answered
            other than 200 (a 401 says the token is missing or wrong).
    """
    host, port = parse_host_port(address)
    creds = credentials or Credentials()
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
    except OSError as e:
        raise ScrapeError(f"{address}: {e.strerror or e}") from None
    try:
        if creds.tls:
            sock = creds.client_context().wrap_socket(
                sock, server_hostname=creds.server_name or host)
        auth = f"Authorization: Bearer {creds.token.decode()}\r\n" if creds.token else ""
        sock.sendall(f"GET /metrics HTTP/1.1\r\nHost: {host}\r\n{auth}"
                     "Connection: close\r\n\r\n".encode())
        resp = http.client.HTTPResponse(sock)
        resp.begin()
        body = resp.read().decode("utf-8", "replace")
    except (OSError, http.client.HTTPException) as e:
        raise ScrapeError(f"{address}: {e}") from None
    finally:
        sock.close()
    if resp.status != 200:
        hint = " (the cluster's token: --auth-token-file)" if resp.status == 401 else ""
        raise ScrapeError(f"{address}: HTTP {resp.status} {resp.reason}{hint}")
    return parse_exposition(body)
