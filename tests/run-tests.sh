#!/bin/sh
# Run the test programs (one check Suite each), JOBS of them at a time
# (default: the number of CPUs), print each program's output whole and in
# the order given, then add up check's summary lines ("100%: Checks: 12,
# Failures: 0, Errors: 0") into one closing line. Exits non-zero if any
# program failed.
#
#   JOBS=1 sh tests/run-tests.sh build/cc/tests/test_*    one at a time
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
logs=$(mktemp -d "${TMPDIR:-/tmp}/attn-tests-XXXXXX") || exit 1
trap 'rm -rf "$logs"' EXIT INT TERM

# Start them all: xargs keeps `jobs` running. Program i writes its output to
# $logs/i.out, and its exit status, once it has ended, to $logs/i.status.
i=0
for program in "$@"; do
    i=$((i + 1))
    printf '%s %s\n' "$i" "$program"
done | xargs -P "$jobs" -L 1 sh -c '"$2" > "$0/$1.out" 2>&1; echo $? > "$0/$1.status.tmp"; \
                                    mv "$0/$1.status.tmp" "$0/$1.status"' "$logs" &

# Show them in order, each as soon as it and those before it have ended.
status=0
passed=0
failed=0
i=0
for program in "$@"; do
    i=$((i + 1))
    while [ ! -f "$logs/$i.status" ]; do
        sleep 0.05 2>/dev/null || sleep 1
    done
    code=$(cat "$logs/$i.status")
    echo "---- $program"
    cat "$logs/$i.out"
    summary=$(grep -E '^[0-9]+%: Checks: ' "$logs/$i.out" | tail -n 1)
    if [ -z "$summary" ]; then
        echo "$program: no check summary (exit $code)"
        failed=$((failed + 1))
        status=1
        continue
    fi
    checks=$(printf '%s' "$summary" | sed -E 's/.*Checks: ([0-9]+).*/\1/')
    bad=$(printf '%s' "$summary" | sed -E 's/.*Failures: ([0-9]+), Errors: ([0-9]+).*/\1 + \2/')
    bad=$(($bad))
    passed=$((passed + checks - bad))
    failed=$((failed + bad))
    [ "$code" -eq 0 ] || status=1
done
wait
echo "checks: $passed passed, $failed failed"
exit $status
