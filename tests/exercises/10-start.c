// Exercise 10: write the append to the KV cache.
//
// WHAT TO WRITE
//   append_in_place(cache, cache_len, rows): cache is (B, capacity, KV, D), its
//   first cache_len positions already filled; rows is (B, T, KV, D), the keys (or
//   values) of the T new tokens. Write them after what the cache holds:
//       cache[b, cache_len + t, h, d] = rows[b, t, h, d]
//   for every b, t < T, h < KV, d < D, in place: nothing else moves, whatever
//   cache_len is (that is the cache's point: torch.cat would copy it all).
//   The caller (append_to_cache) checks there is room and adds T to cache_len
//   after. Lesson 10's own is append_in_place in lessons/10-kv-cache/
//   kv_cache.c; write yours with loops: size(rows, 1) is T, *at4(rows, b, t, h,
//   d) reads one number, *at4(cache, b, p, h, d) = x writes one
//   (common/core/tensor.h).
//
// CHECK IT
//   make exercise-10   runs lesson 10 with yours in place of its own at four
//                      flag sets and compares k_cache, v_cache, cached_out
//                      and every printed number.
//   The answer is on the page, docs/10-kv-cache.md, under Exercises.
#include "attention.h"

void append_in_place(Tensor *cache, int cache_len, const Tensor *rows) {
    (void)cache;
    (void)cache_len;
    (void)rows;
    // Your code here.
}
