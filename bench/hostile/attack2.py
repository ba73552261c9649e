#!/usr/bin/env python3
"""Issue 38's listener attacks against a running `dlq-archive run`.

Phases, each with the daemon's RSS (VmRSS sampled every 100 ms: start, peak,
end) and, where the issue names it, probes of /healthz and /metrics sent
every 250 ms during the phase (an answer is "ok" when it is 200 within 1 s):
  half-close   200 x `GET /healthz HTTP/1.0` and 200 x `GET /metrics
               HTTP/1.1`, each followed at once by shutdown(SHUT_WR)
  get-500      500 clients sending ordinary GETs of / for 10 s
  partial-300  300 clients sending half a head, reconnecting, for 10 s
  search-100   100 clients searching at once for 10 s (/metrics probed)
  bodies       9 rounds of 127 connections, each POST /api/replay with a
               1 MiB body and no token (RSS after each round)
  refusals     8 threads posting /api/queues/Q/archive without a token for
               10 s: the log lines and bytes the daemon wrote meanwhile

Run it through bench/hostile/round2.sh, which starts the daemon (any build:
pass the binary). Usage: attack2.py PID PORT QUEUE LOG [PHASE...]; prints
one JSON document.
"""
import json
import os
import socket
import subprocess
import sys
import threading
import time

PID, PORT, QUEUE, LOG = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
PHASES = sys.argv[5:] or ["half-close", "get-500", "partial-300", "search-100", "bodies", "refusals"]


def rss_mib():
    try:
        with open(f"/proc/{PID}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except FileNotFoundError:
        pass
    return -1.0


class RssSampler(threading.Thread):
    def __init__(self):
        super().__init__(daemon=True)
        self.stop = threading.Event()
        self.start_mib = rss_mib()
        self.peak = self.start_mib

    def run(self):
        while not self.stop.is_set():
            self.peak = max(self.peak, rss_mib())
            self.stop.wait(0.1)

    def result(self):
        self.stop.set()
        self.join()
        return {"rss_start_mib": round(self.start_mib, 1), "rss_peak_mib": round(self.peak, 1),
                "rss_end_mib": round(rss_mib(), 1)}


def exchange(request, timeout=5.0, half_close=False):
    """Sends raw bytes on a new connection; returns (status, seconds) or (0, s)."""
    start = time.monotonic()
    try:
        with socket.create_connection(("127.0.0.1", PORT), timeout=timeout) as s:
            s.sendall(request)
            if half_close:
                s.shutdown(socket.SHUT_WR)
            got = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                got += chunk
                if b"\r\n\r\n" in got and not half_close and b"Connection: close" not in got:
                    break
        code = int(got.split(b" ", 2)[1]) if got.startswith(b"HTTP/1.") else 0
    except Exception:
        code = 0
    return code, time.monotonic() - start


def get(path):
    return exchange(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode(), timeout=2.0)


class Probe(threading.Thread):
    """Sends GET path every 250 ms through curl (a process of its own, as a
    kubelet or Prometheus is: the load's threads cannot delay it); an answer
    is ok when 200 within 1 s by curl's own clock (2 s at most)."""

    def __init__(self, path):
        super().__init__(daemon=True)
        self.path = path
        self.stop = threading.Event()
        self.samples = []

    def run(self):
        while not self.stop.is_set():
            r = subprocess.run(["curl", "-s", "-o", "/dev/null", "--max-time", "2", "-w", "%{http_code} %{time_total}",
                                f"http://127.0.0.1:{PORT}{self.path}"], capture_output=True, text=True)
            code, seconds = (r.stdout.split() + ["0", "2"])[:2]
            self.samples.append((int(code), float(seconds)))
            self.stop.wait(0.25)

    def result(self):
        self.stop.set()
        self.join()
        ok = [s for c, s in self.samples if c == 200 and s < 1.0]
        codes = {}
        for c, _ in self.samples:
            codes[str(c)] = codes.get(str(c), 0) + 1
        return {"sent": len(self.samples), "ok": len(ok), "codes": codes,
                "max_ms": round(max((s for _, s in self.samples), default=0) * 1000, 1)}


def with_probes(paths, load, seconds):
    """Runs `load(stop)` in threads for `seconds` while probing `paths`."""
    sampler = RssSampler()
    sampler.start()
    stop = threading.Event()
    workers = load(stop)
    time.sleep(0.5)  # let the load build up
    probes = [Probe(p) for p in paths]
    for p in probes:
        p.start()
    time.sleep(seconds)
    results = {p.path: p.result() for p in probes}
    stop.set()
    for w in workers:
        w.join(timeout=10)
    results.update(sampler.result())
    return results


def spawn(n, body):
    threads = []
    for i in range(n):
        t = threading.Thread(target=body, args=(i,), daemon=True)
        t.start()
        threads.append(t)
    return threads


def half_close():
    sampler = RssSampler()
    sampler.start()
    healthz = sum(exchange(b"GET /healthz HTTP/1.0\r\n\r\n", half_close=True)[0] == 200 for _ in range(200))
    metrics = sum(exchange(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", half_close=True)[0] == 200
                  for _ in range(200))
    r = {"healthz_answered_of_200": healthz, "metrics_answered_of_200": metrics}
    r.update(sampler.result())
    return r


def get_500():
    def one(stop):
        while not stop.is_set():
            get("/")

    return with_probes(["/healthz", "/metrics"], lambda stop: spawn(500, lambda i: one(stop)), 10)


def partial_300():
    def one(stop):
        while not stop.is_set():
            try:
                with socket.create_connection(("127.0.0.1", PORT), timeout=2) as s:
                    s.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Half: ")
                    s.settimeout(2)
                    try:
                        s.recv(1)  # until the server drops it (or 2 s)
                    except Exception:
                        pass
            except Exception:
                time.sleep(0.05)

    return with_probes(["/healthz", "/metrics"], lambda stop: spawn(300, lambda i: one(stop)), 10)


def search_100():
    codes = {}
    lock = threading.Lock()

    def one(stop):
        while not stop.is_set():
            c, _ = exchange(f"GET /api/search?queue={QUEUE}&q=declined HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                            "Connection: close\r\n\r\n".encode(), timeout=10)
            with lock:
                codes[str(c)] = codes.get(str(c), 0) + 1

    r = with_probes(["/healthz", "/metrics"], lambda stop: spawn(100, lambda i: one(stop)), 10)
    r["search_codes"] = codes
    return r


def bodies():
    body = b"x" * (1 << 20)
    head = (f"POST /api/replay HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode()
    sampler = RssSampler()
    sampler.start()
    rounds = []
    codes = {}
    lock = threading.Lock()

    def one(_):
        c, _ = exchange(head + body, timeout=10)
        with lock:
            codes[str(c)] = codes.get(str(c), 0) + 1

    for _ in range(9):
        for t in spawn(127, one):
            t.join()
        rounds.append(round(rss_mib(), 1))
    time.sleep(1)
    r = {"rss_after_each_round_mib": rounds, "codes": codes}
    r.update(sampler.result())
    return r


def refusals():
    lines_before = open(LOG, "rb").read().count(b"\n")
    bytes_before = os.path.getsize(LOG)
    sent = [0] * 8

    def one(i, stop):
        with socket.create_connection(("127.0.0.1", PORT), timeout=5) as s:
            req = (f"POST /api/queues/{QUEUE}/archive HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                   "Content-Length: 0\r\n\r\n").encode()
            while not stop.is_set():
                try:
                    s.sendall(req)
                    got = s.recv(65536)
                    if not got or b"Connection: close" in got:
                        s.close()
                        s = socket.create_connection(("127.0.0.1", PORT), timeout=5)
                    sent[i] += 1
                except Exception:
                    s = socket.create_connection(("127.0.0.1", PORT), timeout=5)

    stop = threading.Event()
    threads = spawn(8, lambda i: one(i, stop))
    time.sleep(10)
    stop.set()
    for t in threads:
        t.join(timeout=10)
    time.sleep(0.5)
    data = open(LOG, "rb").read()
    lines = data.count(b"\n") - lines_before
    return {"requests": sum(sent), "log_lines": lines, "log_bytes": os.path.getsize(LOG) - bytes_before,
            "refusal_lines": data.count(b"dashboard_action_refused")}


def main():
    out = {}
    for name in PHASES:
        out[name] = {"half-close": half_close, "get-500": get_500, "partial-300": partial_300,
                     "search-100": search_100, "bodies": bodies, "refusals": refusals}[name]()
        print(f"{name}: {json.dumps(out[name])}", file=sys.stderr, flush=True)
        time.sleep(2)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
