"""A live web dashboard of a cluster, from every task's `GET /metrics` (docs/dashboard.md).

`tensorweave launch --dashboard [PORT]` serves it for the job it runs;
`tensorweave dashboard --cluster SPEC` for any running cluster.

Example:
    >>> from tensorweave.launch.dashboard import Collector, Dashboard
    >>> d = Dashboard(Collector({"ps 0": "localhost:2222"}))  # doctest: +SKIP
    >>> d.start(); d.url                                     # doctest: +SKIP
    'http://127.0.0.1:41234/'
"""
from tensorweave.launch.dashboard.collector import Collector as Collector
from tensorweave.launch.dashboard.server import Dashboard as Dashboard

__all__ = ["Collector", "Dashboard"]
