#!/bin/sh
# exp_every_float_14.sh - build and run tools/exp_every_float_14.c: lesson 14's
# exp checked on all 2^32 floats (kernels.h's 0.94 ulp, its 0 below EXP_LO, and
# the vector kernels' bits). About two minutes of one core; not part of make test.
#
#     sh tools/exp_every_float_14.sh            (CC=clang sh ... for clang)
#
# It links the lesson's own kernels.o and common/'s objects, as make builds
# them (build/<compiler>/obj/), so what it checks is what the lesson runs.
set -e
cd "$(dirname "$0")/.."
CC=${CC:-cc}
BUILD=build/$(basename "$CC")
make -s CC="$CC" "$BUILD/lessons/14-attention-backward"
mkdir -p "$BUILD/tools"
"$CC" -std=c11 -Wall -Wextra -Werror -ffp-contract=off -O2 -Icommon \
    -Ilessons/14-attention-backward tools/exp_every_float_14.c \
    "$BUILD/obj/lessons/14-attention-backward/kernels.o" "$BUILD"/obj/common/*/*.o \
    -lm -pthread -o "$BUILD/tools/exp_every_float_14"
exec "$BUILD/tools/exp_every_float_14"
