#!/bin/sh
# tests/exercises.sh BUILD PROGRAM...: the write-it exercises' checker
# (tools/exercise.c, make exercise-N) against answers whose verdict is known. Each
# PROGRAM is a lesson built with one file in place of the lesson's function
# (BUILD/exercise/bin/<the file's path, without .c>, the Makefile's "the
# exercises"); the file says what the checker must answer:
#   BUILD/exercise/answers/NN-answer.c   the page's answer (docs/NN-name.md, folded
#                                        under Exercises): "exercise N: right", exit 0
#   tests/exercises/NN-start.c           a copy of the untouched exercises/NN-name.c:
#                                        exit 1, naming the starting file (the
#                                        checker says so when the reader's file is
#                                        this copy, byte for byte: keep the two the same)
#   tests/exercises/NN-mistake.c         a planted mistake (any other name): exit 1,
#                                        and the text of its "// expect: " line (its
#                                        hint; lines the checker broke are joined first)
# The reader's own exercises/ files are never used. Prints one line per program
# that fails (with the checker's whole answer) and a count; exits 1 if any failed.
build=$1
shift
failed=0
passed=0
for program in "$@"; do
    source=${program#"$build/exercise/bin/"}.c
    name=$(basename "$source" .c)
    number=$(expr "${name%%-*}" + 0)
    lesson=$(ls -d "$build/lessons/$(printf %02d "$number")"-* 2>/dev/null | head -n 1)
    case $name in
        ([0-9][0-9]-answer) want=0; expect="exercise $number: right" ;;
        ([0-9][0-9]-start) want=1; expect="the starting file" ;;
        (*) want=1; expect=$(sed -n 's|^// expect: ||p' "$source") ;;
    esac
    answer=$("$build/tools/exercise" "$number" "$lesson" "$program" "$source" "$program.log")
    status=$?
    if [ "$status" -eq "$want" ] && [ -n "$expect" ] &&
       printf '%s\n' "$answer" | tr -s ' \n' '  ' | grep -F -q -e "$expect"; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        echo "FAIL $source: wanted exit $want and \"$expect\"; the checker exited $status:"
        printf '%s\n' "$answer" | sed 's/^/    /'
    fi
done
echo "exercises: $passed checked, $failed failed"
[ "$failed" -eq 0 ]
