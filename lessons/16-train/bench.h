// bench.h - --bench: the time of a training step at two sizes (bench.c).
#ifndef BENCH16_H
#define BENCH16_H

#include "model.h"

int bench_training(const Lesson *lesson, const Settings *settings);
// What --bench takes (lesson/budget.h): both cases' runs, and every step its rounds time.
Cost bench_cost(const Settings *settings);

#endif
