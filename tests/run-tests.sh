#!/bin/sh
# Run the test programs (one check Suite each), JOBS of them at a time
# (default: the number of CPUs), print each program's output whole and in
# the order given, then add up check's summary lines ("100%: Checks: 12,
# Failures: 0, Errors: 0") and the checks that skipped something
# (tests/harness.h: skip_test) into one closing line:
#     checks: 560 passed, 0 failed, 3 skipped
# A program that took more than a second says how long on its first line
# ("---- build/cc/tests/test_docs (9.8 s)"), so the next slow one is seen
# when it comes. Exits non-zero if any program failed.
#
# Stopped by SIGINT, SIGTERM or SIGHUP (Ctrl-C, kill, a closed terminal),
# it stops every program it started and whatever they started (check's
# forks, the lessons they run), removes its logs, and dies of the same
# signal, so that make or the shell sees why it ended.
#
#   JOBS=1 sh tests/run-tests.sh build/cc/tests/test_*    one at a time
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
logs=$(mktemp -d "${TMPDIR:-/tmp}/attn-tests-XXXXXX") || exit 1
trap 'rm -rf "$logs"' EXIT
# Each program, when it has ended, writes its number on this FIFO: the loop below
# waits there (held open to read and write, so that a read waits for a line and
# never meets the end of the file) rather than polling, which took a process a look.
mkfifo "$logs/ended" || exit 1
exec 3<> "$logs/ended"

# Stopped by signal $1 (number $2): the programs too, if they have started.
job=
stop() {
    trap - EXIT HUP INT TERM
    group=$(cat "$logs/group" 2>/dev/null)
    if [ -n "$job" ]; then
        { [ -n "$group" ] && kill -TERM -"$group"; } 2>/dev/null || kill -TERM "$job" 2>/dev/null
        wait "$job" 2>/dev/null   # (dash would say "Terminated")
    fi
    rm -rf "$logs"
    kill -"$1" $$
    exit $((128 + $2))   # if $1 came while ignored (a background job's SIGINT)
}
trap 'stop HUP 1' HUP
trap 'stop INT 2' INT
trap 'stop TERM 15' TERM

# Program i, run by xargs below: its output goes to $logs/i.out and, once it
# has ended, "<exit status> <start> <end>" to $logs/i.status (the times in
# nanoseconds; in whole seconds where date has no %N), then i to the FIFO.
run_one='now() {
    t=$(date +%s%N)
    case $t in *[!0-9]*) t=$(date +%s)000000000 ;; esac
    echo "$t"
}
start=$(now)
"$2" > "$0/$1.out" 2>&1
code=$?
echo "$code $start $(now)" > "$0/$1.status.tmp"
mv "$0/$1.status.tmp" "$0/$1.status"
echo "$1" > "$0/ended"'

# Start them all: xargs keeps `jobs` running. They run in a process group of
# their own (setsid, or perl's setpgrp where there is no setsid), whose
# number goes to $logs/group: one kill then reaches all of them and what they
# started, and nothing else. (Where neither exists, a signal stops xargs and
# no more programs start, but the running ones finish on their own.) A signal
# cannot be passed on as it came: programs started in the background like
# these have SIGINT ignored, so they are sent SIGTERM.
i=0
for program in "$@"; do
    i=$((i + 1))
    printf '%s %s\n' "$i" "$program"
done > "$logs/list"
in_own_group() {
    if command -v setsid > /dev/null 2>&1; then
        exec setsid "$@"
    elif command -v perl > /dev/null 2>&1; then
        exec perl -e 'setpgrp(0, 0); exec { $ARGV[0] } @ARGV or die "$ARGV[0]: $!\n"' "$@"
    fi
    exec "$@"
}
(in_own_group sh -c 'echo $$ > "$0/group"; exec xargs -P "$1" -L 1 sh -c "$2" "$0" < "$0/list"' \
    "$logs" "$jobs" "$run_one") &
job=$!

# Show them in order, each as soon as it and those before it have ended.
status=0
passed=0
failed=0
skipped=0
i=0
for program in "$@"; do
    i=$((i + 1))
    while [ ! -f "$logs/$i.status" ]; do
        read -r ended <&3 || sleep 1   # a program has ended (this one, or a later one)
    done
    read -r code start end < "$logs/$i.status"
    tenths=$(((end - start + 50000000) / 100000000))
    if [ "$tenths" -gt 10 ]; then
        echo "---- $program ($((tenths / 10)).$((tenths % 10)) s)"
    else
        echo "---- $program"
    fi
    cat "$logs/$i.out"
    # One awk a program: its last summary line's checks, failures + errors, and its skips
    # (each also noted, with the program's name, in $logs/skipped); "-" without a summary.
    set -- $(awk -v name="${program##*/}" -v noted="$logs/skipped" '
        /^[0-9]+%: Checks: / { checks = $3 + 0; bad = $5 + $7; summary = 1 }
        /^SKIPPED / { skips += 1; print name ": " $0 >> noted }
        END { if (summary) print checks, bad, skips + 0; else print "-" }' "$logs/$i.out")
    if [ "$1" = "-" ]; then
        echo "$program: no check summary (exit $code)"
        failed=$((failed + 1))
        status=1
        continue
    fi
    checks=$1 bad=$2 skips=$3
    good=$((checks - bad - skips))
    passed=$((passed + (good > 0 ? good : 0)))
    failed=$((failed + bad))
    skipped=$((skipped + skips))
    [ "$code" -eq 0 ] || status=1
done
wait
if [ -s "$logs/skipped" ]; then   # each skip once, with how many checks made it
    echo "----"
    awk '$0 != last { if (NR > 1) print last (n > 1 ? " (" n " checks)" : ""); last = $0; n = 0 }
         { n += 1 }
         END { print last (n > 1 ? " (" n " checks)" : "") }' "$logs/skipped"
fi
echo "checks: $passed passed, $failed failed, $skipped skipped"
exit $status
