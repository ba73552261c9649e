#!/usr/bin/env python3
"""Attacks a running `dlq-archive run` and measures what each attack costs it.

For every phase (idle, slowloris, header flood, regex bomb, after) it prints
the daemon's RSS and CPU (from /proc) and the latency of /healthz probes
sent during the phase, then times a SIGTERM sent during a slowloris. Run it
through bench/hostile/run.sh, which starts the daemon (any build: pass the
binary) on fauxqs with an archive holding a 1 MiB body.

Usage: attack.py PID PORT QUEUE   (prints one JSON document at the end)
SKIP_REGEX=1 leaves out the regex phase.
"""
import json
import os
import signal
import socket
import sys
import threading
import time
import urllib.request

PID, PORT, QUEUE = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
TICK = os.sysconf("SC_CLK_TCK")


def alive():
    try:
        with open(f"/proc/{PID}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def rss_mib():
    if not alive():
        return -1.0
    with open(f"/proc/{PID}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return -1.0


def cpu_s():
    if not alive():
        return -1.0
    with open(f"/proc/{PID}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def get(path, timeout=2.0, headers=None):
    start = time.monotonic()
    try:
        req = urllib.request.Request(f"http://127.0.0.1:{PORT}{path}", headers=headers or {})
        with urllib.request.urlopen(req, timeout=timeout) as r:
            r.read()
            code = r.status
    except urllib.error.HTTPError as e:
        code = e.code
    except Exception:
        code = 0  # timed out or refused
    return code, time.monotonic() - start


class Probe(threading.Thread):
    """Sends /healthz every 250 ms while running; keeps the latencies."""

    def __init__(self):
        super().__init__(daemon=True)
        self.stop = threading.Event()
        self.samples = []

    def run(self):
        while not self.stop.is_set():
            self.samples.append(get("/healthz", timeout=2.0))
            self.stop.wait(0.25)

    def result(self):
        lat = sorted(s for c, s in self.samples if c == 200)
        failed = sum(1 for c, _ in self.samples if c != 200)
        return {
            "probes": len(self.samples),
            "failed": failed,
            "p50_ms": round(lat[len(lat) // 2] * 1000, 1) if lat else None,
            "max_ms": round(max(lat) * 1000, 1) if lat else None,
        }


def phase(name, attack, seconds):
    rss0, cpu0 = rss_mib(), cpu_s()
    probe = Probe()
    probe.start()
    stop = threading.Event()
    t = threading.Thread(target=attack, args=(stop,), daemon=True)
    t.start()
    time.sleep(seconds)
    stop.set()
    t.join(timeout=30)
    probe.stop.set()
    probe.join()
    if not alive():
        out = {"phase": name, "daemon": "died during the phase (see its exit status in run.sh's output)"}
        out.update(probe.result())
        print(json.dumps(out), file=sys.stderr)
        return out
    out = {"phase": name, "rss_before_mib": round(rss0, 1), "rss_after_mib": round(rss_mib(), 1),
           "cpu_s": round(cpu_s() - cpu0, 3)}
    out.update(probe.result())
    if attack is regex_bomb:
        codes = {}
        for c, _ in REGEX_ANSWERS:
            codes[str(c)] = codes.get(str(c), 0) + 1
        out["searches"] = codes  # HTTP status -> count (0: no answer within 2 s)
        if REGEX_ANSWERS:
            out["cpu_ms_per_search"] = round(out["cpu_s"] * 1000 / len(REGEX_ANSWERS), 1)
    print(json.dumps(out), file=sys.stderr)
    return out


def idle(stop):
    stop.wait()


def slowloris(stop, connections=64, interval=3.0):
    socks = []
    while not stop.is_set():
        while len(socks) < connections:
            try:
                s = socket.create_connection(("127.0.0.1", PORT), timeout=1)
                s.sendall(b"GET /api/overview HTTP/1.1\r\n")
                socks.append(s)
            except OSError:
                break
        stop.wait(interval)
        alive = []
        for s in socks:
            try:
                s.sendall(b"X-Slow: v\r\n")
                alive.append(s)
            except OSError:
                s.close()
        socks = alive
    for s in socks:
        s.close()


def header_flood(stop, connections=8, headers=50000):
    big = b"a" * 4096
    for c in range(connections):
        if stop.is_set():
            return
        try:
            s = socket.create_connection(("127.0.0.1", PORT), timeout=5)
            s.sendall(b"GET /healthz HTTP/1.1\r\n")
            for i in range(headers):
                s.sendall(b"X-Flood-%d: " % i + big + b"\r\n")
        except OSError:
            pass
        finally:
            s.close()


REGEX_ANSWERS = []


def regex_bomb(stop):
    # Four at once, each given up by its client after 2 s (curl -m 2).
    def one():
        REGEX_ANSWERS.append(get(f"/api/search?queue={QUEUE}&re=%5E(.%2B)%2B!%24", timeout=2.0))
    while not stop.is_set():
        ts = [threading.Thread(target=one, daemon=True) for _ in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()


def main():
    results = []
    for name, attack, seconds in [
        ("idle", idle, 5),
        ("slowloris (64 connections, a header line every 3 s)", slowloris, 15),
        ("header flood (8 x 50,000 x 4 KB)", header_flood, 10),
        ("regex bomb ^(.+)+!$ on a 1 MiB body, 4 at a time", regex_bomb, 10),
        ("after", idle, 5),
    ]:
        if attack is regex_bomb and os.environ.get("SKIP_REGEX"):
            continue  # an engine that crashes on it ends the run before the SIGTERM phase
        results.append(phase(name, attack, seconds))
        if not alive():
            print(json.dumps(results, indent=1))
            return
    # SIGTERM during a slowloris.
    stop = threading.Event()
    t = threading.Thread(target=slowloris, args=(stop,), daemon=True)
    t.start()
    time.sleep(4)
    start = time.monotonic()
    os.kill(PID, signal.SIGTERM)
    exited = None
    while time.monotonic() - start < 60:
        try:
            os.kill(PID, 0)
            with open(f"/proc/{PID}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    exited = time.monotonic() - start
                    break
        except (ProcessLookupError, FileNotFoundError):
            exited = time.monotonic() - start
            break
        time.sleep(0.05)
    stop.set()
    results.append({"phase": "SIGTERM during slowloris", "exit_s": round(exited, 2) if exited is not None else None})
    print(json.dumps(results, indent=1))


main()
