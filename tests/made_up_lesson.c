// made_up_lesson.c - "lesson-99", a flag of every kind (made_up_lesson.h).
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"
#include "made_up_lesson.h"

int made_up_lesson(int argc, char **argv) {
    int batch = 3, pad = 0, head_mask = -1;
    double drop = 0.0, ratio = 4.0;
    const char *position = "absolute";
    static const char *const positions[] = {"absolute", "relative_key", "relative_key_query",
                                            NULL};
    bool qkv_bias = false;
    SizeFlag sizes[] = {{"--batch", &batch, "batch size"}};
    IntFlag ints[] = {
        {"--pad", &pad, "padding keys", 0, 65536},
        {"--head-mask", &head_mask, "the head to zero, -1 for none", -1, 7},
    };
    ProbabilityFlag probabilities[] = {{"--drop", &drop, "dropout"}};
    FloatFlag floats[] = {{"--ratio", &ratio, "a ratio", 0.0, 64.0}};
    ChoiceFlag choices[] = {{"--position", &position, "position embedding", positions}};
    SwitchFlag switches[] = {
        {"--qkv-bias", &qkv_bias, "a bias in the qkv projection"},
    };
    Lesson lesson = {
        .program = "lesson-99", .summary = "flags: one of every kind",
        .sizes = sizes, .n_sizes = 1, .ints = ints, .n_ints = 2,
        .probabilities = probabilities, .n_probabilities = 1, .floats = floats, .n_floats = 1,
        .choices = choices, .n_choices = 1, .switches = switches, .n_switches = 1,
    };
    parse_lesson_args(&lesson, argc, argv);
    check_fits(&lesson, "x (batch, pad, pad, pad, pad)", shape5(batch, pad, pad, pad, pad));
    if (getenv("LESSON99_NEGATIVE_SIZE") != NULL) {
        check_fits(&lesson, "y (batch * 65536 * 32768)", shape1(INT_MIN));
    }
    lesson_start(&lesson);
    named(getenv("LESSON99_BAD_NAME") != NULL ? "a/b" : "x", zeros(shape1(2)));
    printf("batch=%d pad=%d head_mask=%d drop=%.17g position=%s qkv_bias=%d seed=%llu", batch,
           pad, head_mask, drop, position, qkv_bias, (unsigned long long)lesson.seed);
    if (ratio != 4.0) {   // printed only when given, so the lines above stay as they were
        printf(" ratio=%.17g", ratio);
    }
    if (flag_given(&lesson, "--pad")) {   // either form: --pad 0 or --pad=0
        printf(" pad given");
    }
    printf("\n");
    return lesson_finish(&lesson);
}
