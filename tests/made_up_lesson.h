// made_up_lesson.h - a small made-up lesson, "lesson-99", with a flag of every kind
// common/lesson/flags.c reads (a size, whole numbers with their own range, a
// probability, a decimal number, a word from a list, a switch), which no lesson has
// all of: test_flags checks each kind on it, test_fuzz_cli fuzzes it with the lessons.
#ifndef MADE_UP_LESSON_H
#define MADE_UP_LESSON_H

// Its main(): it reads its flags, starts, names one tensor and prints what it parsed:
//     batch=3 pad=0 head_mask=-1 drop=0 position=absolute qkv_bias=0 seed=0
// (then " ratio=R" when --ratio is given, " pad given" when --pad is). Two environment
// variables make it commit a lesson's own mistakes: LESSON99_NEGATIVE_SIZE (a size that
// overflowed an int reaches check_fits) and LESSON99_BAD_NAME (a tensor named "a/b",
// which --dump cannot write).
int made_up_lesson(int argc, char **argv);

#endif
