#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan, UBSan; the `fuzz` preset), replays the inputs kept
# in tests/fuzz/regressions, and runs each target for a bounded time on a scratch copy of its
# seed corpus. Seconds per target: $1 or KERNELSCAN_FUZZ_SECONDS (default 20).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
install_missing clang libclang-rt-14-dev
seconds="${1:-${KERNELSCAN_FUZZ_SECONDS:-20}}"
cd "$KERNELSCAN_ROOT"
build_log="$(mktemp)"
if ! { cmake --preset fuzz && cmake --build --preset fuzz -j "$(nproc)"; } >"$build_log" 2>&1; then
  echo "fuzz: the fuzz targets (clang) did not build:"
  grep -E -A8 'error|FAILED' "$build_log" | head -60
  exit 1
fi
rm -f "$build_log"

status=0
for input in tests/fuzz/regressions/*; do
  target="build-fuzz/tests/fuzz/fuzz_$(basename "$input" | cut -d- -f1)"
  if ! "$target" "$input" >/dev/null 2>&1; then
    echo "fuzz: regression $input fails again"
    status=1
  fi
done
for name in job_spec task expression kernel_source import http; do
  work="$(mktemp -d)"
  cp tests/fuzz/corpus/"$name"/* "$work"/
  log="$work.log"
  if (cd "$work" && "$KERNELSCAN_ROOT/build-fuzz/tests/fuzz/fuzz_$name" \
        -max_total_time="$seconds" -print_final_stats=1 -rss_limit_mb=2048 \
        -artifact_prefix="$work/" "$work" >"$log" 2>&1); then
    echo "fuzz: $name: $(grep -o 'number_of_executed_units: [0-9]*' "$log" | cut -d' ' -f2) runs in ${seconds} s, no failure"
  else
    echo "fuzz: $name FAILED; the input that fails is in $work:"
    grep -E "ERROR|SUMMARY|Test unit written" "$log" | head -5
    status=1
  fi
done
exit $status
