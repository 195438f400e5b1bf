// bench.h - --bench: the time of a training step at two sizes (bench.c).
#ifndef BENCH17_H
#define BENCH17_H

#include "language.h"

int bench_training(const Lesson *lesson, const Settings *settings, const Data *data);
// What --bench takes (lesson/budget.h): both cases' runs, and every step its rounds time.
Cost bench_cost(const Settings *settings);

#endif
