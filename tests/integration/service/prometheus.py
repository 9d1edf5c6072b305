#!/usr/bin/env python3
"""The metrics through a real Prometheus server (Debian's prometheus, started and stopped here,
on 127.0.0.1 only): it scrapes the daemon every second while nvme-emu-perf reads a namespace on a
delay bdev (5 ms: the device's time dominates what the client sees, so the two measurements can
be compared) for 20 s. Prometheus's HTTP API then gives, over a 10 s window inside the run,
sum(rate(nvme_emu_io_commands_total)) and histogram_quantile(0.5 and 0.99) of
nvme_emu_io_latency_seconds (16 buckets per octave, as nvme-emu-perf keeps them), which must agree
with what nvme-emu-perf reports (IOPS, p50, p90, mean) within 10%, and p99 between the delay and
the client's p99 (the client's tail also holds its own wake-ups). Daemon and client run at
a real-time priority, so that time spent waiting for a CPU on a loaded machine (which only the
client would see) stays out of the comparison. The same run checks every query of
the Grafana dashboard (docs/grafana) against the server: each is valid PromQL, and the I/O panels
have data.

Usage: prometheus.py [BUILD_DIR]. Ends with "N passed, N failed" (0 passed, 0 failed when
Prometheus is not installed: make deps installs it)."""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "lib"))
import svctest as t  # noqa: E402

top, bindir, d = t.tree(sys.argv)
c = t.Checks()
NQN = "nqn.2026-11.io.nvme-emu:prom"
DELAY_US = 5000
RUN_S = 20
procs = []
# The daemon and the client run at a real-time priority (SCHED_FIFO 1, when allowed): on a
# loaded 2-core machine the time either waits for a CPU would otherwise sit in the client's
# latencies and not in the device's (the daemon's doorbell notice, the client's wake-up). Both
# sleep most of the time here (5 ms per I/O), so nothing else is starved.
RT = ("chrt", "-f", "1") if shutil.which("chrt") and subprocess.run(
    ["chrt", "-f", "1", "true"], capture_output=True).returncode == 0 else ()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def api(base, path, **params):
    url = base + path + ("?" + urllib.parse.urlencode(params) if params else "")
    try:
        with urllib.request.urlopen(url, timeout=20) as r:
            return json.load(r)
    except Exception as e:  # an HTTP error carries Prometheus's JSON error too
        body = getattr(e, "read", lambda: b"")()
        try:
            return json.loads(body)
        except ValueError:
            return {"status": "error", "error": str(e)}


def scalar(base, query, at):
    r = api(base, "/api/v1/query", query=query, time="%.3f" % at)
    if r.get("status") != "success" or not r["data"]["result"]:
        return None
    return float(r["data"]["result"][0]["value"][1])


def near(a, b, tol=0.10):
    return a is not None and b and abs(a - b) <= tol * b


if not shutil.which("prometheus"):
    print("skipped: prometheus not found (Debian package prometheus; make deps installs it)")
    print("0 passed, 0 failed")
    sys.exit(0)
try:
    rsock, fsock = os.path.join(d, "r.sock"), os.path.join(d, "f.sock")
    cfg = {"subsystems": [
        {"subsystem": "bdev", "config": [
            {"method": "bdev_null_create",
             "params": {"name": "Null0", "num_blocks": 262144, "block_size": 512}},
            {"method": "bdev_delay_create",
             "params": {"name": "Delay0", "base_bdev_name": "Null0",
                        "avg_read_latency": DELAY_US, "p99_read_latency": DELAY_US,
                        "avg_write_latency": DELAY_US, "p99_write_latency": DELAY_US}}]},
        {"subsystem": "nvmf", "config": [
            {"method": "nvmf_create_transport", "params": {"trtype": "PCIE_EMU"}},
            {"method": "nvmf_create_subsystem", "params": {"nqn": NQN}},
            {"method": "nvmf_subsystem_add_ns",
             "params": {"nqn": NQN, "namespace": {"bdev_name": "Delay0"}}},
            {"method": "nvmf_subsystem_add_listener",
             "params": {"nqn": NQN, "listen_address": {"trtype": "PCIE_EMU", "traddr": fsock}}}]},
        {"subsystem": "service", "config": [
            {"method": "nvmf_emu_metrics_start",
             "params": {"listen_address": "127.0.0.1:0", "buckets_per_octave": 16}}]}]}
    with open(os.path.join(d, "cfg.json"), "w") as f:
        json.dump(cfg, f)
    dm = t.Daemon(os.path.join(bindir, "nvme-emu"), ["-r", rsock, "-c", os.path.join(d, "cfg.json")],
                  os.path.join(d, "daemon.log"), prefix=RT)
    procs.append(dm.proc)
    maddr = dm.metrics_address()
    c.check("the daemon serves its metrics from its configuration", maddr and
            t.wait_for(lambda: os.path.exists(fsock)), dm.text()[-300:])
    pport = free_port()
    with open(os.path.join(d, "prometheus.yml"), "w") as f:
        f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                "scrape_configs:\n  - job_name: nvme-emu\n    static_configs:\n"
                "      - targets: ['%s']\n" % maddr)
    plog = open(os.path.join(d, "prometheus.log"), "w")
    prom = subprocess.Popen(["prometheus", "--config.file=" + os.path.join(d, "prometheus.yml"),
                             "--storage.tsdb.path=" + os.path.join(d, "tsdb"),
                             "--web.listen-address=127.0.0.1:%d" % pport,
                             "--storage.tsdb.retention.time=1h"],
                            stdout=plog, stderr=plog, cwd=d)
    procs.append(prom)
    base = "http://127.0.0.1:%d" % pport
    up = t.wait_for(lambda: scalar(base, 'up{job="nvme-emu"}', time.time()) == 1.0, 60, 0.5)
    c.check("Prometheus (started here) scrapes the daemon: up == 1", up,
            open(plog.name).read()[-500:])

    t_start = time.time()
    # Interrupts: a polling client would spin on a core the poll group needs.
    r = t.perf(bindir, fsock, "-w", "randread", "-q", "16", "-I", "-t", str(RUN_S), prefix=RT)
    t_end = time.time()
    time.sleep(3)  # the last scrapes
    at = t_start + 15  # the window [5 s, 15 s] of the run
    sel = 'job="nvme-emu",subsystem="%s",nsid="1",opclass="read"' % NQN
    iops = scalar(base, 'sum(rate(nvme_emu_io_commands_total{%s}[10s]))' % sel, at)
    q = {}
    for name, qq in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99)):
        q[name] = scalar(base, 'histogram_quantile(%s, sum by (le) (rate('
                         'nvme_emu_io_latency_seconds_bucket{%s}[10s])))' % (qq, sel), at)
    mean = scalar(base, 'sum(rate(nvme_emu_io_latency_seconds_sum{%s}[10s])) / '
                  'sum(rate(nvme_emu_io_latency_seconds_count{%s}[10s]))' % (sel, sel), at)
    ok = r is not None and r["errors"] == 0
    print("# nvme-emu-perf: %s IOPS, p50 %s us, p90 %s us, p99 %s us, mean %s us" %
          (r and r["iops"], r and r["lat_us"]["p50"], r and r["lat_us"]["p90"],
           r and r["lat_us"]["p99"], r and r["lat_us"]["mean"]))
    print("# Prometheus:    %.0f IOPS, p50 %.1f us, p90 %.1f us, p99 %.1f us, mean %.1f us" %
          tuple((v or 0) * k for v, k in ((iops, 1), (q["p50"], 1e6), (q["p90"], 1e6),
                                          (q["p99"], 1e6), (mean, 1e6))))
    c.check("IOPS: Prometheus's rate over 10 s of the run within 10% of nvme-emu-perf's",
            ok and near(iops, r["iops"]), (iops, r and r["iops"]))
    c.check("p50 latency: histogram_quantile within 10% of nvme-emu-perf's",
            ok and q["p50"] and near(q["p50"] * 1e6, r["lat_us"]["p50"]),
            (q["p50"], r and r["lat_us"]["p50"]))
    c.check("p90 latency: histogram_quantile within 10% of nvme-emu-perf's",
            ok and q["p90"] and near(q["p90"] * 1e6, r["lat_us"]["p90"]),
            (q["p90"], r and r["lat_us"]["p90"]))
    # The tail is where a loaded machine shows: the client's p99 also holds its own wake-ups
    # (seen 6.0 ms against the device's 5.24 ms with two builds beside the test), which the
    # device never sees. So the device's p99 is bounded, not matched: at least the bdev's delay
    # (less a bucket's interpolation), at most the client's p99 (plus a bucket).
    c.check("p99 latency: histogram_quantile between the bdev's delay and nvme-emu-perf's p99",
            ok and q["p99"] and DELAY_US * 0.9 <= q["p99"] * 1e6 <= r["lat_us"]["p99"] * 1.1,
            (q["p99"], r and r["lat_us"]["p99"]))
    c.check("mean latency (_sum / _count) within 10% of nvme-emu-perf's",
            ok and mean and near(mean * 1e6, r["lat_us"]["mean"]), (mean, r and r["lat_us"]["mean"]))

    # The dashboard's queries, as Grafana would send them, against the same data.
    with open(os.path.join(top, "docs", "grafana", "nvme-emu-dashboard.json")) as f:
        dash = json.load(f)
    exprs = [(p["title"], tg["expr"]) for p in dash["panels"] for tg in p.get("targets", [])]
    bad, empty = [], []
    for title, expr in exprs:
        e = re.sub(r'\$(instance|subsystem|nsid)\b', '.*', expr).replace("$__rate_interval", "10s")
        res = api(base, "/api/v1/query", query=e, time="%.3f" % at)
        if res.get("status") != "success":
            bad.append("%s: %s" % (title, res.get("error")))
        elif title.startswith(("IOPS", "Throughput", "Latency quantiles", "Mean latency",
                               "Busy", "Asleep", "Backend operations")) and \
                not res["data"]["result"]:
            empty.append(title)
    c.check("every query of the Grafana dashboard (%d) is valid PromQL" % len(exprs),
            exprs and not bad, bad[:3])
    c.check("the dashboard's I/O, latency, thread and backend panels show data", not empty, empty)
    for var in dash["templating"]["list"]:
        if var["type"] != "query":
            continue
        m = re.match(r'label_values\((.*), (\w+)\)$', var["query"]["query"])
        sel_ = re.sub(r'\$(instance|subsystem|nsid)\b', '.*', m.group(1)) if m else ""
        res = api(base, "/api/v1/label/%s/values" % (m.group(2) if m else "x"),
                  **{"match[]": sel_}) if m else {}
        c.check("dashboard variable $%s has values" % var["name"],
                res.get("status") == "success" and res["data"], res)
    c.check("SIGTERM: the daemon stops cleanly", dm.stop() == 0)
finally:
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    shutil.rmtree(d, ignore_errors=True)
c.finish()
