#!/usr/bin/env python3
"""Drives the root shell of a booted guest over QEMU's serial console socket (boot-lib.sh runs it as a coprocess).

The guest's getty logs root in on ttyS0 (boot-image.sh); QEMU serves that
console on a unix socket (-chardev socket,server=on,wait=on: the machine
starts when this driver connects, so no output is lost). Every byte the guest
sends goes to --log. Requests come one a line on stdin; each is answered on
stdout by its output lines (for run) and then one status line

    @@<token> rc=<n> secs=<s>

where <token> is --token, rc is the command's exit status (run) or 0 (done),
124 (timed out), 125 (the console closed: QEMU exited), and secs the time the
request took (boot: since --t0, the moment QEMU was started).

    boot TIMEOUT      wait for the shell prompt, then prepare the shell
    run TIMEOUT CMD   run CMD (one line of shell) in the guest's shell
    reboot TIMEOUT    'reboot' in the guest, then as boot (secs: since reboot)
    poweroff TIMEOUT  'poweroff' in the guest, wait for QEMU to close the console
    expect TIMEOUT RE wait for the regular expression RE in console output
                      not consumed yet (e.g. firmware messages)

Preparing the shell turns off line editing and echo (the output of a command
is then only what it prints), empties the prompts and silences kernel
messages on the console; a command's end is a marker the shell prints with
the exit status, made so that it never appears in the command line itself.
"""
import argparse
import os
import re
import socket
import sys
import threading
import time

# A root shell prompt as bash prints it for Debian's root (user@host:dir# ),
# possibly with kernel or systemd messages printed after it.
PROMPT_RE = re.compile(rb"root@[A-Za-z0-9._-]+:[^\n]*# ")


class Console:
    """The socket, a reader thread appending to a buffer and the log."""

    def __init__(self, path, log_path, connect_timeout):
        self.buf = bytearray()
        self.pos = 0  # bytes before pos are consumed
        self.closed = False
        self.cond = threading.Condition()
        self.log = open(log_path, "ab", buffering=0)
        deadline = time.monotonic() + connect_timeout
        while True:
            try:
                self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.sock.connect(path)
                break
            except OSError as e:
                self.sock.close()
                if time.monotonic() > deadline:
                    raise SystemExit(f"serial-shell: cannot connect to {path}: {e}")
                time.sleep(0.1)
        threading.Thread(target=self._reader, daemon=True).start()

    def _reader(self):
        while True:
            try:
                data = self.sock.recv(65536)
            except OSError:
                data = b""
            with self.cond:
                if not data:
                    self.closed = True
                    self.cond.notify_all()
                    return
                self.log.write(data)
                self.buf += data
                self.cond.notify_all()

    def send(self, text):
        try:
            self.sock.sendall(text.encode())
        except OSError:
            pass  # the console closed: the next wait reports it

    def wait_for(self, regex, deadline):
        """Waits for regex in the unconsumed output; consumes up to its end.

        Returns (match, text before it) or (None, reason) with reason 124
        (timeout) or 125 (closed)."""
        with self.cond:
            while True:
                m = regex.search(self.buf, self.pos)
                if m:
                    before = bytes(self.buf[self.pos:m.start()])
                    self.pos = m.end()
                    return m, before
                if self.closed:
                    return None, 125
                left = deadline - time.monotonic()
                if left <= 0:
                    return None, 124
                self.cond.wait(left)

    def wait_closed(self, deadline):
        with self.cond:
            while not self.closed:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.cond.wait(left)
            return True

    def skip_all(self):
        with self.cond:
            self.pos = len(self.buf)

    def pending(self):
        """The output not consumed yet (what a timed-out command printed)."""
        with self.cond:
            return bytes(self.buf[self.pos:])


class Shell:
    def __init__(self, con, token):
        self.con = con
        self.token = token
        self.seq = 0

    def _marker(self):
        # The command line holds $((seq+0)) and $?: the printed marker holds
        # their values, so the (echoed) command line never matches it.
        self.seq += 1
        pattern = re.compile(rb"@@M" + str(self.seq).encode() + rb"@(\d+)@\r?\n")
        text = f"printf '@@M%d@%d@\\n' $(({self.seq}+0)) $?"
        return text, pattern

    def prepare(self, deadline):
        """Fresh login shell: no line editing, no echo, no prompts, no printk."""
        text, pattern = self._marker()
        self.con.send("set +o emacs +o vi; stty -echo -onlcr; PS1=''; PS2=''; "
                      f"dmesg -n 1 2>/dev/null; {text.replace('$?', '0')}\n")
        m, reason = self.con.wait_for(pattern, deadline)
        return 0 if m else reason

    def boot(self, timeout):
        """Waits for the login shell; returns (status, epoch of the prompt)."""
        deadline = time.monotonic() + timeout
        m, reason = self.con.wait_for(PROMPT_RE, deadline)
        if not m:
            return reason, time.time()
        at = time.time()
        return self.prepare(deadline), at

    def run(self, timeout, cmd):
        deadline = time.monotonic() + timeout
        text, pattern = self._marker()
        # stdin from /dev/null: the console is the shell's input.
        self.con.send(f"{{ {cmd}\n}} </dev/null 2>&1; {text}\n")
        m, before = self.con.wait_for(pattern, deadline)
        if not m:
            return before, self.con.pending()
        return int(m.group(1)), before


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--socket", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--token", required=True)
    ap.add_argument("--t0", type=float, default=None, help="QEMU start (epoch seconds)")
    ap.add_argument("--connect-timeout", type=float, default=30)
    args = ap.parse_args()

    con = Console(args.socket, args.log, args.connect_timeout)
    sh = Shell(con, args.token)
    t0 = args.t0 if args.t0 is not None else time.time()

    def reply(rc, start, out=b"", end=None):
        if out:
            text = out.replace(b"\r", b"").decode("utf-8", "replace")
            sys.stdout.write(text if text.endswith("\n") else text + "\n")
        secs = (end if end is not None else time.time()) - start
        sys.stdout.write(f"@@{args.token} rc={rc} secs={secs:.1f}\n")
        sys.stdout.flush()

    for line in sys.stdin:
        words = line.rstrip("\n").split(" ", 2)
        verb = words[0]
        try:
            timeout = float(words[1])
        except (IndexError, ValueError):
            reply(2, time.time(), f"serial-shell: bad request: {line}".encode())
            continue
        start = time.time()
        if verb == "boot":
            rc, at = sh.boot(timeout)
            reply(rc, t0, end=at)
        elif verb == "reboot":
            con.skip_all()
            con.send("reboot\n")
            rc, at = sh.boot(timeout)
            reply(rc, start, end=at)
        elif verb == "poweroff":
            con.send("poweroff\n")
            reply(0 if con.wait_closed(time.monotonic() + timeout) else 124, start)
        elif verb == "run" and len(words) == 3:
            rc, out = sh.run(timeout, words[2])
            reply(rc, start, out)
        elif verb == "expect" and len(words) == 3:
            m, reason = con.wait_for(re.compile(words[2].encode()), time.monotonic() + timeout)
            reply(0 if m else reason, start)
        else:
            reply(2, start, f"serial-shell: bad request: {line}".encode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
