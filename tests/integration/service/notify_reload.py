#!/usr/bin/env python3
"""Integration: the daemon under a service manager, played by this script: the sd_notify
datagrams on $NOTIFY_SOCKET (READY=1 only once the configuration is applied and its listener is
up, WATCHDOG=1 at half $WATCHDOG_USEC, RELOADING=1 / READY=1 around reloads, STOPPING=1 at
SIGTERM), syslog priorities on a stderr that is the "journal" ($JOURNAL_STREAM), reloads by
difference while nvme-emu-perf runs on the first namespace (a namespace and a host added, a delay
bdev's latency updated in place, a transport change refused changing nothing, a namespace removed
by SIGHUP; the controller never reset, the client never fails), and the test-only faults: refused
without NVME_EMU_TEST_FAULTS=1; with it, a hung poll group and a hung main loop each stop the
watchdog's notifications.

Usage: notify_reload.py BUILD_DIR. Ends with "N passed, N failed"."""

import copy
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "lib"))
import svctest as t  # noqa: E402

top, bindir, d = t.tree(sys.argv)
c = t.Checks()
emu = os.path.join(bindir, "nvme-emu")
NQN = "nqn.2026-11.io.nvme-emu:svc"
daemons = []


class Manager:
    """A notify socket and what arrived on it, with arrival times."""

    def __init__(self, path):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self.sock.settimeout(0.2)
        self.msgs = []
        self.lock = threading.Lock()
        self.running = True
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while self.running:
            try:
                data = self.sock.recv(4096)
            except socket.timeout:
                continue
            except OSError:
                return
            with self.lock:
                self.msgs.append((time.monotonic(), data.decode()))

    def find(self, key, since=0):
        with self.lock:
            return [(ts, m) for ts, m in self.msgs if ts >= since and
                    key in m.split("\n")]

    def close(self):
        self.running = False
        self.thread.join()
        self.sock.close()


def config(ns2=False, host=False, latency=100, poll_groups=1):
    bdevs = [{"method": "bdev_null_create",
              "params": {"name": "Null0", "num_blocks": 131072, "block_size": 512}},
             {"method": "bdev_delay_create",
              "params": {"name": "Delay0", "base_bdev_name": "Null0",
                         "avg_read_latency": latency, "p99_read_latency": latency,
                         "avg_write_latency": latency, "p99_write_latency": latency}}]
    nvmf = [{"method": "nvmf_create_transport",
             "params": {"trtype": "PCIE_EMU", "num_poll_groups": poll_groups}},
            {"method": "nvmf_create_subsystem", "params": {"nqn": NQN, "serial_number": "SVC1"}},
            {"method": "nvmf_subsystem_add_ns",
             "params": {"nqn": NQN, "namespace": {"bdev_name": "Delay0", "nsid": 1}}}]
    if ns2:
        bdevs.append({"method": "bdev_malloc_create",
                      "params": {"name": "M1", "num_blocks": 16384, "block_size": 512}})
        nvmf.append({"method": "nvmf_subsystem_add_ns",
                     "params": {"nqn": NQN, "namespace": {"bdev_name": "M1"}}})
    if host:
        nvmf.append({"method": "nvmf_subsystem_add_host",
                     "params": {"nqn": NQN, "host": "nqn.2026-11.io.nvme-emu:host-a"}})
    nvmf.append({"method": "nvmf_subsystem_add_listener",
                 "params": {"nqn": NQN, "listen_address": {"trtype": "PCIE_EMU",
                                                           "traddr": os.path.join(d, "f.sock")}}})
    return {"subsystems": [{"subsystem": "bdev", "config": bdevs},
                           {"subsystem": "nvmf", "config": nvmf}]}


def write_config(cfg):
    path = os.path.join(d, "cfg.json")
    with open(path + ".tmp", "w") as f:
        json.dump(cfg, f)
    os.replace(path + ".tmp", path)
    return path


def subsystem():
    ok, subs = t.rpc(bindir, rsock, "nvmf_get_subsystems")
    return next((s for s in subs if s["nqn"] == NQN), None) if ok else None


def ctrl_stats():
    ok, st = t.rpc(bindir, rsock, "nvmf_get_stats")
    return st["controllers"][0] if ok and st["controllers"] else None


try:
    mgr = Manager(os.path.join(d, "notify.sock"))
    rsock, fsock = os.path.join(d, "r.sock"), os.path.join(d, "f.sock")
    cfg = write_config(config())
    errlog = open(os.path.join(d, "daemon.log"), "w")
    st = os.fstat(errlog.fileno())
    started = time.monotonic()
    dm = t.Daemon(emu, ["-r", rsock, "-c", cfg], errlog.name, stderr=errlog,
                  env={"NOTIFY_SOCKET": mgr.path, "WATCHDOG_USEC": "400000",
                       "JOURNAL_STREAM": "%d:%d" % (st.st_dev, st.st_ino)})
    daemons.append(dm)
    ready = t.wait_for(lambda: mgr.find("READY=1"), 15)
    c.check("READY=1, once the configuration is applied and the listener is up (its socket "
            "exists when READY=1 arrives)", ready and os.path.exists(fsock) and
            any(m.startswith("READY=1\nSTATUS=serving: 1 subsystem(s), 1 controller(s)")
                for _, m in ready), mgr.msgs[:3])
    time.sleep(2.0)
    w = mgr.find("WATCHDOG=1", started)
    gaps = [b[0] - a[0] for a, b in zip(w, w[1:])]
    c.check("WATCHDOG=1 every 200 ms (WATCHDOG_USEC 400 ms)",
            len(w) >= 7 and max(gaps) < 0.35, (len(w), max(gaps) if gaps else None))
    text = dm.text()
    lines = [ln for ln in text.splitlines() if ln]
    c.check("stderr as the journal: every line carries its syslog priority (<6>app: ...)",
            lines and all(ln[0] == "<" and ln[2] == ">" for ln in lines) and
            any(ln.startswith("<6>app: ") for ln in lines), lines[:3])
    ok, err = t.rpc(bindir, rsock, "nvmf_emu_test_fault", {"fault": "hang_main_loop"})
    c.check("nvmf_emu_test_fault refused without NVME_EMU_TEST_FAULTS=1",
            not ok and "tests only" in err, err)

    # Reload while a client reads namespace 1 (delay 100 us): a namespace and a host come.
    client = subprocess.Popen([os.path.join(bindir, "nvme-emu-perf"), "-s", fsock, "-j", "-w",
                               "randread", "-q", "4", "-t", "20"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    before = ctrl_stats()
    t0 = time.monotonic()
    write_config(config(ns2=True, host=True))
    ok, res = t.rpc(bindir, rsock, "nvmf_emu_reload_config")
    s = subsystem()
    c.check("nvmf_emu_reload_config: namespace 2 and the host added",
            ok and s and [n["nsid"] for n in s["namespaces"]] == [1, 2] and
            [h["nqn"] for h in s["hosts"]] == ["nqn.2026-11.io.nvme-emu:host-a"], (res, s))
    c.check("RELOADING=1 (with MONOTONIC_USEC) then READY=1",
            any("MONOTONIC_USEC=" in m for _, m in mgr.find("RELOADING=1", t0)) and
            mgr.find("READY=1", t0))
    write_config(config(ns2=True, host=True, latency=150))
    ok, res = t.rpc(bindir, rsock, "nvmf_emu_reload_config")
    okb, bdevs = t.rpc(bindir, rsock, "bdev_get_bdevs", {"name": "Delay0"})
    lat = bdevs[0]["driver_specific"]["delay"] if okb and bdevs else {}
    c.check("a delay bdev's latency changed in place (its namespace stays)",
            ok and lat.get("avg_read_latency") == 150 and
            [n["nsid"] for n in subsystem()["namespaces"]] == [1, 2], (res, lat))
    write_config(config(ns2=True, host=True, latency=150, poll_groups=2))
    t0 = time.monotonic()
    ok, err = t.rpc(bindir, rsock, "nvmf_emu_reload_config")
    c.check("a transport change: refused (restart), nothing changed, READY=1 with the failure",
            not ok and "restart" in err and [n["nsid"] for n in subsystem()["namespaces"]] ==
            [1, 2] and any("last reload failed" in m for _, m in mgr.find("READY=1", t0)), err)
    write_config(config(host=True, latency=150))
    t0 = time.monotonic()
    os.kill(dm.proc.pid, signal.SIGHUP)
    done = t.wait_for(lambda: mgr.find("READY=1", t0), 15)
    okb, _ = t.rpc(bindir, rsock, "bdev_get_bdevs", {"name": "M1"})
    c.check("SIGHUP reloads the -c file: namespace 2 and its bdev removed (once the namespace "
            "released it)", done and [n["nsid"] for n in subsystem()["namespaces"]] == [1] and
            not okb and "last reload failed" not in done[-1][1], done)
    after = ctrl_stats()
    # The client's own detach at its end resets the controller: the reloads must all have come
    # while it ran (20 s; under ASan on a loaded machine they took over 3.5 s).
    running = client.poll() is None
    out, _ = client.communicate(timeout=60)
    r = json.loads(out) if client.returncode == 0 else None
    c.check("the client read on through four reloads: no error, the controller never reset",
            running and r and r["errors"] == 0 and r["ios"] > 1000 and before and after and
            after["resets"] == before["resets"] and after["shutdowns"] == before["shutdowns"] and
            after["enabled"], (running, r and r["errors"], before and before["resets"],
                               after and after["resets"]))
    okm, metrics = t.rpc(bindir, rsock, "nvmf_emu_get_metrics")
    p = t.parse_metrics(metrics if okm else "")
    c.check("the reloads counted by result (3 successes, 1 failure)",
            t.total(p, "nvme_emu_config_reloads_total", result="success") == 3 and
            t.total(p, "nvme_emu_config_reloads_total", result="failure") == 1)
    ok, err = t.rpc(bindir, rsock, "nvmf_emu_reload_config", {"file": "/nonexistent.json"})
    c.check("a file that cannot be read: refused", not ok and "nonexistent" in err, err)
    t0 = time.monotonic()
    rc = dm.stop()
    c.check("SIGTERM: STOPPING=1 and a clean exit", rc == 0 and mgr.find("STOPPING=1", t0), rc)

    # The test-only faults stop the watchdog.
    for fault, params in (("hang_poll_group", {"fault": "hang_poll_group", "poll_group": 0}),
                          ("hang_main_loop", {"fault": "hang_main_loop"})):
        write_config(config())
        started = time.monotonic()
        dm = t.Daemon(emu, ["-r", rsock, "-c", cfg], os.path.join(d, fault + ".log"),
                      env={"NOTIFY_SOCKET": mgr.path, "WATCHDOG_USEC": "400000",
                           "NVME_EMU_TEST_FAULTS": "1"})
        daemons.append(dm)
        t.wait_for(lambda: mgr.find("READY=1", started), 15)
        time.sleep(0.5)
        ok, _ = t.rpc(bindir, rsock, "nvmf_emu_test_fault", params)
        t_fault = time.monotonic()
        time.sleep(2.5)
        late = [ts for ts, _ in mgr.find("WATCHDOG=1", t_fault + 0.7)]
        before_fault = mgr.find("WATCHDOG=1", started)
        rpc_ok, _ = t.rpc(bindir, rsock, "spdk_get_version", timeout=2)
        if fault == "hang_poll_group":
            c.check("hang_poll_group: the watchdog is no longer fed, the main loop still answers "
                    "and says which poll group is late",
                    ok and before_fault and not late and rpc_ok and
                    "poll group 0 has not run its loop" in dm.text(), (ok, late, rpc_ok))
        else:
            c.check("hang_main_loop: the watchdog is no longer fed, RPC no longer answers",
                    ok and before_fault and not late and not rpc_ok, (ok, late, rpc_ok))
        dm.stop(signal.SIGKILL)
        for pth in (rsock, fsock):
            if os.path.exists(pth):
                os.unlink(pth)
    mgr.close()
finally:
    for dm in daemons:
        if dm.alive():
            dm.stop(signal.SIGKILL)
    if c.failed:
        print("# daemon log:\n" + open(os.path.join(d, "daemon.log"), errors="replace").read()[-3000:])
    shutil.rmtree(d, ignore_errors=True)
c.finish()
