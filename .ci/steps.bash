# Steps for .ci/run: each runs in a bash of its own (`-euo pipefail`), is timed, and goes into
# the table printed when the run ends, whether it passed or not (a failed run's table ends at the
# step that failed). A background step runs beside the steps that follow until `finish` waits
# for it; its output is printed then, in one piece.
#
#   step NAME COMMAND          run COMMAND now; stop the run if it fails
#   start NAME COMMAND         run COMMAND in the background
#   finish NAME                wait for a background step; stop the run if it failed

CI_START=$(date +%s)
CI_ROWS=()
CI_LOGS=$(mktemp -d)
declare -A CI_PIDS CI_BEGAN

# m:ss (or h:mm:ss) of a number of seconds.
ci_clock() {
  local s=$1
  if ((s >= 3600)); then
    printf '%d:%02d:%02d' $((s / 3600)) $((s % 3600 / 60)) $((s % 60))
  else
    printf '%d:%02d' $((s / 60)) $((s % 60))
  fi
}

# Record a finished step: name, when it began (seconds since the run started), how long it took
# (until ENDED, in seconds since the epoch, when given; else until now), and its result.
ci_row() {
  local name=$1 began=$2 result=$3 ended=${4:-$(date +%s)}
  CI_ROWS+=("$(printf '%-46s %8s %8s  %s' "$name" "$(ci_clock $((began - CI_START)))" \
    "$(ci_clock $((ended - began)))" "$result")")
}

ci_table() {
  local status=$? name
  # A background step still running when the run stops is stopped with it.
  for name in "${!CI_PIDS[@]}"; do
    kill -- "-${CI_PIDS[$name]}" 2>/dev/null || kill "${CI_PIDS[$name]}" 2>/dev/null || true
    ci_row "$name (background)" "${CI_BEGAN[$name]}" "stopped unfinished"
  done
  echo
  echo "CI steps (wall time; a background step overlaps the steps beside it):"
  printf '%-46s %8s %8s  %s\n' "step" "began" "took" "result"
  printf '%s\n' "${CI_ROWS[@]}"
  printf '%-46s %8s %8s  %s\n' "whole run" "" "$(ci_clock $(($(date +%s) - CI_START)))" \
    "$([ "$status" -eq 0 ] && echo ok || echo "failed (exit $status)")"
  rm -rf "$CI_LOGS"
}
trap ci_table EXIT

step() {
  local name=$1 command=$2 began status=0
  began=$(date +%s)
  echo
  echo "=== $name: $command"
  bash -euo pipefail -c "$command" || status=$?
  if [ "$status" -ne 0 ]; then
    ci_row "$name" "$began" "FAILED (exit $status)"
    exit "$status"
  fi
  ci_row "$name" "$began" ok
}

start() {
  local name=$1 command=$2
  echo
  echo "=== $name (in the background): $command"
  CI_BEGAN[$name]=$(date +%s)
  # A process group of its own, so that stopping the run stops everything it started. It notes
  # when it ended, so that its row shows its own time, not when `finish` got to it.
  setsid bash -c 'status=0; bash -euo pipefail -c "$1" || status=$?; date +%s >"$2"; exit $status' \
    "$name" "$command" "$CI_LOGS/$name.ended" >"$CI_LOGS/$name.log" 2>&1 &
  CI_PIDS[$name]=$!
}

finish() {
  local name=$1 status=0 ended
  wait "${CI_PIDS[$name]}" || status=$?
  unset 'CI_PIDS[$name]'
  echo
  echo "=== $name (ran in the background), its output:"
  cat "$CI_LOGS/$name.log"
  ended=$(cat "$CI_LOGS/$name.ended" 2>/dev/null || date +%s)
  if [ "$status" -ne 0 ]; then
    ci_row "$name (background)" "${CI_BEGAN[$name]}" "FAILED (exit $status)" "$ended"
    exit "$status"
  fi
  ci_row "$name (background)" "${CI_BEGAN[$name]}" ok "$ended"
}
