#!/usr/bin/env python3
"""make bench, part "spdk": nvme-emu next to SPDK's own vfio-user NVMe target, each driven by
both native clients, in one run on one machine.

Servers (both on CPU 1, one running at a time: the other is stopped with SIGSTOP, so SPDK's
polling reactor takes nothing from nvme-emu's turn): nvme-emu in its default configuration (SPDK's host shares
hugetlbfs files, taken like memfds) and SPDK's nvmf_tgt (-m 0x2: its
reactor on CPU 1) with the VFIOUSER transport, each with two namespaces of 1 GiB in 512-byte
blocks: a null bdev (nsid 1) and a RAM (malloc) bdev (nsid 2), which moves the data on both. Clients (on CPU 0): nvme-emu-perf and SPDK's spdk_nvme_perf (-g: one fd per memory
segment list, which vfio-user needs). Points: 4 KiB random reads at QD 1, 32 and 128 and 128 KiB
writes at QD 8 on one queue of the null namespace, 4 KiB random reads at QD 32 and 128 KiB writes
at QD 8 on the malloc one, written whole first; each server's idle CPU with no client. Each point
BENCH_RUNS times; the servers take turns point by point (which goes first alternates), so a slow
phase of a shared machine, which lasts minutes, falls on both alike; medians with min-max. The server's CPU time comes from /proc/PID/stat around
each client run.

SPDK is not packaged by Debian and nothing of it is in this repository: SPDK_DIR names an SPDK
build of your own (configure --with-vfio-user; build/bin/nvmf_tgt and spdk_nvme_perf,
scripts/rpc.py). 2 MiB hugepages: at least 1024 free, or root (then they are reserved for the run
and given back).
Writes BENCH_DIR/raw/spdk.jsonl (one object per client run) and BENCH_DIR/raw/spdk.md (its report
section). Environment: SPDK_DIR, BENCH_DIR (build/bench), BENCH_RUNS (3), BENCH_SPDK_TIME (2 s a
point), BENCH_QUICK=1 (one run of 1 s, two points). Ends with "N passed, N failed".
"""
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.join(TOP, "build", "bin")
SERVER_CPU, CLIENT_CPU = 1, 0
NULL_BLOCKS, NULL_BS = 2097152, 512  # 1 GiB of 512-byte blocks, both servers
SPDK_NQN = "nqn.2019-07.io.spdk:cnode0"
HUGEPAGES = 1024

passed = failed = 0


def ok(name):
    global passed
    passed += 1
    print("ok - " + name, flush=True)


def bad(name):
    global failed
    failed += 1
    print("not ok - " + name, flush=True)


def cpu_ticks(pid):
    """utime + stime of pid, in seconds."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def meminfo(key):
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def wait_for(path, secs):
    end = time.time() + secs
    while time.time() < end:
        if os.path.exists(path):
            return True
        time.sleep(0.05)
    return False


class Server:
    """One server process on SERVER_CPU; .sock is its vfio-user socket, .trid SPDK's name."""

    def __init__(self, name, work, spdk):
        self.name, self.work, self.spdk = name, work, spdk
        self.dir = os.path.join(work, name)
        self.sock = os.path.join(self.dir, "cntrl")
        self.proc = None
        self.log = os.path.join(work, name + ".log")

    def start(self):
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)
        log = open(self.log, "w")
        if self.name == "nvme-emu":
            self.nqn = "nqn.2026-11.io.nvme-emu:NVMEEMU0001"
            cmd = ["taskset", "-c", str(SERVER_CPU), os.path.join(BIN, "nvme-emu"), "--socket",
                   self.sock, "-r", os.path.join(self.work, "emu.rpc"), "--null",
                   "%dM" % (NULL_BLOCKS * NULL_BS // 1048576), "--malloc",
                   "%dM" % (NULL_BLOCKS * NULL_BS // 1048576)]
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
            if not wait_for(self.sock, 10):
                raise RuntimeError("nvme-emu did not start: " + open(self.log).read()[-500:])
        else:
            self.nqn = SPDK_NQN
            rpc_sock = os.path.join(self.work, "spdk.rpc")
            cmd = [os.path.join(self.spdk, "build", "bin", "nvmf_tgt"), "-m",
                   hex(1 << SERVER_CPU), "-s", "512", "-r", rpc_sock]
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                         env=spdk_env(self.spdk))
            if not wait_for(rpc_sock, 60):
                raise RuntimeError("nvmf_tgt did not start: " + open(self.log).read()[-500:])
            rpc = ["/usr/bin/python3", os.path.join(self.spdk, "scripts", "rpc.py"), "-s",
                   rpc_sock]
            for args in (["framework_wait_init"], ["nvmf_create_transport", "-t", "VFIOUSER"],
                         ["bdev_null_create", "Null0", str(NULL_BLOCKS * NULL_BS // 1048576),
                          str(NULL_BS)],
                         ["bdev_malloc_create", "-b", "Malloc0",
                          str(NULL_BLOCKS * NULL_BS // 1048576), str(NULL_BS)],
                         ["nvmf_create_subsystem", SPDK_NQN, "-a", "-s", "SPDK0"],
                         ["nvmf_subsystem_add_ns", SPDK_NQN, "Null0"],
                         ["nvmf_subsystem_add_ns", SPDK_NQN, "Malloc0"],
                         ["nvmf_subsystem_add_listener", SPDK_NQN, "-t", "VFIOUSER", "-a",
                          self.dir, "-s", "0"]):
                r = subprocess.run(rpc + args, capture_output=True, text=True, timeout=60,
                                   env=spdk_env(self.spdk))
                if r.returncode:
                    raise RuntimeError("nvmf_tgt rpc %s: %s" % (args[0], r.stderr.strip()))
            if not wait_for(self.sock, 10):
                raise RuntimeError("nvmf_tgt made no socket " + self.sock)

    def pause(self):
        """SIGSTOP: a stopped server takes no CPU (SPDK's reactor polls all the time)."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGSTOP)

    def resume(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.send_signal(signal.SIGINT if self.name == "spdk" else signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


def spdk_env(spdk):
    env = dict(os.environ)
    libs = [os.path.join(spdk, "build", "lib"),
            os.path.join(spdk, "build", "libvfio-user", "build-release", "lib")]
    env["LD_LIBRARY_PATH"] = ":".join(libs + [env.get("LD_LIBRARY_PATH", "")])
    return env


def run_client(client, server, spdk, wl, size, depth, nsid, secs):
    """One client run; returns {iops, mib_s, lat_mean_us, lat_p50_us (nvme-emu-perf only)}."""
    if client == "nvme-emu-perf":
        cmd = ["taskset", "-c", str(CLIENT_CPU), os.path.join(BIN, "nvme-emu-perf"), "-s",
               server.sock, "-w", wl, "-o", str(size), "-q", str(depth), "-N", str(nsid), "-t",
               str(secs), "-j"]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=secs + 60)
        if r.returncode:
            raise RuntimeError("nvme-emu-perf: " + (r.stderr or r.stdout).strip()[-300:])
        j = json.loads(r.stdout)
        if j.get("errors"):
            raise RuntimeError("nvme-emu-perf: %d I/O errors" % j["errors"])
        return {"iops": j["iops"], "mib_s": j["mib_s"], "lat_mean_us": j["lat_us"]["mean"],
                "lat_p50_us": j["lat_us"]["p50"]}
    trid = "trtype:VFIOUSER traddr:%s subnqn:%s ns:%d" % (server.dir, server.nqn, nsid)
    cmd = [os.path.join(spdk, "build", "bin", "spdk_nvme_perf"), "-r", trid, "-g", "-q",
           str(depth), "-o", str(size), "-w", wl, "-t", str(secs), "-c", hex(1 << CLIENT_CPU)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=secs + 60,
                       env=spdk_env(spdk))
    m = re.search(r"^Total\s*:\s*([\d.]+)\s+([\d.]+)\s+([\d.]+)", r.stdout, re.M)
    if r.returncode or not m or "errors occurred" in r.stdout + r.stderr:
        raise RuntimeError("spdk_nvme_perf: " + (r.stdout + r.stderr).strip()[-300:])
    return {"iops": float(m.group(1)), "mib_s": float(m.group(2)),
            "lat_mean_us": float(m.group(3)), "lat_p50_us": None}


def med(vals):
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def span(vals, fmt):
    vals = [v for v in vals if v is not None]
    if not vals:
        return "-"
    if len(vals) == 1:
        return fmt(vals[0])
    return "%s (%s-%s)" % (fmt(statistics.median(vals)), fmt(min(vals)), fmt(max(vals)))


def si(v):
    return "%.2fM" % (v / 1e6) if v >= 1e6 else "%.0fk" % (v / 1e3)


def report(rows, idle, points, runs, secs):
    out = ["# Peer: SPDK's vfio-user target, same machine, same run\n"]
    out.append("nvme-emu (default configuration) and SPDK's `nvmf_tgt` (VFIOUSER transport), each "
               "with a null and a RAM (malloc) bdev of 1 GiB in 512-byte blocks, both on CPU %d, "
               "taking turns point by point (the other stopped with SIGSTOP, so a slow phase "
               "of the machine falls on both); the clients "
               "`nvme-emu-perf` and SPDK's `spdk_nvme_perf -g` on CPU %d, one queue pair, polled. "
               "Medians of %d runs of %d s (min-max), in IOPS. Server CPU is the server "
               "process's CPU time per second of the run. Both null bdevs leave a read's "
               "buffer as it was (nvme-emu's zeroes it only when created with read_zeroes) "
               "and touch no written data.\n" % (SERVER_CPU, CLIENT_CPU, runs, secs))
    head = "| server | client | " + " | ".join(p[0] for p in points) + \
        " | server CPU at %s |" % points[min(1, len(points) - 1)][0]
    out.append(head)
    out.append("|" + " --- |" * (head.count("|") - 1))
    for srv in ("nvme-emu", "spdk"):
        for cl in ("nvme-emu-perf", "spdk_nvme_perf"):
            cells = []
            for label, wl, size, depth, nsid in points:
                rs = [r for r in rows if r["server"] == srv and r["client"] == cl and
                      r["point"] == label]
                c = span([r["iops"] for r in rs], si)
                lat = med([r["lat_mean_us"] for r in rs])
                cells.append(c + (" (mean %.2f us)" % lat if lat is not None and depth == 1
                                  else ""))
            rs = [r for r in rows if r["server"] == srv and r["client"] == cl and
                  r["point"] == points[min(1, len(points) - 1)][0]]
            cpu = med([r["server_cpu_per_s"] for r in rs])
            cells.append("-" if cpu is None else "%.0f%%" % (100 * cpu))
            name = "nvme-emu" if srv == "nvme-emu" else "SPDK nvmf_tgt"
            out.append("| %s | %s | %s |" % (name, cl, " | ".join(cells)))
    out.append("")
    ratios = []
    for cl in ("nvme-emu-perf", "spdk_nvme_perf"):
        parts = []
        for label, wl, size, depth, nsid in points:
            a = med([r["iops"] for r in rows if r["server"] == "nvme-emu" and
                     r["client"] == cl and r["point"] == label])
            b = med([r["iops"] for r in rows if r["server"] == "spdk" and
                     r["client"] == cl and r["point"] == label])
            if a and b:
                parts.append("%s %.2fx" % (label, a / b))
        if parts:
            ratios.append("with %s: %s" % (cl, ", ".join(parts)))
    if ratios:
        out.append("nvme-emu / SPDK's target: " + "; ".join(ratios) + ".\n")
    out.append("Idle server CPU (no client attached, %d s): nvme-emu %s, SPDK's nvmf_tgt %s (its "
               "reactor polls all the time).\n" % (
                   secs, span(idle.get("nvme-emu", []), lambda v: "%.1f%%" % (100 * v)),
                   span(idle.get("spdk", []), lambda v: "%.0f%%" % (100 * v))))
    return "\n".join(out)


def main():
    spdk = os.environ.get("SPDK_DIR", "")
    bench_dir = os.environ.get("BENCH_DIR", os.path.join(TOP, "build", "bench"))
    quick = os.environ.get("BENCH_QUICK", "0") == "1"
    runs = int(os.environ.get("BENCH_RUNS", "1" if quick else "3"))
    secs = int(os.environ.get("BENCH_SPDK_TIME", "1" if quick else "2"))
    raw = os.path.join(bench_dir, "raw")
    os.makedirs(raw, exist_ok=True)
    need = [os.path.join(spdk, "build", "bin", b) for b in ("nvmf_tgt", "spdk_nvme_perf")] + \
        [os.path.join(spdk, "scripts", "rpc.py")]
    missing = [p for p in need if not os.path.exists(p)] if spdk else ["SPDK_DIR"]
    if missing:
        bad("SPDK build found (SPDK_DIR=%s; missing %s)" % (spdk or "unset", ", ".join(missing)))
        return
    if (os.cpu_count() or 1) < 2:
        bad("two CPUs, one for the server and one for the client")
        return
    points = [("4 KiB QD1", "randread", 4096, 1, 1), ("4 KiB QD32", "randread", 4096, 32, 1),
              ("4 KiB QD128", "randread", 4096, 128, 1),
              ("128 KiB writes QD8", "write", 131072, 8, 1),
              ("malloc 4 KiB QD32", "randread", 4096, 32, 2),
              ("malloc 128 KiB writes QD8", "write", 131072, 8, 2)]
    if quick:
        points = points[:2]
    saved_pages = None
    if meminfo("HugePages_Free") < HUGEPAGES:
        try:
            with open("/proc/sys/vm/nr_hugepages") as f:
                saved_pages = f.read().strip()
            with open("/proc/sys/vm/nr_hugepages", "w") as f:
                f.write(str(int(saved_pages) + HUGEPAGES - meminfo("HugePages_Free")))
        except OSError as e:
            bad("%d free 2 MiB hugepages (%s)" % (HUGEPAGES, e))
            return
        if meminfo("HugePages_Free") < HUGEPAGES:
            bad("%d free 2 MiB hugepages (got %d)" % (HUGEPAGES, meminfo("HugePages_Free")))
            return
    work = tempfile.mkdtemp(prefix="nvme-emu-spdk-bench.")
    # DPDK finds its hugepages through a hugetlbfs mount: one is made for the run when none exists.
    mounted = None
    if " hugetlbfs " not in open("/proc/mounts").read():
        huge = os.path.join(work, "huge")
        os.mkdir(huge)
        if subprocess.run(["mount", "-t", "hugetlbfs", "nodev", huge]).returncode == 0:
            mounted = huge
        else:
            bad("a hugetlbfs mount for DPDK (mount -t hugetlbfs failed)")
            shutil.rmtree(work, ignore_errors=True)
            return
    rows, idle = [], {}
    total = runs * 2 * len(points) * 2
    done = 0
    t0 = time.time()
    jsonl = open(os.path.join(raw, "spdk.jsonl"), "w")
    try:
        for run in range(1, runs + 1):
            names = ("nvme-emu", "spdk") if run % 2 else ("spdk", "nvme-emu")
            srvs = {n: Server(n, work, spdk) for n in names}
            try:
                for n in names:
                    srv = srvs[n]
                    srv.start()
                    time.sleep(0.5)
                    a = cpu_ticks(srv.proc.pid)
                    time.sleep(secs)
                    idle.setdefault(n, []).append((cpu_ticks(srv.proc.pid) - a) / secs)
                    # Every block of the RAM namespace written once: reads of pages never
                    # written would copy the kernel's shared zero page (nvme-emu's malloc memory
                    # is mapped on demand), out of cache, where SPDK's is real memory.
                    fill = subprocess.run(
                        [os.path.join(BIN, "nvme-emu-perf"), "-s", srv.sock, "-N", "2", "-w",
                         "write", "-o", "131072", "-q", "16", "-V", "-j"],
                        capture_output=True, text=True, timeout=120)
                    if fill.returncode:
                        raise RuntimeError("%s: filling the RAM namespace: %s" % (
                            n, (fill.stderr or fill.stdout).strip()[-300:]))
                    srv.pause()
                for i, (label, wl, size, depth, nsid) in enumerate(points):
                    for n in names if i % 2 == 0 else names[::-1]:
                        srv = srvs[n]
                        srv.resume()
                        time.sleep(0.2)
                        for cl in ("nvme-emu-perf", "spdk_nvme_perf"):
                            done += 1
                            print("bench: [spdk %d/%d, %ds] %s <- %s, %s, run %d/%d" % (
                                done, total, time.time() - t0, n, cl, label, run, runs),
                                file=sys.stderr, flush=True)
                            name = "%s <- %s, %s, run %d" % (n, cl, label, run)
                            try:
                                a = cpu_ticks(srv.proc.pid)
                                t = time.time()
                                r = run_client(cl, srv, spdk, wl, size, depth, nsid, secs)
                                r["server_cpu_per_s"] = (cpu_ticks(srv.proc.pid) - a) / \
                                    (time.time() - t)
                            except (RuntimeError, subprocess.TimeoutExpired, ValueError,
                                    OSError) as e:
                                bad("%s: %s" % (name, e))
                                continue
                            r.update(server=n, client=cl, point=label, run=run)
                            rows.append(r)
                            jsonl.write(json.dumps(r) + "\n")
                            ok(name)
                        srv.pause()
            except (RuntimeError, OSError, subprocess.SubprocessError) as e:
                bad("servers, run %d: %s" % (run, e))
            finally:
                for srv in srvs.values():
                    srv.stop()
    finally:
        jsonl.close()
        if mounted:
            subprocess.run(["umount", mounted])
        shutil.rmtree(work, ignore_errors=True)
        if saved_pages is not None:
            with open("/proc/sys/vm/nr_hugepages", "w") as f:
                f.write(saved_pages)
    with open(os.path.join(raw, "spdk.md"), "w") as f:
        f.write(report(rows, idle, points, runs, secs))
    print(report(rows, idle, points, runs, secs).split("\n\n")[2])


if __name__ == "__main__":
    try:
        main()
    finally:
        print("%d passed, %d failed" % (passed, failed))
