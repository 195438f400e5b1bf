// error.h - how the helper reports a mistake.
//
// Every operation checks its inputs and, when they are wrong, calls fail()
// with a message that names the operation, what it got and what it
// expected, the way PyTorch does:
//
//     matmul: shapes (6x4) and (3x4) cannot be multiplied
//
// fail() prints "error: <message>" on stderr and exits with status 1 (an
// internal failure: the lesson's code is wrong, not the user's flags; bad
// flags exit 2, see lesson/flags.h). Tests install a handler that records the
// message and jumps back into the test instead of exiting.
#ifndef ERROR_H
#define ERROR_H

typedef void (*FailHandler)(const char *message);

_Noreturn void fail(const char *format, ...)
    __attribute__((format(printf, 1, 2)));

// Tests only: call `handler` instead of exiting. The handler must not return
// (it longjmp()s). Pass NULL to restore the default.
void set_fail_handler(FailHandler handler);

#endif
