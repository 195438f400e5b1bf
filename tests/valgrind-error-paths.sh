#!/bin/sh
# Every lesson's error paths under valgrind: a refused flag, a --dot refused
# after --dump made its directory, a run over the budget (exit 2), and a
# --dump that cannot be written at the end (fail(), exit 1). Each must end with its status and no
# valgrind error: the arena, the kept dumps and the graph are all freed on
# the way out, and the refused or failed run leaves no files behind.
# usage: tests/valgrind-error-paths.sh "VALGRIND COMMAND" LESSON_BINARY...
valgrind=$1
shift
work=$(mktemp -d /tmp/attn-valgrind-XXXXXX) || exit 1
trap 'rm -rf "$work"' EXIT
status=0

# expect STATUS PROGRAM ARGS...: run it under valgrind, exit status STATUS.
expect() {
    want=$1
    shift
    $valgrind "$@" > /dev/null 2> "$work/log"
    got=$?
    if [ "$got" -ne "$want" ]; then
        echo "valgrind $*: exit $got, expected $want"
        cat "$work/log"
        status=1
    fi
}

for bin in "$@"; do
    echo "valgrind $bin (error paths)"
    expect 2 "$bin" --bogus
    expect 2 "$bin" --dump "$work/made/sub" --dot "$work/made/sub/none/g.dot"
    if [ -e "$work/made" ]; then
        echo "$bin: the refused run left $work/made behind"
        status=1
    fi
    # Refused by the budget (lesson/budget.h), lowered below what any run
    # holds, in a lesson that checks one.
    if ATTN_COST=check "$bin" 2>&1 | grep -q "cost: predicted"; then
        export ATTN_MAX_MIB=0.0001
        expect 2 "$bin" --dump "$work/made"
        unset ATTN_MAX_MIB
        if [ -e "$work/made" ]; then
            echo "$bin: the run refused by the budget made $work/made"
            status=1
        fi
    fi
    # Every size flag at 1, if the lesson takes that (valgrind is slow);
    # a run without valgrind names the dumps. The last of them is made a
    # directory, so the run fails when it comes to write it.
    small=$("$bin" --help | awk '$2 == "N" && $1 != "--seed" { printf "%s 1 ", $1 }')
    # A lesson whose default run is long has a quicker start in VALGRIND_SHORT, one
    # line a lesson ("08-gqa:--seq,64": the lesson directory, then its flags, commas
    # for spaces; the Makefile has test_in_process --quick-starts write it).
    short=$(echo "${VALGRIND_SHORT:-}" | tr ' ' '\n' | sed -n "s|^${bin##*/}:||p" | tr ',' ' ')
    rm -rf "$work/names" "$work/full"
    if ! "$bin" $small --dump "$work/names" > /dev/null 2>&1; then
        small=$short
        rm -rf "$work/names"
        "$bin" $small --dump "$work/names" > /dev/null || status=1
    fi
    last=$(ls "$work/names" | tail -n 1)
    mkdir -p "$work/full/$last"
    expect 1 "$bin" $small --dump "$work/full"
    if [ "$(ls "$work/full")" != "$last" ]; then
        echo "$bin: the failed run left files in $work/full: $(ls "$work/full")"
        status=1
    fi
done
exit $status
