// lesson_table.c - LESSONS, every lesson's main() (tests/harness.h), from the list
// make writes of lessons/ (lessons.h in the build's entry/ directory: one line
// LESSON(symbol, "NN-name") a lesson). Each lesson is linked in as one object whose
// names are all its own but its main, renamed lesson_main_<symbol> (the Makefile).
#include <string.h>

#include "harness.h"

#define LESSON(symbol, dir) int lesson_main_##symbol(int argc, char **argv);
#include "lessons.h"
#undef LESSON

#define LESSON(symbol, dir) {dir, lesson_main_##symbol},
const LessonEntry LESSONS[] = {
#include "lessons.h"
};
#undef LESSON

const int N_LESSONS = (int)(sizeof LESSONS / sizeof LESSONS[0]);

const LessonEntry *lesson_entry(const char *dir) {
    for (int i = 0; i < N_LESSONS; i++) {
        if (strcmp(LESSONS[i].dir, dir) == 0) {
            return &LESSONS[i];
        }
    }
    ck_abort_msg("no lesson %s in this build's table (make writes it from lessons/)", dir);
}
