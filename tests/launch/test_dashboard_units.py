"""The dashboard's parts without a cluster or a browser (issue 36): the text format it
reads, the numbers it derives (rates, links, ps hot spots, stragglers, sync waits), its
events, how it reads a ClusterSpec or TF_CONFIG, and what its HTTP side serves. The job
and the browser: tests/launch/test_dashboard.py."""
from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from importlib import resources

import pytest

from tensorweave.launch.dashboard import Collector, Dashboard
from tensorweave.launch.dashboard.collector import classify
from tensorweave.launch.dashboard.entry import cluster_addresses
from tensorweave.launch.dashboard.scrape import ScrapeError, parse_exposition
from tensorweave.launch.dashboard.view import Sample, cluster_view, task_name

PS = "/job:ps/replica:0/task:0"
W0, W1 = "/job:worker/replica:0/task:0", "/job:worker/replica:0/task:1"


def _ps(steps: int, incarnation: str = "1") -> str:
    return "\n".join([
        "# HELP tensorweave_variable_updates_total Updates.",
        "# TYPE tensorweave_variable_updates_total counter",
        f'tensorweave_task_info{{task="{PS}",job="ps",incarnation="{incarnation}"}} 1',
        f'tensorweave_variable_updates_total{{variable="global_step"}} {steps}',
        f'tensorweave_variable_updates_total{{variable="w"}} {steps}',
        f'tensorweave_variable_updates_total{{variable="b"}} {steps}',
        f'tensorweave_variable_update_bytes_total{{variable="global_step"}} {8 * steps}',
        f'tensorweave_variable_update_bytes_total{{variable="w"}} {4000 * steps}',
        f'tensorweave_variable_update_bytes_total{{variable="b"}} {40 * steps}',
        f'tensorweave_peer_sent_bytes_total{{peer="{W0}"}} {1000 * steps}',
        f"process_cpu_seconds_total {steps / 100}",
        'tensorweave_sync_barrier_waiting_seconds{accumulator="w/grad_accum"} 1.5',
        f'tensorweave_sync_barrier_waiting_for{{accumulator="w/grad_accum",replica="{W1}"}} 1',
        'tensorweave_accumulator_depth{accumulator="w/grad_accum"} 1', ""])


def _worker(steps: int, peer_bytes: int) -> str:
    return "\n".join([
        f"tensorweave_steps_total {steps}",
        f'tensorweave_peer_sent_bytes_total{{peer="{PS}"}} {peer_bytes}',
        f'tensorweave_peer_received_bytes_total{{peer="{PS}"}} {peer_bytes}',
        # sync training's local step lives on the worker: not a ps's load
        f'tensorweave_variable_update_bytes_total{{variable="local_step"}} {8 * steps}', ""])


def test_parse_exposition_reads_labels_escapes_and_special_values():
    m = parse_exposition('# TYPE x counter\nx{a="q\\"uote",b="back\\\\slash"} 3\n'
                         'h_bucket{le="+Inf"} 7\ny NaN\nz +Inf\nbroken line\n')
    assert m.value("x", a='q"uote', b="back\\slash") == 3.0
    assert m.by_label("h_bucket", "le") == {"+Inf": 7.0}
    assert m.value("z") == float("inf") and m.value("y") != m.value("y")  # NaN
    assert m.value("missing") is None and m.value("broken") is None


def test_task_names_follow_the_launcher():
    assert task_name(PS) == "ps 0" and task_name("/job:chief/replica:0/task:0") == "chief 0"
    assert task_name("elsewhere") == "elsewhere"


def test_view_rates_links_hot_variables_stragglers_and_sync_waits():
    def scrape(t: float, ps: int, w0: int, w1: int) -> dict[str, Sample]:
        return {"ps 0": Sample(t, parse_exposition(_ps(ps))),
                "worker 0": Sample(t, parse_exposition(_worker(w0, 500 * w0))),
                "worker 1": Sample(t, parse_exposition(_worker(w1, 500 * w1)))}
    before, now = scrape(10.0, 100, 50, 50), scrape(12.0, 300, 150, 70)
    samples = {n: (before[n], now[n]) for n in now}
    addresses = {"ps 0": "h:1", "worker 0": "h:2", "worker 1": "h:3"}
    view = cluster_view(addresses, samples, {"worker 1": "running"})
    rows = {r["name"]: r for r in view["tasks"]}
    assert rows["worker 0"]["step_rate"] == 50.0 and rows["worker 1"]["step_rate"] == 10.0
    assert rows["worker 1"]["straggler"] and not rows["worker 0"]["straggler"]  # 10 < 0.5 * 30
    assert rows["ps 0"]["cpu"] == pytest.approx(1.0) and rows["worker 1"]["state"] == "running"
    # worker 0 saw 2 x 500 x 100 bytes in 2 s; the ps' own count (1000 x 200 / 2) is less
    links = {(link["a"], link["b"]): link["bytes_per_s"] for link in view["links"]}
    assert links[("ps 0", "worker 0")] == 100_000.0 and links[("ps 0", "worker 1")] == 10_000.0
    (ps,) = view["ps"]  # the workers' local_step is theirs, not placement's
    assert [v["variable"] for v in ps["hottest"]] == ["w", "b", "global_step"]
    assert ps["hottest"][0]["bytes_per_s"] == 400_000.0 and ps["updates_per_s"] == 300.0
    assert view["global_step_updates_per_s"] == 100.0
    assert view["sync"] == [{"task": "ps 0", "accumulator": "w/grad_accum", "waiting_s": 1.5,
                             "depth": 1.0, "waiting_for": ["worker 1"]}]


def test_a_counter_that_went_down_counts_from_zero_and_a_down_task_has_no_numbers():
    samples = {"worker 0": (Sample(0.0, parse_exposition(_worker(900, 0))),
                            Sample(1.0, parse_exposition(_worker(30, 0)))),
               "ps 0": (None, Sample(1.0, error="h:1: Connection refused"))}
    view = cluster_view({"ps 0": "h:1", "worker 0": "h:2"}, samples)
    rows = {r["name"]: r for r in view["tasks"]}
    assert rows["worker 0"]["step_rate"] == 30.0
    assert rows["ps 0"] == {"name": "ps 0", "job": "ps", "index": 0, "address": "h:1",
                            "up": False, "state": None, "error": "h:1: Connection refused",
                            "straggler": False}


def test_launcher_messages_become_events_of_a_kind_and_a_task():
    assert classify("restarting ps 0 (killed by SIGKILL) in 1s, restart 1 of 3") == (
        "restart", "ps 0")
    assert classify("worker 1 failed (exit code 3); its last 2 output lines:\n  x") == (
        "fault", "worker 1")
    assert classify("worker 2 left the job (killed by SIGKILL)") == ("fault", "worker 2")
    assert classify("ps_standby 0 stopped once the ps tasks had ended") == ("info", "ps_standby 0")
    assert classify("dashboard at http://127.0.0.1:1/") == ("info", None)


class FakeCluster:
    """Answers scrapes from a script: address -> text, or an error."""

    def __init__(self) -> None:
        self.answers: dict[str, str | None] = {}

    def __call__(self, address: str, creds: object, timeout: float):
        text = self.answers.get(address)
        if text is None:
            raise ScrapeError(f"{address}: Connection refused")
        return parse_exposition(text)


def test_collector_events_series_and_the_launchers_progress():
    fake = FakeCluster()
    progress = [(None, None, None)]
    c = Collector({"ps 0": "h:1", "worker 0": "h:2"}, progress=lambda: progress[0],
                  scraper=fake)
    fake.answers = {"h:1": None, "h:2": None}
    c.tick()  # still starting: no event for a task that never answered
    fake.answers = {"h:1": _ps(10), "h:2": _worker(5, 0)}
    c.tick()
    progress[0] = (40, 12.5, 0.25)
    fake.answers = {"h:1": None, "h:2": _worker(9, 0)}
    c.tick()
    fake.answers["h:1"] = _ps(1, incarnation="2")
    c.tick()
    c.say("restarted ps 0 (pid 7; it had ended: killed by SIGKILL), restart 1 of 3")
    c.say("worker 1 failed (exit code 3); its last 2 output lines:\n    boom")
    events = [(e["kind"], e["task"], e["text"]) for e in c.events()]
    assert events == [
        ("fault", "ps 0", "ps 0 stopped answering scrapes (h:1: Connection refused)"),
        ("restart", "ps 0", "ps 0 restarted (new incarnation 2)"),
        ("restart", "ps 0", "restarted ps 0 (pid 7; it had ended: killed by SIGKILL), "
                            "restart 1 of 3"),
        ("fault", "worker 1", "worker 1 failed (exit code 3)")]
    assert [e["text"] for e in c.events(after=c.events()[-2]["id"])] == [
        "worker 1 failed (exit code 3)"]
    points = c.series()
    assert len(points) == 4 and points[-1]["step"] == 40 and points[-1]["loss"] == 0.25
    assert points[-1]["rate"] == 12.5 and set(points[-1]["workers"]) == {"worker 0"}
    assert c.series(since=points[-1]["t"]) == []
    assert c.cluster()["global"] == {"step": 40, "rate": 12.5, "loss": 0.25,
                                     "source": "launcher"}


def test_cluster_addresses_from_a_spec_a_tf_config_or_a_file(tmp_path):
    spec = {"worker": ["w0:2222", "w1:2222"], "ps": ["p0:2222"]}
    assert list(cluster_addresses(json.dumps(spec)).items()) == [
        ("ps 0", "p0:2222"), ("worker 0", "w0:2222"), ("worker 1", "w1:2222")]
    tf_config = {"cluster": {"chief": ["c:1"], "ps": ["p:1"]}, "task": {"type": "ps", "index": 0}}
    path = tmp_path / "tf_config.json"
    path.write_text(json.dumps(tf_config))
    for text in (json.dumps(tf_config), f"@{path}", str(path)):
        assert cluster_addresses(text) == {"ps 0": "p:1", "chief 0": "c:1"}
    with pytest.raises(ValueError, match=r"--cluster is not JSON .*'\{ps: 1\}'"):
        cluster_addresses("{ps: 1}")
    with pytest.raises(ValueError, match=r"must be a JSON object, got \[1\]"):
        cluster_addresses("[1]")


def _get(url: str) -> tuple[int, str, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.status, resp.headers["Content-Type"], resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers["Content-Type"], e.read().decode()


def test_server_serves_the_page_its_own_files_and_small_json():
    fake = FakeCluster()
    fake.answers = {"h:1": _ps(10)}
    collector = Collector({"ps 0": "h:1"}, scraper=fake, interval=0.05)
    dashboard = Dashboard(collector, port=0)
    dashboard.start()
    try:
        status, kind, page = _get(dashboard.url)
        assert status == 200 and kind.startswith("text/html")
        assert '<script src="/static/app.js">' in page
        assert _get(dashboard.url + "static/app.js")[1].startswith("text/javascript")
        assert _get(dashboard.url + "static/style.css")[0] == 200
        for bad in ("static/..%2Fserver.py", "static/server.py", "static/nope.js", "etc"):
            assert _get(dashboard.url + bad)[0] == 404, bad
        status, kind, body = _get(dashboard.url + "api/cluster")
        cluster = json.loads(body)
        assert kind == "application/json" and cluster["tasks"][0]["name"] == "ps 0"
        assert cluster["title"] == "tensorweave"
        assert "points" in json.loads(_get(dashboard.url + "api/series?since=0")[2])
        assert json.loads(_get(dashboard.url + "api/events?after=0")[2]) == {"events": []}
    finally:
        dashboard.close()


def test_the_page_loads_nothing_from_elsewhere():
    """Offline and through a port-forward: every script, style and image is ours."""
    static = resources.files("tensorweave.launch.dashboard").joinpath("static")
    names = sorted(p.name for p in static.iterdir())
    assert names == ["app.js", "index.html", "style.css"]
    for name in names:
        text = static.joinpath(name).read_text()
        urls = set(re.findall(r"(?:https?:)?//[\w.-]+\.\w+[^\s\"')]*", text))
        assert urls <= {"http://www.w3.org/2000/svg"}, (name, urls)  # SVG's namespace name
        assert "@import" not in text and "EventSource" not in text and "WebSocket" not in text
