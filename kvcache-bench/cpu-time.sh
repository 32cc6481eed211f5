# CPU time of a server and of its load generator over a run, for the benchmark scripts (sourced;
# needs /usr/bin/time, Debian package time).

hz=$(getconf CLK_TCK)

# CPU ticks (user and system, all threads) of the given processes and their children
ticks() {
  local t=0 p
  for p in "$@" $(pgrep -d ' ' -P "$(echo "$@" | tr ' ' ,)" || true); do
    t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat")))
  done
  echo "$t"
}

# timed <output file> <warm-up seconds> <server pids> -- <load generator...>: runs the generator,
# its output in the file; sets util: the CPU cores the server and the generator each used on
# average from the end of the warm-up to the end of the run
timed() {
  local gen_out=$1 skip=$2 srv=()
  shift 2
  while [ "$1" != -- ]; do srv+=("$1"); shift; done
  shift
  local t0 g0=0 t1 timer
  t0=$(ticks "${srv[@]}")
  /usr/bin/time -f '%e %U %S' -o "$gen_out.time" "$@" > "$gen_out" 2>&1 &
  timer=$!
  if [ "$skip" -gt 0 ]; then
    sleep "$skip"
    t0=$(ticks "${srv[@]}")
    g0=$(ticks "$timer")
  fi
  wait "$timer" || true
  t1=$(ticks "${srv[@]}")
  util=$(tail -n 1 "$gen_out.time" | awk -v a="$t0" -v b="$t1" -v g="$g0" -v hz="$hz" -v skip="$skip" \
      '{w = $1 - skip; printf "%.4f %.4f", (b - a) / hz / w, ($2 + $3 - g / hz) / w}')
}

# the server's and the generator's CPU microseconds per request, from util and requests per second
cpu_per_request() {
  echo "$util" | awk -v r="$1" '{printf "%.1f %.1f", $1 / r * 1e6, $2 / r * 1e6}'
}
