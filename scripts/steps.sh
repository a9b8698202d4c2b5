# How the setup scripts say what they do (sourced, not run): each step is announced with
# what it does, runs with its output in a log, shows its elapsed time while it runs (and,
# for a cargo build, the crate it is compiling), and ends with its time or, on failure, the
# log's last lines. Nobody should have to wonder whether a command hung.
#
#   STEP_NAME=setup; . scripts/steps.sh
#   say "something worth a line"
#   run_step "what it does" LOG COMMAND...      (returns the command's status)
#   start_step "what it does" LOG COMMAND...    (in the background; then wait_steps)
#   wait_steps                                  (reports each as it ends; fails if any did)
#
# Everything goes to stderr: a script's stdout stays for what callers read from it.

STEP_NAME=${STEP_NAME:-setup}
# seconds between "still running" lines; a terminal gets one line rewritten every second
STEP_TICK=${STEP_TICK:-15}
STEP_TTY=0
[ -t 2 ] && STEP_TTY=1

say() { echo "$STEP_NAME: $*" >&2; }

# elapsed SECONDS -> "42s" or "3m05s"
_elapsed() { if [ "$1" -ge 60 ]; then printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); else printf '%ds' "$1"; fi; }

# What a running step's log says it is doing: cargo's "Compiling <crate>" lines, counted.
_progress() {
  local n last
  n=$(grep -c '^ *Compiling ' "$1" 2>/dev/null) || n=0
  [ "$n" -gt 0 ] || return 0
  last=$(grep '^ *Compiling ' "$1" | tail -n 1 | awk '{print $2}')
  printf ', %d crates compiled, now %s' "$n" "$last"
}

# Names, logs, pids and start times of the steps running in the background.
_STEP_LABELS=() _STEP_LOGS=() _STEP_PIDS=() _STEP_STARTS=()

start_step() {
  local label=$1 log=$2
  shift 2
  mkdir -p "$(dirname "$log")"
  say "$label ..."
  "$@" >"$log" 2>&1 </dev/null &
  _STEP_LABELS+=("$label") _STEP_LOGS+=("$log") _STEP_PIDS+=("$!") _STEP_STARTS+=("$SECONDS")
}

# Waits for every background step, saying "still running" every STEP_TICK seconds and each
# result as it comes; returns 1 if any failed (after showing its log's tail).
wait_steps() {
  local failed=0 last=$SECONDS i pid status running
  local -a done_=()
  while :; do
    running=()
    for i in "${!_STEP_PIDS[@]}"; do
      [ -n "${done_[$i]:-}" ] && continue
      pid=${_STEP_PIDS[$i]}
      if kill -0 "$pid" 2>/dev/null; then
        # a step's label up to its parenthesis: "building the compiled core 1m15s, 21 crates compiled, now regex"
        running+=("${_STEP_LABELS[$i]%% (*} $(_elapsed $((SECONDS - _STEP_STARTS[i])))$(_progress "${_STEP_LOGS[$i]}")")
        continue
      fi
      done_[$i]=1
      status=0
      wait "$pid" || status=$?
      [ "$STEP_TTY" = 1 ] && printf '\r\033[K' >&2
      if [ "$status" -eq 0 ]; then
        say "${_STEP_LABELS[$i]}: done in $(_elapsed $((SECONDS - _STEP_STARTS[i])))"
      else
        failed=1
        tail -n 40 "${_STEP_LOGS[$i]}" >&2
        say "${_STEP_LABELS[$i]}: FAILED (exit $status) after $(_elapsed $((SECONDS - _STEP_STARTS[i])));" \
            "full log: ${_STEP_LOGS[$i]}"
      fi
    done
    [ "${#running[@]}" -eq 0 ] && break
    if [ "$STEP_TTY" = 1 ]; then
      local line
      line=$(printf '%s; ' "${running[@]}")
      line=${line%; }
      printf '\r\033[K%s:   ... %s' "$STEP_NAME" "${line:0:$((${COLUMNS:-100} - ${#STEP_NAME} - 8))}" >&2
    elif [ $((SECONDS - last)) -ge "$STEP_TICK" ]; then
      last=$SECONDS
      for i in "${running[@]}"; do say "  ... $i"; done
    fi
    sleep 1
  done
  _STEP_LABELS=() _STEP_LOGS=() _STEP_PIDS=() _STEP_STARTS=()
  return "$failed"
}

run_step() {
  start_step "$@"
  wait_steps
}
