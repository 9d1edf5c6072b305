"""tests/lib/svctest.py - what the service tests written in Python share: "ok - " / "not ok - "
lines with the closing "N passed, N failed", the daemon started and stopped, JSON-RPC calls
through nvme-emu-rpc, HTTP requests on raw sockets, nvme-emu-perf runs, and the Prometheus text
format parsed (tests/lib/check.sh is the shell twin)."""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time


class Checks:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, name, cond, detail=""):
        if cond:
            print("ok - %s" % name, flush=True)
            self.passed += 1
        else:
            print("not ok - %s%s" % (name, (": " + str(detail)) if detail else ""), flush=True)
            self.failed += 1
        return cond

    def finish(self):
        print("%d passed, %d failed" % (self.passed, self.failed), flush=True)
        sys.exit(1 if self.failed else 0)


def tree(argv):
    """(top of the tree, bin directory of the build given as argv[1], a fresh temp dir)."""
    top = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    build = argv[1] if len(argv) > 1 else "build"
    return top, os.path.join(top, build, "bin"), tempfile.mkdtemp(prefix="nvme-emu-svc.")


def wait_for(pred, timeout=15.0, step=0.05):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(step)
    return pred()


class Daemon:
    """nvme-emu with `args`, stderr in `log`; env additions in `env`."""

    def __init__(self, binary, args, log, env=None, stderr=None, prefix=()):
        self.log = log
        e = dict(os.environ)
        for k in ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "NVME_EMU_TEST_FAULTS",
                  "JOURNAL_STREAM"):
            e.pop(k, None)
        e.update(env or {})
        out = stderr if stderr is not None else open(log, "w")
        self.proc = subprocess.Popen(list(prefix) + [binary] + args, stdout=out, stderr=out, env=e)
        if stderr is None:
            out.close()

    def text(self):
        with open(self.log, errors="replace") as f:
            return f.read()

    def metrics_address(self, timeout=10):
        m = wait_for(lambda: re.search(r"metrics on http://([^/ ]+)/metrics", self.text()), timeout)
        return m.group(1) if m else None

    def alive(self):
        return self.proc.poll() is None

    def stop(self, sig=signal.SIGTERM, timeout=30):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


def rpc(bindir, sock, method, params=None, timeout=60):
    """(ok, result or error text) of one call through nvme-emu-rpc."""
    cmd = [os.path.join(bindir, "nvme-emu-rpc"), "-s", sock, "-t", str(timeout), "-r", method]
    if params is not None:
        cmd.append(json.dumps(params))
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout + 10)
    if p.returncode:
        return False, p.stderr.strip()
    return True, json.loads(p.stdout) if p.stdout.strip() else None


def perf(bindir, sock, *args, timeout=120, prefix=()):
    """nvme-emu-perf -j ARGS (after the command words `prefix`, e.g. chrt): its JSON object, or
    None (the reason printed)."""
    p = subprocess.run(list(prefix) + [os.path.join(bindir, "nvme-emu-perf"), "-s", sock, "-j"] +
                       list(args), capture_output=True, text=True, timeout=timeout)
    if p.returncode:
        print("# nvme-emu-perf failed: %s %s" % (p.stdout.strip(), p.stderr.strip()))
        return None
    return json.loads(p.stdout)


def http(addr, raw, timeout=10, read_all=True):
    """Sends `raw` (bytes) to host:port, returns everything read until the peer closes (or one
    response when read_all is False) as bytes."""
    host, port = addr.rsplit(":", 1)
    s = socket.create_connection((host.strip("[]"), int(port)), timeout=timeout)
    try:
        s.sendall(raw)
        data = b""
        while True:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            if not chunk:
                break
            data += chunk
            if not read_all and response_complete(data):
                break
        return data
    finally:
        s.close()


def response_complete(data):
    head, sep, body = data.partition(b"\r\n\r\n")
    if not sep:
        return False
    m = re.search(rb"(?i)content-length: *(\d+)", head)
    return m is not None and len(body) >= int(m.group(1))


def status_of(resp):
    m = re.match(rb"HTTP/1\.1 (\d{3}) ", resp)
    return int(m.group(1)) if m else None


def get_metrics(addr):
    resp = http(addr, b"GET /metrics HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
    head, _, body = resp.partition(b"\r\n\r\n")
    return status_of(resp), head.decode(), body.decode()


_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_metrics(text):
    """{"types": {family: type}, "samples": [(name, {labels}, value)], "errors": [...]}: the
    format's rules checked on the way (HELP and TYPE once per family and before its samples,
    samples of a family together)."""
    types, helps, samples, errors, seen_done = {}, set(), [], [], set()
    current = None
    for line in text.splitlines():
        if line.startswith("# HELP "):
            name = line.split(" ", 3)[2]
            if name in helps:
                errors.append("second HELP for " + name)
            helps.add(name)
            continue
        if line.startswith("# TYPE "):
            _, _, name, typ = line.split(" ", 3)
            if name in types:
                errors.append("second TYPE for " + name)
            types[name] = typ
            if current:
                seen_done.add(current)
            current = name
            continue
        m = _SAMPLE.match(line)
        if not m:
            errors.append("bad line: " + line)
            continue
        name = m.group(1)
        fam = name
        for suf in ("_bucket", "_sum", "_count"):
            if name.endswith(suf) and name[: -len(suf)] in types:
                fam = name[: -len(suf)]
        if fam != current:
            errors.append("sample %s outside its family's group" % name)
        labels = {k: bytes(v, "utf-8").decode("unicode_escape") for k, v in
                  _LABEL.findall(m.group(3) or "")}
        samples.append((name, labels, float(m.group(4))))
    return {"types": types, "samples": samples, "errors": errors}


def select(parsed, name, **labels):
    return [(l, v) for n, l, v in parsed["samples"] if n == name and
            all(l.get(k) == str(w) for k, w in labels.items())]


def total(parsed, name, **labels):
    return sum(v for _, v in select(parsed, name, **labels))
