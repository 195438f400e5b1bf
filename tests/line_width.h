// line_width.h - the test that every line a lesson prints fits 100 columns
// (line_width.c), added to test_docs's suite: its runs are the documented
// ones test_docs makes too.
#ifndef LINE_WIDTH_H
#define LINE_WIDTH_H

#include <check.h>

#include "harness.h"

TCase *line_width_tcase(void);

// A lesson's default run with --dot, drawing into a directory this process
// makes once and removes at exit; *drawing is the file drawn. Made once
// (run_program_once): test_docs compares the drawing with the committed
// diagram and checks what the run prints, and the line width test reads the
// same run.
RunResult default_run_drawn(const char *dir, const char **drawing);
// Plan that run, and every run the line width test makes (harness.h: plan_run_once), to
// make them all at once.
void plan_default_run_drawn(const char *dir);
void plan_line_width_runs(void);

// Every line of the run's stdout and stderr fits 100 columns (but a bench's
// machine-readable "bench " lines); `what` names the run in the failure. For a lesson's
// own test, of a short run of its bench (the documented ones take a minute).
void assert_lines_fit(const char *what, RunResult run);

#endif
