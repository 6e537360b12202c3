#!/usr/bin/env bash
# Run tcopy's checks against one torch release in a fresh virtualenv.
#
#   scripts/torch-compat.sh VERSION       e.g. 2.1.2, 2.4.1, 2.7.1
#
# Makes a venv with that torch (and a numpy it was built against), installs tcopy with
# its test extras, then runs the test suite, every shipped example and `tcopy compare`,
# and prints one summary line per check. The venv lives under $TCOPY_COMPAT_DIR
# (default /tmp/tcopy-compat) and is deleted at the end unless KEEP_VENV=1, since each
# torch build is a few GB. Logs stay in that directory.
#
# Environment: PYTEST_WORKERS (default 2; 0 runs the suite without pytest-xdist),
# PYTEST_ARGS (more pytest arguments, e.g. test paths to run part of the suite),
# PYTHON (the interpreter to build the venv from, default python3),
# KEEP_VENV=1 (keep the venv; a kept venv with the right torch is reused next time).
set -uo pipefail

if [[ $# -ne 1 || $1 == -h || $1 == --help ]]; then
  sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
version=$1
repo=$(cd "$(dirname "$0")/.." && pwd)
dir=${TCOPY_COMPAT_DIR:-/tmp/tcopy-compat}
venv=$dir/torch-$version
logs=$dir/logs-$version
workers=${PYTEST_WORKERS:-2}
mkdir -p "$dir" "$logs"

# NumPy 2 changed its C ABI; torch wheels before 2.3 were built against NumPy 1.
numpy_spec="numpy"
if [[ $(printf '%s\n' "$version" 2.3 | sort -V | head -1) != 2.3 ]]; then
  numpy_spec="numpy<2"
fi

py=$venv/bin/python
if [[ -x $py ]] && [[ $("$py" -c 'import torch; print(torch.__version__.split("+")[0])' 2>/dev/null) == "$version" ]]; then
  echo "== reusing $venv"
else
  echo "== creating $venv (torch==$version, $numpy_spec)"
  rm -rf "$venv"
  "${PYTHON:-python3}" -m venv "$venv" || exit 1
  "$venv/bin/pip" install -q "torch==$version" "$numpy_spec" >"$logs/install-torch.log" 2>&1 || {
    echo "installing torch==$version failed: see $logs/install-torch.log"
    exit 1
  }
fi
# tcopy itself, with the test extras and pytest-xdist; pinning torch and numpy keeps
# pip from upgrading them to satisfy anything else.
"$venv/bin/pip" install -q "$repo[test]" pytest-xdist "torch==$version" "$numpy_spec" \
  >"$logs/install-tcopy.log" 2>&1 || {
  echo "installing tcopy failed: see $logs/install-tcopy.log"
  exit 1
}
tcopy=$venv/bin/tcopy
actual=$("$py" -c 'import torch, numpy; print(torch.__version__, "numpy", numpy.__version__)')
echo "== torch $actual"

failures=0
summary=()

# 1. The test suite, from the source tree (it is the code just installed; tests read
#    the shipped examples from it).
xdist=()
[[ $workers != 0 ]] && xdist=(-n "$workers")
echo "== test suite (log: $logs/pytest.log)"
# shellcheck disable=SC2086  # PYTEST_ARGS is a list of words on purpose
(cd "$repo" && "$py" -m pytest -q -p no:cacheprovider "${xdist[@]}" ${PYTEST_ARGS:-} >"$logs/pytest.log" 2>&1)
rc=$?
line=$(grep -E '^(=+ )?[0-9]+ (passed|failed|error)|^=+ .*(passed|failed|error).* =+$' "$logs/pytest.log" | tail -1)
summary+=("tests: rc=$rc ${line:-no summary line (crashed?)}")
while read -r failed; do summary+=("  $failed"); done < <(grep -E '^(FAILED|ERROR) ' "$logs/pytest.log" | cut -c1-160)
[[ $rc -ne 0 ]] && failures=$((failures + 1))

# A run "crashes" when it dies of a signal (rc > 128), prints a Python traceback or
# reports an internal error. An example may end in an error step on purpose (exit 1).
check_output() {  # name rc logfile
  local name=$1 rc=$2 log=$3
  if ((rc > 128)); then
    echo "crash (signal $((rc - 128)))"
  elif grep -q -E 'Traceback \(most recent call last\)|internal error' "$log"; then
    echo "internal error"
  elif ((rc > 1)); then
    echo "exit $rc"
  else
    echo "ok"
  fi
}

# 2. Every shipped example, as a table and as JSON.
mapfile -t examples < <(cd /tmp && "$tcopy" examples --format json 2>/dev/null \
  | "$py" -c 'import json,sys; [print(json.loads(l)["name"]) for l in sys.stdin if l.strip()]' 2>/dev/null)
if [[ ${#examples[@]} -eq 0 ]]; then
  mapfile -t examples < <(cd /tmp && NO_COLOR=1 "$tcopy" examples --width 200 2>/dev/null \
    | awk 'NR > 1 && NF && $1 !~ /^(name|Run)$/ {print $1}')
fi
ok=0
bad=()
for name in "${examples[@]}"; do
  result=ok
  for fmt in table json; do
    log=$logs/example-$name-$fmt.log
    (cd /tmp && NO_COLOR=1 "$tcopy" run --example "$name" --format "$fmt" --width 120 >"$log" 2>&1)
    r=$(check_output "$name" $? "$log")
    [[ $r != ok ]] && result="$r ($fmt)"
  done
  if [[ $result == ok ]]; then ok=$((ok + 1)); else bad+=("$name: $result"); fi
done
summary+=("examples: $ok/${#examples[@]} ok${bad:+ — ${bad[*]}}")
[[ ${#bad[@]} -ne 0 || ${#examples[@]} -eq 0 ]] && failures=$((failures + 1))

# 3. tcopy compare, both sources and both output forms.
ok=0
bad=()
runs=0
for source in leaf nonleaf; do
  for fmt in table json; do
    runs=$((runs + 1))
    log=$logs/compare-$source-$fmt.log
    (cd /tmp && NO_COLOR=1 "$tcopy" compare --source "$source" --format "$fmt" --width 160 >"$log" 2>&1)
    rc=$?
    r=$(check_output compare $rc "$log")
    [[ $r == ok && $rc -ne 0 ]] && r="exit $rc"
    if [[ $r == ok ]]; then ok=$((ok + 1)); else bad+=("$source/$fmt: $r"); fi
  done
done
summary+=("compare: $ok/$runs ok${bad:+ — ${bad[*]}}")
[[ ${#bad[@]} -ne 0 ]] && failures=$((failures + 1))

# 4. What this release can't measure (tcopy says so in its output too).
degraded=$(cd /tmp && "$py" -c 'from tcopy_cli.trace import compat; print("; ".join(compat.degraded()) or "none")' 2>&1)
summary+=("degraded facts: $degraded")

echo
echo "== torch $actual: summary"
printf '  %s\n' "${summary[@]}"

if [[ ${KEEP_VENV:-0} != 1 ]]; then
  rm -rf "$venv"
  echo "(removed $venv; logs in $logs)"
fi
exit $((failures > 0))
