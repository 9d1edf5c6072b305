#!/usr/bin/env python3
"""A minimal QMP client for the guest harness: runs commands and waits for events.

Usage: qmp.py [--timeout S] SOCKET STEP...
  STEP is either a JSON command ('{"execute": "device_add", "arguments": {...}}')
  or 'event:NAME[:DEVICE]' to wait for the event NAME (for DEVICE_DELETED, the
  one naming DEVICE). Steps run in order on one connection. Each command's
  "return" is printed as JSON; exit 1 on a QMP error, a timeout (default 60 s per
  step) or a closed connection, 2 on bad usage.
"""
import json
import socket
import sys
import time


class QmpError(Exception):
    pass


class Qmp:
    def __init__(self, path, timeout):
        self.timeout = timeout
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.buf = b""
        self.events = []
        greeting = self.read_msg(time.monotonic() + timeout)
        if "QMP" not in greeting:
            raise QmpError("no QMP greeting: %r" % greeting)
        self.command({"execute": "qmp_capabilities"})

    def read_msg(self, deadline):
        """Returns the next JSON message; raises QmpError past the deadline."""
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise QmpError("timed out waiting for QEMU")
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                raise QmpError("timed out waiting for QEMU") from None
            if not data:
                raise QmpError("QEMU closed the QMP connection")
            self.buf += data
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def command(self, cmd):
        """Sends one command, returns its "return" value; events seen meanwhile are kept."""
        self.sock.sendall(json.dumps(cmd).encode() + b"\n")
        deadline = time.monotonic() + self.timeout
        while True:
            msg = self.read_msg(deadline)
            if "event" in msg:
                self.events.append(msg)
            elif "error" in msg:
                raise QmpError("%s: %s" % (cmd.get("execute"), msg["error"].get("desc", msg)))
            elif "return" in msg:
                return msg["return"]

    def wait_event(self, name, device):
        """Waits for event NAME (with data.device == DEVICE when given)."""
        def match(ev):
            return ev.get("event") == name and (
                device is None or ev.get("data", {}).get("device") == device)
        for i, ev in enumerate(self.events):
            if match(ev):
                del self.events[i]
                return ev
        deadline = time.monotonic() + self.timeout
        while True:
            ev = self.read_msg(deadline)
            if match(ev):
                return ev
            if "event" in ev:
                self.events.append(ev)


def qmp_main(argv):
    timeout = 60.0
    if len(argv) >= 2 and argv[0] == "--timeout":
        timeout = float(argv[1])
        argv = argv[2:]
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        q = Qmp(argv[0], timeout)
        for step in argv[1:]:
            if step.startswith("event:"):
                parts = step.split(":", 2)
                ev = q.wait_event(parts[1], parts[2] if len(parts) > 2 else None)
                print(json.dumps(ev))
            else:
                print(json.dumps(q.command(json.loads(step))))
    except (OSError, QmpError, ValueError) as e:
        print("qmp: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(qmp_main(sys.argv[1:]))
