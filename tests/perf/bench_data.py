"""The bench report's data: reads the raw results of tests/perf/bench.sh (BENCH_DIR/raw) and
reduces the runs of each measurement to a Stat (median, min, max, runs)."""
import glob
import json
import os
import re
import statistics

# The reference configurations: ratios are to these.
NATIVE_DEFAULT = "mmap-fused"
GUEST_DEFAULT = "emu-mmap-fused"
GUEST_PEERS = ("qemu-nvme", "virtio-blk")
GUEST_LABELS = {"qemu-nvme": "QEMU NVMe", "virtio-blk": "virtio-blk",
                "emu-trap-fused": "nvme-emu trap, DPA fused",
                "emu-trap-1hart": "nvme-emu trap, 1 DPA hart",
                "emu-mmap-fused": "nvme-emu mmap, DPA fused (default)",
                "emu-mmap-1hart": "nvme-emu mmap, 1 DPA hart"}
NATIVE_LABELS = {"trap-fused": "trap doorbells, DPA fused",
                 "mmap-fused": "mmap doorbells, DPA fused (polling poll group; default)",
                 "mmap-1hart": "mmap doorbells, 1 DPA hart",
                 "mmap-fused-2pg": "the default with 2 poll groups (2 cores), 2 client threads"}


class Stat:
    """Median, min and max of the runs of one figure."""

    def __init__(self, values):
        self.values = [v for v in values if v is not None]
        self.n = len(self.values)
        self.med = statistics.median(self.values) if self.values else None
        self.lo = min(self.values) if self.values else None
        self.hi = max(self.values) if self.values else None

    def __bool__(self):
        return self.n > 0


def bench_stat(rows, fn):
    """Stat of fn(row) over rows (fn returning None leaves a row out)."""
    out = []
    for r in rows:
        try:
            out.append(fn(r))
        except (KeyError, TypeError, ZeroDivisionError):
            pass
    return Stat(out)


def bench_load_json(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def bench_load_jsonl(path, problems):
    """The objects of a JSON-lines file; unreadable lines are noted in problems."""
    rows = []
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    rows.append(json.loads(line))
                except ValueError:
                    problems.append("%s:%d: not JSON" % (os.path.basename(path), n))
    except OSError:
        pass
    return rows


class Native:
    """nvme-emu-perf results: runs keyed (config, bdev, workload, size, depth, queues, mode)."""

    def __init__(self, raw, problems):
        self.runs = {}
        self.failures = []
        self.seconds = None
        self.bdev_size = None
        for rec in bench_load_jsonl(os.path.join(raw, "native.jsonl"), problems):
            self.bdev_size = rec.get("bdev_size", self.bdev_size)
            p = rec.get("perf")
            if not isinstance(p, dict):
                self.failures.append("%s %s: %s" % (rec.get("config"), rec.get("bdev"),
                                                    rec.get("error")))
                continue
            key = (rec["config"], rec["bdev"], p["workload"], p["io_size"], p["depth"],
                   p["queues"], rec.get("mode", "poll"))
            self.runs.setdefault(key, []).append(p)
            self.seconds = p.get("seconds", self.seconds)

    def configs(self):
        found = {k[0] for k in self.runs}
        order = (NATIVE_DEFAULT, "trap-fused", "mmap-1hart")
        return [c for c in order if c in found] + sorted(found - set(order))

    def keys(self, **want):
        """Sorted keys whose named fields match."""
        names = ("config", "bdev", "workload", "size", "depth", "queues", "mode")
        out = [k for k in self.runs
               if all(k[names.index(n)] == v for n, v in want.items())]
        return sorted(out, key=lambda k: (k[1], k[2], k[3], k[6], k[5], k[4],
                                          self.configs().index(k[0])))

    def stat(self, key, metric):
        return bench_stat(self.runs.get(key, []), NATIVE_METRICS[metric])


NATIVE_METRICS = {
    "iops": lambda p: p["iops"],
    "mib_s": lambda p: p["mib_s"],
    "gb_s": lambda p: p["mib_s"] * 1048576 / 1e9,
    "p50": lambda p: p["lat_us"]["p50"],
    "p99": lambda p: p["lat_us"]["p99"],
    "p99_9": lambda p: p["lat_us"]["p99_9"],
    "server_us_io": lambda p: p["server_cpu_s"] / p["ios"] * 1e6 if p["server_cpu_s"] >= 0
    else None,
    "client_us_io": lambda p: p["client_cpu_s"] / p["ios"] * 1e6,
    "server_cores": lambda p: p["server_cpu_s"] / p["seconds"] if p["server_cpu_s"] >= 0
    else None,
    "iops_per_server_cpu_s": lambda p: p["iops_per_server_cpu_s"] or None,
}


def bench_fio_result(path):
    """IOPS, MiB/s and total latency (submission to completion: QEMU's own devices complete in
    the submitting vCPU's MMIO exit, inside io_submit, so completion latency alone would hide
    their cost) p50, p99, p99.9 and mean in us of one fio JSON file, or None."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        doc = json.loads(text[text.find("{"):])
        job = doc["jobs"][0]
        if job.get("error"):
            return None
        d = job["read"] if job["read"]["io_bytes"] else job["write"]
        pct = d["lat_ns"]["percentile"]
        return {"iops": d["iops"], "mib_s": d["bw_bytes"] / 1048576.0,
                "p50": pct["50.000000"] / 1000.0, "p99": pct["99.000000"] / 1000.0,
                "p99_9": pct["99.900000"] / 1000.0, "mean": d["lat_ns"]["mean"] / 1000.0}
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return None


class Guest:
    """fio results in the guest keyed (device, workload) -> {run: result}, with the host CPU
    (QEMU + the device's own daemon) of each run from bench_cpu.py."""

    def __init__(self, raw, problems):
        gdir = os.path.join(raw, "guest")
        self.info = bench_load_json(os.path.join(gdir, "info.json")) or {}
        self.runs = {}
        self.failures = []
        for path in glob.glob(os.path.join(gdir, "run", "out", "*.json")):
            m = re.match(r"(.+)-((?:randread|seqwrite)-\w+-(?:qd\d+|psync))-(\d+)\.json$",
                         os.path.basename(path))
            if not m:
                continue
            res = bench_fio_result(path)
            if res is None:
                self.failures.append(os.path.basename(path))
                continue
            self.runs.setdefault((m.group(1), m.group(2)), {})[int(m.group(3))] = res
        self.cpu = {}
        self.idle = {}
        for rec in bench_load_jsonl(os.path.join(gdir, "cpu.jsonl"), problems):
            try:
                device, workload, run = rec["job"].split()
                secs = rec["seconds"]
                own = rec["daemon_cpu_s"].get(device, 0.0)
                self.cpu[(device, workload, int(run))] = (rec["qemu_cpu_s"] + own, own, secs)
                # The other daemons are idle with the guest attached meanwhile.
                for label, cpu in rec["daemon_cpu_s"].items():
                    if label != device:
                        t = self.idle.setdefault(label, [0.0, 0.0])
                        t[0] += cpu
                        t[1] += secs
            except (KeyError, ValueError, TypeError, AttributeError):
                problems.append("cpu.jsonl: bad record %r" % (rec,))
        for (device, workload), runs in self.runs.items():
            for run, res in runs.items():
                c = self.cpu.get((device, workload, run))
                if c and res["iops"] > 0 and c[2] > 0:
                    res["host_us_io"] = c[0] / c[2] / res["iops"] * 1e6
                    res["daemon_us_io"] = c[1] / c[2] / res["iops"] * 1e6
                self.guest_side(gdir, device, workload, run, res)

    def guest_side(self, gdir, device, workload, run, res):
        """The guest's own cost of a run from its .guest file (the job's /proc/interrupts lines
        of the device and /proc/stat jiffies, before and after fio, ramp included): interrupts
        per I/O and guest CPU us per I/O (vCPU time, whichever vCPU), I/Os being IOPS times the
        span. Under TCG the vCPUs bound the guest figures, so these say where its time went."""
        path = os.path.join(gdir, "run", "out", "%s-%s-%d.guest" % (device, workload, run))
        try:
            with open(path, encoding="utf-8") as f:
                v = [int(x) for x in f.read().split()]
            irq, busy, total = v[3] - v[0], v[4] - v[1], v[5] - v[2]
        except (OSError, ValueError, IndexError):
            return
        try:
            ncpu = int(self.info.get("guest_cpus") or 1)
        except ValueError:
            ncpu = 1
        ios = res["iops"] * total / 100.0 / ncpu
        if ios > 0 and total > 0:
            res["guest_irq_io"] = irq / ios
            res["guest_us_io"] = busy / 100.0 / ios * 1e6

    def devices(self):
        found = {k[0] for k in self.runs}
        order = list(GUEST_PEERS) + [GUEST_DEFAULT] + sorted(found - set(GUEST_PEERS) -
                                                              {GUEST_DEFAULT})
        return [d for d in order if d in found]

    def workloads(self):
        found = {k[1] for k in self.runs}

        def order(w):
            # psync (one at a time) right after QD1.
            rw, bs, qd = w.split("-")
            return (rw != "randread", int(bs.rstrip("k")), 1 if qd == "psync" else int(qd[2:]),
                    qd == "psync")
        return sorted(found, key=order)

    def stat(self, device, workload, metric):
        return bench_stat(self.runs.get((device, workload), {}).values(), lambda r: r[metric])

    def run_ratios(self, device, peer, workload, metric):
        """device / peer for each run both have (the jobs of one run ran back to back in the
        same guest), in run order."""
        a, b = self.runs.get((device, workload), {}), self.runs.get((peer, workload), {})
        return [a[r][metric] / b[r][metric] for r in sorted(set(a) & set(b))
                if b[r].get(metric)]

    def idle_pct(self, label):
        t = self.idle.get(label)
        return t[0] / t[1] * 100.0 if t and t[1] > 0 else None


class Dpa:
    """dpa-bench / dpa-bench-hw results keyed (bench, mode, harts) -> runs."""

    def __init__(self, raw, problems):
        self.runs = {}
        self.failures = []
        for path in sorted(glob.glob(os.path.join(raw, "dpa", "*.jsonl"))):
            for rec in bench_load_jsonl(path, problems):
                key = (rec.get("bench"), rec.get("mode"), rec.get("harts"))
                if rec.get("ok"):
                    self.runs.setdefault(key, []).append(rec)
                else:
                    self.failures.append("%s %s harts %s" % key)

    def keys(self):
        return sorted(self.runs, key=lambda k: (k[0], k[1] != "trap", -k[2]))

    def stat(self, key, metric):
        return bench_stat(self.runs.get(key, []), lambda r: r[metric])


def bench_load(bench_dir):
    """Everything under bench_dir/raw: (meta, native, guest, dpa, problems)."""
    raw = os.path.join(bench_dir, "raw")
    problems = []
    meta = bench_load_json(os.path.join(raw, "meta.json")) or {}
    return meta, Native(raw, problems), Guest(raw, problems), Dpa(raw, problems), problems
