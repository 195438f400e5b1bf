// line_width.h - the test that every line a lesson prints fits 100 columns
// (line_width.c), added to test_docs's suite: its runs are the documented
// ones test_docs makes too.
#ifndef LINE_WIDTH_H
#define LINE_WIDTH_H

#include <check.h>

TCase *line_width_tcase(void);

#endif
