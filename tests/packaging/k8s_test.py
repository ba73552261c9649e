#!/usr/bin/env python3
"""The Kubernetes example (deploy/k8s) against the daemon it deploys.

Static: every workload's probes name routes the daemon serves (read from
src/monitor/daemon.cc), on the container port the ConfigMap's `listen` uses
(0.0.0.0); pods run as the Dockerfile's non-root user; the ServiceAccount
carries the IRSA role annotation; the sharded StatefulSet passes
--shard $(SHARD_INDEX)/N with N equal to its replicas.
Live: the ConfigMap's config starts `dlq-archive run` (with --shard 2/3, as the
StatefulSet's last pod would), and each probe path answers 200 within 15 s.
Usage: k8s_test.py DLQ_ARCHIVE_BINARY
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import yaml

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
K8S = os.path.join(ROOT, "deploy", "k8s")
failures = []


def check(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)


def load(name):
    with open(os.path.join(K8S, name)) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def main():
    binary = sys.argv[1]
    with open(os.path.join(ROOT, "src", "monitor", "daemon.cc")) as f:
        routes = set(re.findall(r'http_->Handle(?:Probe)?\("([^"]+)"', f.read()))
    check({"/healthz", "/readyz"} <= routes, f"daemon serves /healthz and /readyz (routes: {sorted(routes)})")
    with open(os.path.join(ROOT, "Dockerfile")) as f:
        user = re.findall(r"^USER (\d+):(\d+)$", f.read(), re.M)[-1]

    (cm,) = load("configmap.yaml")
    config_text = cm["data"]["dlq-archive.yaml"]
    config = yaml.safe_load(config_text)
    host, port = config["listen"].rsplit(":", 1)
    check(host == "0.0.0.0", f"ConfigMap listens on all interfaces ({config['listen']})")
    check(config.get("dashboard", {}).get("read_token") == "${DLQ_DASHBOARD_READ_TOKEN}",
          "ConfigMap: listening on all interfaces, message content needs the read token")

    (sa,) = load("serviceaccount.yaml")
    role = sa["metadata"]["annotations"].get("eks.amazonaws.com/role-arn", "")
    check(re.fullmatch(r"arn:aws:iam::\d{12}:role/.+", role) is not None, f"IRSA role annotation ({role})")

    probe_paths = set()
    workloads = [d for n in ("deployment.yaml", "statefulset-sharded.yaml") for d in load(n)
                 if d["kind"] in ("Deployment", "StatefulSet")]
    check(len(workloads) == 2, "a Deployment and a StatefulSet")
    for w in workloads:
        name = f'{w["kind"]} {w["metadata"]["name"]}'
        pod = w["spec"]["template"]["spec"]
        check(pod["serviceAccountName"] == sa["metadata"]["name"], f"{name}: uses the ServiceAccount")
        sc = pod["securityContext"]
        check(sc.get("runAsNonRoot") is True and str(sc.get("runAsUser")) == user[0],
              f"{name}: runs as non-root {user[0]} like the Dockerfile")
        (c,) = pod["containers"]
        ports = {p["name"]: p["containerPort"] for p in c["ports"]}
        check(ports.get("http") == int(port), f"{name}: container port http = listen port {port}")
        check(c["securityContext"].get("readOnlyRootFilesystem") is True, f"{name}: read-only root filesystem")
        vols = {v["name"]: v for v in pod["volumes"]}
        mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
        check(vols[mounts["/etc/dlq-archive"]]["configMap"]["name"] == cm["metadata"]["name"],
              f"{name}: mounts the ConfigMap at /etc/dlq-archive")
        state = mounts.get(config.get("state_dir", ""))
        claims = [t["metadata"]["name"] for t in w["spec"].get("volumeClaimTemplates", [])]
        check(state is not None and (state in claims or "persistentVolumeClaim" in vols.get(state, {})),
              f"{name}: a persistent volume at state_dir ({config.get('state_dir')})")
        check(c["args"][:3] == ["run", "--config", "/etc/dlq-archive/dlq-archive.yaml"], f"{name}: runs the config")
        for kind in ("livenessProbe", "readinessProbe"):
            get = c[kind]["httpGet"]
            check(get["path"] in routes and get["port"] in ("http", int(port)),
                  f"{name}: {kind} {get['path']} is a daemon route on the http port")
            probe_paths.add(get["path"])
        env = {e["name"]: e for e in c.get("env", [])}
        ref = env.get("DLQ_DASHBOARD_READ_TOKEN", {}).get("valueFrom", {}).get("secretKeyRef", {})
        check(ref.get("name") == "dlq-archive-dashboard" and ref.get("key") == "read-token",
              f"{name}: the dashboard's read token comes from a Secret")
        if w["kind"] == "StatefulSet":
            n = w["spec"]["replicas"]
            check("--shard" in c["args"] and c["args"][c["args"].index("--shard") + 1] == f"$(SHARD_INDEX)/{n}",
                  f"{name}: --shard $(SHARD_INDEX)/{n} matches replicas")
            env = {e["name"]: e for e in c["env"]}
            check(env["SHARD_INDEX"]["valueFrom"]["fieldRef"]["fieldPath"] ==
                  "metadata.labels['apps.kubernetes.io/pod-index']", f"{name}: SHARD_INDEX is the pod index")
        else:
            check(w["spec"]["replicas"] == 1 and "--shard" not in c["args"],
                  f"{name}: one unsharded replica (several would each archive every queue)")

    if shutil.which("kubectl"):
        r = subprocess.run(["kubectl", "kustomize", K8S], capture_output=True, text=True)
        check(r.returncode == 0 and "kind: Deployment" in r.stdout, f"kubectl kustomize deploy/k8s: {r.stderr.strip()}")
    else:
        print("SKIPPED: kubectl kustomize (kubectl not installed)")

    # Live: the ConfigMap's config runs; the probes answer. AWS is a closed
    # port (discovery fails and is logged; the loop still cycles).
    tmp = tempfile.mkdtemp()
    path = os.path.join(tmp, "dlq-archive.yaml")
    with open(path, "w") as f:
        f.write(config_text.replace(config["state_dir"], os.path.join(tmp, "state")))
    dead = free_port()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "AWS_REGION": "us-east-1",
           "AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s", "AWS_EC2_METADATA_DISABLED": "true",
           "AWS_ENDPOINT_URL": f"http://127.0.0.1:{dead}", "AWS_MAX_ATTEMPTS": "1",
           "DLQ_DASHBOARD_READ_TOKEN": "k8s-test-read-token-0123"}
    http_port = free_port()
    log = open(os.path.join(tmp, "log"), "w+")
    p = subprocess.Popen([binary, "run", "--config", path, "--listen-port", str(http_port), "--shard", "2/3"],
                         env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        for probe in sorted(probe_paths):
            status, deadline = None, time.time() + 15
            while time.time() < deadline and p.poll() is None:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{http_port}{probe}", timeout=2) as r:
                        status = r.status
                except urllib.error.HTTPError as e:
                    status = e.code
                except OSError:
                    status = None
                if status == 200:
                    break
                time.sleep(0.2)
            check(status == 200, f"live: {probe} answers 200 (last: {status}, exit: {p.poll()})")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/metrics", timeout=2) as r:
                metrics = r.read().decode()
        except OSError as e:
            metrics = str(e)
        check('dlq_archive_shard_info{index="2",count="3"} 1' in metrics, "live: /metrics shows shard 2/3")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{http_port}/api/search?queue=q&q=x", timeout=2)
            status = 200
        except urllib.error.HTTPError as e:
            status = e.code
        except OSError:
            status = None
        check(status == 401, f"live: /api/search without the read token is refused (got {status})")
    finally:
        p.send_signal(signal.SIGTERM)
        try:
            rc = p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            rc = p.wait()
        check(rc == 0, f"live: SIGTERM stops the daemon with exit 0 (got {rc})")
        log.seek(0)
        if failures:
            print("--- daemon log:\n" + log.read()[-3000:])
        shutil.rmtree(tmp, ignore_errors=True)

    if failures:
        print(f"{len(failures)} check(s) failed", file=sys.stderr)
        return 1
    print("all k8s checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
