// bench.c - --bench: milliseconds per training step, at the lesson's sizes and a larger one.
#define _POSIX_C_SOURCE 200809L
#include "bench.h"

#include <stdio.h>

int bench_training(const Lesson *lesson, const Settings *settings) {
    (void)lesson;
    (void)settings;
    printf("bench: not written yet\n");
    return 0;
}
