#!/bin/sh
# Run each test program (one check Suite each), then add up check's summary
# lines ("100%: Checks: 12, Failures: 0, Errors: 0") into one closing line.
# Exits non-zero if any program failed.
status=0
passed=0
failed=0
for program in "$@"; do
    echo "---- $program"
    output=$("$program" 2>&1)
    code=$?
    printf '%s\n' "$output"
    summary=$(printf '%s\n' "$output" | grep -E '^[0-9]+%: Checks: ' | tail -n 1)
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
echo "checks: $passed passed, $failed failed"
exit $status
