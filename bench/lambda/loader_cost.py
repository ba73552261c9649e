#!/usr/bin/env python3
"""Where the Lambda cold start goes: the dynamic loader, measured by control.

Builds three do-nothing C++ programs and measures the CPU time (user + system,
from wait4) of each, RUNS times, beside the packaged bootstrap's:

  static-libstdc++   links nothing but libc (the floor of a process start)
  libs-without-curl  links dlq-archive's direct libraries except libcurl
                     (OpenSSL, zlib, fmt, simdjson, pugixml, yaml-cpp,
                     cpp-httplib, libdeflate, libstdc++)
  libs-with-curl     the same plus libcurl, which brings its whole tree
                     (GnuTLS, Kerberos, LDAP, RTMP, SSH, PSL, IDN, nghttp2, ...)
  libs-shared-now    what dlq-archive-lambda still loads as shared libraries
                     (simdjson, ISA-L, libstdc++; everything else is linked in)
  bootstrap          the unpacked Lambda zip, up to its first /next (answered 410)

A do-nothing program that pays as much as the bootstrap shows the time is the
loader's (mapping and relocating the libraries), not dlq-archive's own start.

Usage: bench/lambda/loader_cost.py UNPACKED_ZIP_DIR [RUNS]   (prints JSON)
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cold_start  # noqa: E402

PROGRAM = "#include <string>\nint main(int argc, char**) { std::string s(argc, 'x'); return s.size() > 99; }\n"
LIBS = ["-lssl", "-lcrypto", "-lz", "-lfmt", "-lsimdjson", "-lpugixml", "-lyaml-cpp", "-lcpp-httplib", "-ldeflate"]


def cpu_ms(cmd, runs):
    out = []
    for _ in range(runs):
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, _, usage = os.wait4(p.pid, 0)
        out.append((usage.ru_utime + usage.ru_stime) * 1000)
    return round(statistics.median(out), 2)


def libraries(binary):
    out = subprocess.run(["ldd", binary], capture_output=True, text=True).stdout
    return sum(1 for line in out.splitlines() if "=>" in line or "ld-linux" in line)


def main():
    unpacked = sys.argv[1]
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    tmp = tempfile.mkdtemp()
    src = os.path.join(tmp, "p.cc")
    with open(src, "w") as f:
        f.write(PROGRAM)
    variants = {
        "static-libstdc++": ["-static-libstdc++", "-static-libgcc"],
        "libs-without-curl": ["-Wl,--no-as-needed"] + LIBS,
        "libs-with-curl": ["-Wl,--no-as-needed", "-lcurl"] + LIBS,
        "libs-shared-now": ["-Wl,--no-as-needed", "-lsimdjson", "-lisal"],
    }
    result = {}
    for name, flags in variants.items():
        exe = os.path.join(tmp, name)
        subprocess.run(["g++", "-O2", src, "-o", exe] + flags, check=True)
        result[name] = {"libraries": libraries(exe), "cpu_median_ms": cpu_ms([exe], runs)}
    boot = cold_start.measure(["./bootstrap"], unpacked, {
        "PATH": "/usr/bin:/bin", "AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "y",
        "DLQ_ARCHIVE_DESTINATION": "s3://bench-bucket/p", "DLQ_ARCHIVE_QUEUES": "a-dlq",
        "AWS_LAMBDA_FUNCTION_NAME": "dlq-archive", "LAMBDA_TASK_ROOT": os.path.abspath(unpacked)}, runs)
    result["bootstrap"] = {"libraries": len(os.listdir(os.path.join(unpacked, "lib"))),
                           "cpu_median_ms": boot["cpu_median_ms"], "wall_median_ms": boot["median_ms"]}
    result["runs"] = runs
    result["load_average"] = os.getloadavg()
    result["cpus"] = os.cpu_count()
    result["scheduler"] = cold_start.scheduler()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
