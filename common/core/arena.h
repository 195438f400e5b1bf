// arena.h - the one ownership rule for memory in this codebase.
//
// Every tensor, every shape string and every printed tensor text that the
// helper hands out lives in ONE program-wide arena. Nothing is freed one by
// one: a lesson calls lesson_finish() (which calls arena_free_all()) at the
// end of main, and everything goes at once. valgrind then reports no leaks.
//
// A loop that makes many temporary tensors (the KV-cache benchmark, say)
// brackets its body with a mark and a release:
//
//     size_t mark = arena_mark();
//     ... tensors made here ...
//     arena_release(mark);        // frees everything allocated since mark
//
// Each allocation is its own malloc() so AddressSanitizer and valgrind see
// the exact bounds of every tensor.
#ifndef ARENA_H
#define ARENA_H

#include <stddef.h>

// Zeroed memory for `count` items of `item_size` bytes. Fails (exit 1) with
// a message when the size overflows or memory runs out; never returns NULL.
void *arena_alloc(size_t count, size_t item_size);

size_t arena_mark(void);            // how many allocations exist right now
void arena_release(size_t mark);    // free every allocation made after mark
void arena_free_all(void);          // free everything (end of program)

// The most bytes the arena has held at once since the program started: what
// a lesson's budget predicts (lesson/budget.h) and its tests check.
size_t arena_peak_bytes(void);

// THE LIMIT: a run's budget (lesson/budget.h) holds where memory is spent.
// With a limit set, an allocation that would take what the arena holds,
// plus the bytes held outside it (arena_hold_outside: --dump's copies), past
// `limit` bytes calls refuse(would_hold) instead, which must not return
// (it ends the run). 0: no limit (the default). Setting one unsets the last.
void arena_set_limit(size_t limit, void (*refuse)(size_t would_hold));
// Count `added` bytes more and `removed` fewer as held outside the arena
// (malloc'd copies a run keeps), checked against the limit as above.
void arena_hold_outside(size_t added, size_t removed);

#endif
