// family_self_attention.c - what the tests of lessons 2 to 5 share
// (family_self_attention.h says what each does).
#include "family_self_attention.h"

#include <math.h>
#include <string.h>

RunResult check_profiled_run(const char *lesson, const RecordedCase *c, const char *const *exact,
                             const char *const *computed) {
    const char *reference = c->reference;
    ReferenceRun run = {.lesson = lesson, .exact = exact, .computed = computed,
                        .atol = ROUNDING_ATOL, .rtol = ROUNDING_RTOL};
    RunResult result = check_recorded_case(run, c);
    const char *expected = read_text(path_join("%s/stdout.txt", reference));
    const char *notebook_end = strstr(expected, " M\n");   // end of the Parameters line
    ck_assert_msg(notebook_end != NULL, "%s: no Parameters line in stdout.txt", reference);
    size_t notebook_length = (size_t)(notebook_end - expected) + 3;
    ck_assert_msg(strncmp(result.out, expected, notebook_length) == 0,
                  "%s: stdout does not start with the notebook's lines:\n%s", reference,
                  result.out);
    return result;
}

int check_weight_rows(const Tensor *att_weight, const Tensor *mask, const char *what) {
    const Tensor *w = att_weight;                                       // (B, T, S)
    ck_assert_msg(w->shape.ndim == 3, "%s: att_weight has %d dims, expected 3", what,
                  w->shape.ndim);
    int masked = 0;
    for (int b = 0; b < size(w, 0); b++) {
        for (int t = 0; t < size(w, 1); t++) {
            double sum = 0.0;
            for (int s = 0; s < size(w, 2); s++) {
                float weight = *at3(w, b, t, s);
                sum += weight;
                if (mask != NULL && *at3(mask, b, t, s) == 0.0f) {
                    ck_assert_msg(weight == 0.0f, "%s: masked weight [%d, %d, %d] = %g", what,
                                  b, t, s, (double)weight);
                    masked++;
                } else {
                    ck_assert_msg(weight > 0.0f, "%s: unmasked weight [%d, %d, %d] is %g", what,
                                  b, t, s, (double)weight);
                }
            }
            ck_assert_msg(fabs(sum - 1.0) < 1e-6, "%s: row [%d, %d] sums to %.9f", what, b, t,
                          sum);
        }
    }
    return masked;
}
