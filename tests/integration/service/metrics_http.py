#!/usr/bin/env python3
"""Integration: the Prometheus endpoint of a real daemon. After nvme-emu-perf reads and writes,
the counters are the client's exactly (commands by class, bytes, the latency histogram's count,
cumulative buckets ending in +Inf), the text passes Prometheus's own linter (promtool check
metrics) and the format's rules; then hostile HTTP clients: unknown paths (404), other methods
(405 with Allow), garbage, a missing Host, HTTP/2 (505), a head past 8 KiB (431), a body (400),
NULs, pipelined and kept-alive requests, HTTP/1.0, HEAD, a client that never finishes its head
(408 from the loop's timer), more connections than allowed (closed at once); the daemon serves on.
Then the RPC methods: nvmf_emu_metrics_start/stop/get_metrics, per-queue labels, bad options.

Usage: metrics_http.py BUILD_DIR. Ends with "N passed, N failed"."""

import os
import shutil
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "lib"))
import svctest as t  # noqa: E402

top, bindir, d = t.tree(sys.argv)
c = t.Checks()
emu = os.path.join(bindir, "nvme-emu")
sock, rsock = os.path.join(d, "s"), os.path.join(d, "r.sock")
daemons = []


def start(args, log):
    dm = t.Daemon(emu, args, os.path.join(d, log))
    daemons.append(dm)
    return dm


try:
    dm = start(["--socket", sock, "--null", "64M", "-q", "2", "-r", rsock, "--metrics",
                "127.0.0.1:0"], "daemon.log")
    addr = dm.metrics_address()
    c.check("the daemon serves its metrics (--metrics 127.0.0.1:0, the port it got logged)",
            addr and t.wait_for(lambda: os.path.exists(sock)), dm.text()[-400:])
    # A client that starts a head and never ends it: the head timeout (10 s) must close it.
    host, port = addr.rsplit(":", 1)
    slow = socket.create_connection((host, int(port)))
    slow.sendall(b"GET /metrics HTTP/1.1\r\nHost:")
    slow_t0 = time.monotonic()

    r1 = t.perf(bindir, sock, "-w", "randread", "-q", "8", "-t", "1")
    r2 = t.perf(bindir, sock, "-w", "randwrite", "-q", "4", "-t", "1", "-o", "8192")
    st, head, body = t.get_metrics(addr)
    p = t.parse_metrics(body)
    c.check("GET /metrics: 200, text format 0.0.4",
            st == 200 and "Content-Type: text/plain; version=0.0.4; charset=utf-8" in head, head)
    c.check("the format's rules hold (HELP and TYPE once per family, its samples together)",
            not p["errors"], p["errors"][:5])
    lint = subprocess.run(["promtool", "check", "metrics"], input=body, capture_output=True,
                          text=True) if shutil.which("promtool") else None
    c.check("promtool check metrics finds nothing",
            lint is not None and lint.returncode == 0 and not lint.stdout.strip() and
            not lint.stderr.strip(), lint and (lint.stdout + lint.stderr)[:800])
    ok = r1 and r2 and r1["errors"] == 0 and r2["errors"] == 0
    reads = t.total(p, "nvme_emu_io_commands_total", nsid=1, opclass="read")
    writes = t.total(p, "nvme_emu_io_commands_total", nsid=1, opclass="write")
    c.check("commands by class: the client's reads and writes exactly",
            ok and reads == r1["ios"] and writes == r2["ios"],
            "%s/%s %s/%s" % (reads, r1 and r1["ios"], writes, r2 and r2["ios"]))
    c.check("bytes: 4 KiB per read, 8 KiB per write",
            ok and t.total(p, "nvme_emu_io_bytes_total", nsid=1, direction="read") == 4096 * reads
            and t.total(p, "nvme_emu_io_bytes_total", nsid=1, direction="write") == 8192 * writes)
    buckets = [(float(l["le"]), v) for l, v in
               t.select(p, "nvme_emu_io_latency_seconds_bucket", nsid=1, opclass="read")]
    count = t.total(p, "nvme_emu_io_latency_seconds_count", nsid=1, opclass="read")
    c.check("the read latency histogram: cumulative, ascending edges, +Inf last and equal to "
            "_count, _count the reads, 98 buckets (4 per octave from 1.024 us)",
            len(buckets) == 98 and buckets[-1][0] == float("inf") and buckets[-1][1] == count ==
            reads and all(a[0] < b[0] and a[1] <= b[1] for a, b in zip(buckets, buckets[1:])) and
            abs(buckets[0][0] - 1.024e-06) < 1e-12, buckets[:3])
    c.check("admin commands counted, the controller described (subsystem, cntlid, socket)",
            t.total(p, "nvme_emu_io_commands_total", opclass="admin") > 0 and
            t.select(p, "nvme_emu_controller_info", socket=sock, cntlid=1))
    c.check("threads: main and poll-group0 busy (CPU) and asleep time",
            t.total(p, "nvme_emu_thread_cpu_seconds_total", thread="poll-group0") > 0 and
            t.total(p, "nvme_emu_thread_sleep_seconds_total", thread="main") > 0)
    c.check("the transport's doorbell mode, the bdev's counters and ops in flight",
            t.select(p, "nvme_emu_transport_info", doorbells="mmap", dpa="fused") and
            t.total(p, "nvme_emu_bdev_ops_total", bdev="Null0", op="read") == reads and
            t.select(p, "nvme_emu_bdev_ops_in_flight", bdev="Null0"))
    c.check("interrupts coalesced and raised, resets by kind, DMA faults: present",
            t.select(p, "nvme_emu_interrupts_coalesced_total") and
            t.select(p, "nvme_emu_controller_resets_total", kind="flr") and
            t.select(p, "nvme_emu_dma_faults_total"))

    def req(raw, **kw):
        return t.http(addr, raw, **kw)

    refused = [
        ("an unknown path: 404", b"GET /nothing HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
         404),
        ("POST /metrics: 405 with Allow: GET, HEAD",
         b"POST /metrics HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
         405),
        ("garbage (a TLS hello): 400 and closed",
         b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03garbage\r\n\r\n", 400),
        ("HTTP/1.1 without Host: 400", b"GET /metrics HTTP/1.1\r\n\r\n", 400),
        ("HTTP/2.0: 505", b"GET /metrics HTTP/2.0\r\nHost: t\r\n\r\n", 505),
        ("a head past 8 KiB: 431",
         b"GET /metrics HTTP/1.1\r\nHost: t\r\nX-Big: " + b"a" * 9000 + b"\r\n\r\n", 431),
        ("a request with a body: 400",
         b"GET /metrics HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello", 400),
        ("a chunked body: 400",
         b"GET /metrics HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
        ("a NUL in the head: 400", b"GET /me\x00trics HTTP/1.1\r\nHost: t\r\n\r\n", 400),
        ("obsolete line folding: 400",
         b"GET /metrics HTTP/1.1\r\nHost: t\r\n folded: x\r\n\r\n", 400),
    ]
    for name, raw, code in refused:
        r = req(raw)
        c.check(name, t.status_of(r) == code and (code != 405 or b"Allow: GET, HEAD" in r),
                r[:120])
    r = req(b"GET /metrics HTTP/1.1\r\nHost: t\r\n\r\nGET / HTTP/1.1\r\nHost: t\r\n"
            b"Connection: close\r\n\r\n")
    c.check("two pipelined requests on one connection: two responses in order",
            r.count(b"HTTP/1.1 200 OK") == 2 and r.rfind(b"exporter") > r.find(b"nvme_emu_"),
            r[:100])
    r = req(b"GET /metrics HTTP/1.0\r\n\r\n")
    c.check("HTTP/1.0: served and closed", t.status_of(r) == 200 and b"Connection: close" in r)
    r = req(b"GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n", read_all=False)
    c.check("HTTP/1.1: kept alive", t.status_of(r) == 200 and b"Connection: keep-alive" in r)
    r = req(b"HEAD /metrics HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
    c.check("HEAD: the head only, with the body's length", t.status_of(r) == 200 and
            r.endswith(b"\r\n\r\n") and int(r.split(b"Content-Length: ")[1].split(b"\r")[0]) > 1000)
    r = req(b"GET http://t/metrics?x=1 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
    c.check("absolute-form target with a query: served", t.status_of(r) == 200)

    # More connections than the server takes: the surplus is closed at once.
    idle = [socket.create_connection((host, int(port))) for _ in range(15)]
    time.sleep(0.3)
    extra = socket.create_connection((host, int(port)), timeout=5)
    try:
        got = extra.recv(100)
    except (ConnectionResetError, socket.timeout):
        got = b""
    c.check("a 17th connection (16 open): closed at once", got == b"")
    for s in idle:
        s.close()
    extra.close()
    time.sleep(0.5)
    st, _, body2 = t.get_metrics(addr)
    p2 = t.parse_metrics(body2)
    c.check("served again once they closed; the rejected one counted",
            st == 200 and t.total(p2, "nvme_emu_metrics_http_rejected_connections_total") >= 1)

    left = 10.8 - (time.monotonic() - slow_t0)
    if left > 0:
        time.sleep(left)
    slow.settimeout(5)
    try:
        got = slow.recv(200)
        eof = slow.recv(10) == b""
    except (ConnectionResetError, socket.timeout):
        got, eof = b"", False
    c.check("a head unfinished for 10 s: 408 from the loop's timer, then closed",
            got.startswith(b"HTTP/1.1 408") and eof, got[:60])
    slow.close()
    st, _, body3 = t.get_metrics(addr)
    p3 = t.parse_metrics(body3)
    c.check("the daemon serves on; the timeout and the 4xx responses counted",
            dm.alive() and st == 200 and
            t.total(p3, "nvme_emu_metrics_http_timeouts_total") >= 1 and
            t.total(p3, "nvme_emu_metrics_http_responses_total", code="4xx") >= 9)
    ok, err = t.rpc(bindir, rsock, "nvmf_emu_metrics_stop")
    c.check("nvmf_emu_metrics_stop refuses to stop what --metrics started",
            not ok and "--metrics" in err, err)
    ok, text = t.rpc(bindir, rsock, "nvmf_emu_get_metrics")
    c.check("nvmf_emu_get_metrics: the same exposition without HTTP",
            ok and "nvme_emu_io_commands_total" in text and not t.parse_metrics(text)["errors"])
    c.check("SIGTERM: a clean stop", dm.stop() == 0)

    # Target mode: the exporter from RPC.
    rsock2 = os.path.join(d, "r2.sock")
    dm2 = start(["-r", rsock2], "daemon2.log")
    t.wait_for(lambda: os.path.exists(rsock2))
    ok, err = t.rpc(bindir, rsock2, "nvmf_emu_metrics_start", {"listen_address": "nowhere"})
    c.check("a bad address refused with the forms it takes", not ok and "IP:PORT" in err, err)
    ok, err = t.rpc(bindir, rsock2, "nvmf_emu_metrics_start",
                    {"listen_address": "127.0.0.1:0", "buckets_per_octave": 3})
    c.check("buckets_per_octave 3 refused", not ok and "1, 2, 4, 8 or 16" in err, err)
    ok, res = t.rpc(bindir, rsock2, "nvmf_emu_metrics_start",
                    {"listen_address": "127.0.0.1:0", "buckets_per_octave": 16, "per_queue": True})
    addr2 = res["listen_address"] if ok else None
    steps = [("bdev_malloc_create", {"name": "M0", "num_blocks": 8192, "block_size": 512}),
             ("nvmf_create_transport", {"trtype": "PCIE_EMU"}),
             ("nvmf_create_subsystem", {"nqn": "nqn.2026-11.io.nvme-emu:m"}),
             ("nvmf_subsystem_add_ns", {"nqn": "nqn.2026-11.io.nvme-emu:m",
                                        "namespace": {"bdev_name": "M0"}}),
             ("nvmf_subsystem_add_listener", {"nqn": "nqn.2026-11.io.nvme-emu:m",
                                              "listen_address": {"trtype": "PCIE_EMU",
                                                                 "traddr": os.path.join(d, "m.sock")}})]
    ok2 = all(t.rpc(bindir, rsock2, m, prm)[0] for m, prm in steps)
    r3 = t.perf(bindir, os.path.join(d, "m.sock"), "-w", "randread", "-t", "1", "-n", "2")
    st, _, body4 = t.get_metrics(addr2) if addr2 else (None, "", "")
    p4 = t.parse_metrics(body4)
    qids = {l.get("qid") for l, _ in t.select(p4, "nvme_emu_io_commands_total", opclass="read")}
    edges = t.select(p4, "nvme_emu_io_latency_seconds_bucket", opclass="read", qid=1)
    c.check("nvmf_emu_metrics_start per_queue, 16 buckets per octave: reads on queues 1 and 2, "
            "386 buckets",
            ok and ok2 and r3 and qids == {"1", "2"} and len(edges) == 386, (qids, len(edges)))
    ok, save = t.rpc(bindir, rsock2, "save_config")
    svc = [e for s in (save or {}).get("subsystems", []) if s["subsystem"] == "service"
           for e in s["config"]] if ok else []
    c.check("save_config keeps the exporter (method, address, options)",
            len(svc) == 1 and svc[0]["method"] == "nvmf_emu_metrics_start" and
            svc[0]["params"] == {"listen_address": "127.0.0.1:0", "buckets_per_octave": 16,
                                 "per_queue": True}, svc)
    ok, _ = t.rpc(bindir, rsock2, "nvmf_emu_metrics_stop")
    try:
        t.http(addr2, b"GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n", timeout=2)
        refused = False
    except OSError:
        refused = True
    c.check("nvmf_emu_metrics_stop: the port is closed", ok and refused)
    c.check("SIGTERM: a clean stop", dm2.stop() == 0)
finally:
    for dm in daemons:
        if dm.alive():
            dm.stop()
    shutil.rmtree(d, ignore_errors=True)
c.finish()
