// error.c - fail(): format the message, then exit (or hand it to a test).
#include "core/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static FailHandler handler = NULL;

void set_fail_handler(FailHandler new_handler) {
    handler = new_handler;
}

_Noreturn void fail(const char *format, ...) {
    char message[512];
    va_list args;
    va_start(args, format);
    vsnprintf(message, sizeof message, format, args);
    va_end(args);

    if (handler != NULL) {
        handler(message);   // a test's handler longjmp()s and never returns
    }
    fflush(stdout);         // keep the lesson's output before the error
    fprintf(stderr, "error: %s\n", message);
    exit(1);
}
