#!/usr/bin/env bash
# Runs each libFuzzer target for SECONDS on a copy of its seed corpus (tests/fuzz/corpus/<target>/,
# never written to) and fails on any crash, sanitizer report, check failure, timeout or leak.
# Before that, each target runs its seeds with LIG_FUZZ_PERTURB=1 (one output changed after
# every successful call) and must fail: its checks can catch a wrong result.
#
#   tests/fuzz/run_fuzz.sh BUILD_DIR SECONDS TARGET...
# Prints per target: executions per second and libFuzzer's final coverage (cov: edges, ft: features).
set -uo pipefail
build=$1
seconds=$2
shift 2
src="$(cd "$(dirname "$0")" && pwd)"
work="$build/fuzz-work"
status=0
for t in "$@"; do
    bin="$build/tests/fuzz/$t"
    corpus="$work/$t/corpus"
    rm -rf "$work/$t"
    mkdir -p "$corpus" "$work/$t/artifacts"
    cp "$src/corpus/$t/"* "$corpus/"

    if LIG_FUZZ_PERTURB=1 "$bin" -runs=0 -artifact_prefix="$work/$t/perturbed-" "$corpus" \
        >"$work/$t/perturb.log" 2>&1; then
        echo "test-fuzz: $t: FAILED: a perturbed output went unnoticed on its seeds ($work/$t/perturb.log)"
        status=1
        continue
    fi

    log="$work/$t/fuzz.log"
    LIG_FUZZ_STATS=1 "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$work/$t/artifacts/" "$corpus" >"$log" 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    cov=$(grep -o 'cov: [0-9]* ft: [0-9]*' "$log" | tail -1)
    outcome=$(grep '^lig fuzz: [0-9]' "$log" | sed 's/^lig fuzz: //' | tr '\n' ' ')
    if [ $rc -ne 0 ]; then
        echo "test-fuzz: $t: FAILED (exit $rc) after ${runs:-?} executions; the end of $log:"
        grep -E 'FAILED|ERROR|runtime error|SUMMARY|Test unit written' "$log" | head -20
        artifact=$(ls "$work/$t/artifacts/" 2>/dev/null | head -1)
        [ -n "$artifact" ] && echo "  reproduce: $bin $work/$t/artifacts/$artifact  (LIG_FUZZ_TRACE=1 shows the call)"
        status=1
    else
        echo "test-fuzz: $t: ok, ${seconds} s: ${runs} executions, ${execs} exec/s, final ${cov}; ${outcome}"
    fi
done
exit $status
