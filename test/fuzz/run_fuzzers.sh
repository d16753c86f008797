#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan, -Dfuzzing=true) in their
# own build directory -- only the targets and the libraries they link, not the
# whole project -- then runs each over its corpus (test/fuzz/corpus/<target>)
# for a bounded time. Fails on any crash, sanitizer report, timeout or OOM; the
# offending input is left in $FUZZ_ARTIFACTS (default build-fuzz/artifacts).
#
#   FUZZ_SECONDS   total fuzzing time, split evenly over the targets (default 60)
#   FUZZ_BUILD_DIR build directory (default build-fuzz)
#   FUZZ_TARGETS   space-separated subset (default: all)
#   FUZZ_JOBS      ninja parallelism (default: nproc)
#   FUZZ_SEED      libFuzzer's -seed (default 0: a new random seed each run,
#                  for campaigns that look for new bugs). CI sets a fixed one
#                  so that one commit always meets the same inputs: a red CI
#                  run is then reproducible, and new findings come from the
#                  campaigns, not from a CI run's luck.
#
# Regression inputs (crashes found and fixed) live in the corpus too, so every
# run replays them first. New inputs found during a run go to a scratch copy,
# never into the source tree.
set -euo pipefail
cd "$(dirname "$0")/../.."

ALL_TARGETS="native_trace mooncake_trace bailian_trace agentic_mooncake_trace kvcache_trace ops_script sched_script scenario_yaml workload_yaml profile_json calibration_samples steps_file observed_run step_model"
TARGETS=${FUZZ_TARGETS:-$ALL_TARGETS}
BUILD_DIR=${FUZZ_BUILD_DIR:-build-fuzz}
TOTAL=${FUZZ_SECONDS:-60}
JOBS=${FUZZ_JOBS:-$(nproc)}
SEED=${FUZZ_SEED:-0}
ART=${FUZZ_ARTIFACTS:-$BUILD_DIR/artifacts}

if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  CC=clang CXX=clang++ meson setup "$BUILD_DIR" --buildtype=debugoptimized \
    -Db_sanitize=address,undefined -Db_lundef=false -Dcuda=disabled -Dtests=disabled -Dfuzzing=true
fi
ninja -C "$BUILD_DIR" -j "$JOBS" $(for t in $TARGETS; do echo "test/fuzz/fuzz_$t"; done)

n=$(echo "$TARGETS" | wc -w)
per=$(( TOTAL / n )); [ "$per" -ge 1 ] || per=1
mkdir -p "$ART"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
failed=()
for t in $TARGETS; do
  mkdir -p "$scratch/$t" "test/fuzz/corpus/$t"
  echo "fuzz: $t for ${per}s (seed $SEED) over test/fuzz/corpus/$t ($(ls "test/fuzz/corpus/$t" | wc -l) inputs)" >&2
  # -rss_limit_mb / -malloc_limit_mb: an input that makes a parser allocate
  # gigabytes is a finding; -timeout: so is one that hangs.
  if ! TMPDIR="$scratch" "$BUILD_DIR/test/fuzz/fuzz_$t" -seed="$SEED" -max_total_time="$per" -timeout=10 \
      -rss_limit_mb=2048 -malloc_limit_mb=1024 -max_len=16384 -print_final_stats=1 \
      -artifact_prefix="$ART/$t-" "$scratch/$t" "test/fuzz/corpus/$t" > "$scratch/$t.log" 2>&1; then
    tail -n 60 "$scratch/$t.log" >&2
    echo "fuzz: $t FAILED (input in $ART/$t-*)" >&2
    failed+=("$t")
  else
    grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$scratch/$t.log" | tr '\n' ' ' >&2; echo >&2
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: failures in: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: all $n targets ran ${per}s each without a finding" >&2
