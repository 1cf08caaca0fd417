"""Issue 36, Kubernetes: the Grafana dashboard (docs/grafana/tensorweave.json) and the
Prometheus configs of docs/kubernetes.md cannot drift from what the tasks export.

The dashboard is checked as Grafana reads it (panels with targets on the
`${DS_PROMETHEUS}` input, template variables), and every PromQL expression in it is
taken apart: each metric it names must be one a real task declares on `GET /metrics`
(a server scraped after a few steps), each label it matches, groups or joins on must be
one docs/metrics.md gives that family (or one Prometheus or our scrape configs add),
and each legend's labels must survive the expression's aggregation. The scrape configs
in docs/kubernetes.md must parse and read the annotations, port name and Secret that
`tensorweave manifest` writes.
"""
from __future__ import annotations

import json
import re
import urllib.request

import numpy as np
import pytest
import yaml

import tensorweave as tf
from tensorweave.distributed.topology import free_ports
from tensorweave.launch.credentials import AUTH_MOUNT
from tensorweave.launch.manifest import ManifestOptions, build_manifests
from suite_markers import PORT
from suite_paths import REPO_ROOT

DASHBOARD = REPO_ROOT / "docs" / "grafana" / "tensorweave.json"
DS = "${DS_PROMETHEUS}"
# Labels a series has besides its own: Prometheus' target labels, our scrape configs'
# relabelled ones (docs/kubernetes.md), and `task`, which every panel joins in from
# tensorweave_task_info.
ADDED_LABELS = {"instance", "job", "tensorweave_cluster", "namespace", "pod", "task"}
FUNCTIONS = {"rate", "irate", "increase", "sum", "max", "min", "avg", "count", "topk",
             "bottomk", "histogram_quantile", "count_over_time", "max_over_time",
             "avg_over_time", "changes", "resets", "delta", "deriv", "abs", "clamp_min"}
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and",
            "or", "unless", "offset"}
_CLAUSE = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)")


def parse_promql(expr: str) -> tuple[set[str], set[str], set[str]]:
    """(metric names, label names, labels of the `by` clauses) of a PromQL expression.

    A small reader for the expressions a dashboard holds, not a PromQL parser: strings,
    label matchers and ranges are lifted out first, then clauses, then what is left is
    functions (each must be a known one), keywords, numbers and metric names.

    Example:
        >>> parse_promql('sum by (peer) (rate(x_total{task=~"$t"}[5m]))')
        ({'x_total'}, {'peer', 'task'}, {'peer'})
    """
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    labels: set[str] = set()
    for block in re.findall(r"\{([^}]*)\}", text):
        labels |= set(re.findall(r"([A-Za-z_]\w*)\s*(?:=~|!~|!=|=)", block))
    text = re.sub(r"\[[^\]]*\]", " ", re.sub(r"\{[^}]*\}", " ", text))
    by: set[str] = set()
    for clause, names in _CLAUSE.findall(text):
        named = {n.strip() for n in names.split(",") if n.strip()}
        labels |= named
        by |= named if clause == "by" else set()
    text = _CLAUSE.sub(" ", text)
    metrics = set()
    for word, call in re.findall(r"(?<![\w.$])([A-Za-z_:][\w:]*)(\s*\()?", text):
        if call:
            assert word in FUNCTIONS, f"unknown function {word}() in {expr}"
        elif word not in KEYWORDS:
            metrics.add(word)
    return metrics, labels, by


def _documented_labels() -> dict[str, set[str]]:
    """Family -> labels, from docs/metrics.md's tables."""
    families = {}
    for line in (REPO_ROOT / "docs" / "metrics.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0].startswith("`") and cells[1] in (
                "counter", "gauge", "histogram", "summary"):
            labels = set(re.findall(r"`(\w+)`", cells[2]))
            for name in re.findall(r"`(\w+)`", cells[0]):
                families[name] = labels
    return families


@pytest.fixture(scope="module")
def exported() -> dict[str, str]:
    """Family -> type, as a real task declares them on its port after a few steps."""
    server = tf.train.Server({"ps": [f"localhost:{free_ports(1)[0]}"]}, job_name="ps",
                             task_index=0, exit_when_done=False)
    try:
        with tf.Graph().as_default():
            with tf.device("/job:ps/task:0"):
                v = tf.Variable(np.zeros(4, np.float32))
                step = v.assign_add(np.ones(4, np.float32))
                queue = tf.FIFOQueue(4, [tf.float32], name="inputs")
                enqueue = queue.enqueue([1.0])
            with tf.Session(server.target) as sess:
                sess.run(v.initializer)
                for _ in range(3):
                    sess.run([step, enqueue])
        port = server.target.rsplit(":", 1)[1]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=15) as resp:
            text = resp.read().decode()
    finally:
        server.stop()
    assert "tensorweave_queue_size{" in text and "tensorweave_steps_total 4" in text, text
    return dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M))


def _sample_names(families: dict[str, str]) -> dict[str, str]:
    """Sample name -> its family (a histogram's _bucket, _sum and _count)."""
    suffixes = {"histogram": ("_bucket", "_sum", "_count"), "summary": ("", "_sum", "_count")}
    return {name + s: name for name, kind in families.items()
            for s in suffixes.get(kind, ("",))}


def _dashboard() -> dict:
    return json.loads(DASHBOARD.read_text())


def _targets(dashboard: dict) -> list[tuple[dict, dict]]:
    return [(p, t) for p in dashboard["panels"] for t in p.get("targets", [])]


def test_dashboard_is_grafana_json_on_the_prometheus_input():
    d = _dashboard()
    assert d["schemaVersion"] >= 36 and d["title"] and d["uid"]
    assert [i["name"] for i in d["__inputs"]] == ["DS_PROMETHEUS"]
    assert d["__inputs"][0]["pluginId"] == "prometheus"
    ids = [p["id"] for p in d["panels"]]
    assert len(ids) == len(set(ids))
    graphs = [p for p in d["panels"] if p["type"] != "row"]
    assert len(graphs) >= 15
    for p in graphs:
        assert p["targets"] and p["datasource"]["uid"] == DS, p["title"]
        assert {"h", "w", "x", "y"} <= p["gridPos"].keys() and p["gridPos"]["x"] + \
            p["gridPos"]["w"] <= 24, p["title"]
        for t in p["targets"]:
            assert t["expr"] and t["refId"] and t["datasource"]["uid"] == DS, p["title"]
    variables = {v["name"]: v for v in d["templating"]["list"]}
    assert {"DS_PROMETHEUS", "cluster", "job", "task"} <= variables.keys()
    for name in ("cluster", "job", "task"):
        assert "tensorweave_task_info" in variables[name]["query"]["query"]


@pytest.mark.transports("tcp", why=PORT)
def test_every_metric_and_label_the_dashboard_reads_is_exported(exported):
    samples = _sample_names(exported)
    documented = _documented_labels()
    # The label source must itself be true: docs/metrics.md documents every family.
    assert documented.keys() == exported.keys()
    exprs = [(p["title"], t["expr"], t.get("legendFormat", "")) for p, t in
             _targets(_dashboard())]
    for v in _dashboard()["templating"]["list"]:
        if v["type"] == "query":
            m = re.fullmatch(r"label_values\((.*), *(\w+)\)", v["query"]["query"])
            assert m, v["query"]
            exprs.append((f"${v['name']}", m.group(1), "{{%s}}" % m.group(2)))
    seen = set()
    for title, expr, legend in exprs:
        metrics, labels, by = parse_promql(expr)
        assert metrics, (title, expr)
        unknown = metrics - samples.keys()
        assert not unknown, f"{title}: {sorted(unknown)} are not exported ({expr})"
        families = {samples[m] for m in metrics}
        seen |= families
        allowed = ADDED_LABELS | {"le"} | set().union(*(documented[f] for f in families))
        assert labels <= allowed, f"{title}: labels {sorted(labels - allowed)} ({expr})"
        legend_labels = set(re.findall(r"\{\{\s*(\w+)\s*\}\}", legend))
        if by and not title.startswith("$"):
            assert legend_labels <= by, f"{title}: legend {legend} outlives by ({expr})"
    # The list: steps, step time, peers, variables, queues, accumulators, the
    # barrier, sessions, connections and the process all have a panel.
    assert {"tensorweave_steps_total", "tensorweave_session_step_seconds",
            "tensorweave_peer_sent_bytes_total", "tensorweave_peer_received_bytes_total",
            "tensorweave_peer_rpc_seconds", "tensorweave_variable_updates_total",
            "tensorweave_variable_update_bytes_total", "tensorweave_queue_size",
            "tensorweave_accumulator_depth", "tensorweave_sync_barrier_wait_seconds",
            "tensorweave_sync_barrier_waiting_for", "tensorweave_open_sessions",
            "tensorweave_connections", "process_resident_memory_bytes",
            "process_cpu_seconds_total", "process_threads"} <= seen


@pytest.mark.parametrize("expr, metrics", [
    ('histogram_quantile(0.9, sum by (le) (rate(a_bucket[$__rate_interval])))', {"a_bucket"}),
    ("a_total / on (instance) group_left (task) b", {"a_total", "b"}),
    ('x{v="rate(y)"} > 1e3', {"x"}),
])
def test_the_promql_reader_finds_metric_names(expr, metrics):
    assert parse_promql(expr)[0] == metrics


def _kubernetes_yaml() -> list[dict]:
    """The YAML blocks of docs/kubernetes.md's "Prometheus and Grafana" section."""
    text = (REPO_ROOT / "docs" / "kubernetes.md").read_text()
    section = text.split("## Prometheus and Grafana", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```yaml\n(.*?)```", section, re.S)
    assert len(blocks) >= 2, "the scrape config and the PodMonitor"
    return [doc for block in blocks for doc in yaml.safe_load_all(block) if doc]


def test_documented_scrape_configs_read_what_the_manifest_writes():
    docs = _kubernetes_yaml()
    (scrape,) = [d for d in docs if "scrape_configs" in d]
    (job,) = scrape["scrape_configs"]
    assert job["authorization"]["credentials_file"] == f"{AUTH_MOUNT}/token"
    assert job["kubernetes_sd_configs"][0]["role"] == "pod"
    sources = {s for r in job["relabel_configs"] for s in r.get("source_labels", [])}
    (tfjob,) = build_manifests(ManifestOptions(1, 1, "img", ["python", "t.py"]))
    template = tfjob["spec"]["tfReplicaSpecs"]["PS"]["template"]
    for key in [*template["metadata"]["annotations"], "app.kubernetes.io/instance"]:
        kind = "annotation" if key.startswith("prometheus.io/") else "label"
        meta = "__meta_kubernetes_pod_" + kind + "_" + re.sub(r"[^\w]", "_", key)
        assert meta in sources, meta
    targets = {r.get("target_label") for r in job["relabel_configs"]}
    assert {"__address__", "__metrics_path__", "tensorweave_cluster"} <= targets
    (monitor,) = [d for d in docs if d.get("kind") == "PodMonitor"]
    (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
    assert endpoint["port"] == template["spec"]["containers"][0]["ports"][0]["name"]
    assert endpoint["path"] == "/metrics"
    assert endpoint["authorization"]["credentials"] == {"name": "tensorweave-auth",
                                                         "key": "token"}
    assert monitor["spec"]["selector"]["matchLabels"].items() <= \
        template["metadata"]["labels"].items()

