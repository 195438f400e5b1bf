// Lesson 1: toy-qkv - attention on a 3x3 example small enough to do by hand.
//
// WHAT THIS ADDS
//   Nothing comes before it: this is attention with no learned weights at
//   all. Three inputs already have their query, key and value vectors
//   (Chen Ming's post "Self-Attention自注意力机制源码学习"); we compute
//   how much each input attends to every other one, and mix the values.
//
// THE MATH (T = 3 inputs, C = 3 numbers per vector)
//   scores  = Query @ Key^T              (T, S)  scores[t, s] = q_t . k_s
//   weights = softmax(scores, dim=-1)    (T, S)  each row sums to 1
//   out     = weights @ Value            (T, C)  out[t] = sum over s of weights[t, s] * v_s
//   (Real attention divides the scores by sqrt(C) first; the post leaves it
//   out. show_scaling() below shows what that changes.)
//
// THE PYTORCH IT MIRRORS (the post's numpy, written with torch)
//   Query = torch.tensor([[1., 0., 2.], [2., 2., 2.], [2., 1., 3.]])
//   Key   = torch.tensor([[0., 1., 1.], [4., 4., 0.], [2., 3., 1.]])
//   Value = torch.tensor([[1., 2., 3.], [2., 8., 0.], [2., 6., 3.]])
//   scores = Query @ Key.T;                 print(scores)
//   weights = torch.softmax(scores, dim=-1); print(weights)
//   out = weights @ Value;                  print(out)
//
// RUN IT
//   make lesson-1             (flags: --dump DIR, --dot FILE, --heatmap, --help)
//   Every number here is the post's: nothing is drawn at random, so --seed,
//   which every lesson takes, changes nothing (the lesson says so if given one).
//
// WHAT TO LOOK FOR
//   - Row 0 of scores is 2, 4, 4, as in the post's figure.
//   - The post rounds row 0 of the weights to 0.0, 0.5, 0.5 and gets the
//     output [2.0, 7.0, 1.5]; the exact numbers are 0.0634, 0.4683, 0.4683
//     and [1.9366, 6.6831, 1.5951].
//   - Row 1 of the weights prints in scientific notation because one weight
//     is 6e-06: PyTorch switches the whole tensor when a value is below 1e-4.
//   - Dividing by sqrt(3) makes the weights less peaked.
//   - The post's soft_max overflows for large scores; subtracting the row's
//     max first does not.
//
// Size letters (the repository's, docs/README.md): T = number of queries,
// S = number of keys (both 3 here), C = numbers per vector.
// Index letters: t query position, s key position, c one of the C numbers.

#include <math.h>
#include <stdio.h>

#include "attention.h"

// --- the post's cell: attention with nothing learned ----------------------------------
//
// There is no nn.Module here: no weights to learn, so no struct and no
// init. The cell is the post's three lines, written as a forward with the
// usual signature less `self`: the scores and weights it computes on the
// way go to `steps` (may be NULL), and it returns `out`.

typedef struct {
    const Tensor *scores;    // (T, S) Query @ Key^T
    const Tensor *weights;   // (T, S) softmax(scores, dim=-1)
} ToyAttentionSteps;

static Tensor *toy_attention(ToyAttentionSteps *steps, const Tensor *Query, const Tensor *Key,
                             const Tensor *Value) {
    // Step 1: every query against every key. Key.T is a view: the same
    // nine numbers read with rows and columns swapped, nothing copied.
    // scores[t, s] = Query[t, :] . Key[s, :]
    const Tensor *scores = named("scores", matmul(Query, transpose(Key, 0, 1)));    // (T, S)

    // Step 2: softmax along each row turns scores into weights that are
    // positive and sum to 1: how much input t attends to each input s.
    const Tensor *weights = named("weights", softmax(scores, -1));                  // (T, S)

    // Step 3: each output row is the weighted sum of the value rows.
    Tensor *out = matmul(weights, Value);                                           // (T, C)
    named("out", out);

    if (steps != NULL) {
        *steps = (ToyAttentionSteps){scores, weights};
    }
    return out;
}

// --- the demonstrations ---------------------------------------------------------------

// The walk-through of input-1 (row 0), number by number, against the
// post's figure.
static void walk_through_input_1(const ToyAttentionSteps *steps, const Tensor *Value,
                                 const Tensor *out) {
    const Tensor *scores = steps->scores;     // (T, S)
    const Tensor *weights = steps->weights;   // (T, S)
    printf("-- input-1, by hand --\n");
    printf("scores of input-1: q_1 = [1, 0, 2] . k_s = %g, %g, %g\n", *at2(scores, 0, 0),
           *at2(scores, 0, 1), *at2(scores, 0, 2));
    printf("exact weights:     %.4f, %.4f, %.4f  (the post's figure rounds them to 0.0, 0.5, "
           "0.5)\n", *at2(weights, 0, 0), *at2(weights, 0, 1), *at2(weights, 0, 2));
    // The figure's output, with its rounded weights: 0.0*v1 + 0.5*v2 + 0.5*v3.
    float rounded[3] = {0.0f, 0.5f, 0.5f};
    printf("figure's output:   [");
    for (int c = 0; c < 3; c++) {
        float sum = 0.0f;
        for (int s = 0; s < 3; s++) {
            sum += rounded[s] * *at2(Value, s, c);
        }
        printf(c == 0 ? "%.1f" : ", %.1f", sum);
    }
    printf("]\nexact output:      [%.4f, %.4f, %.4f]\n", *at2(out, 0, 0), *at2(out, 0, 1),
           *at2(out, 0, 2));
    printf("exp(2) = %.4f is small next to exp(4) = %.4f, but not zero:\ninput-1 still "
           "gets 6%% of its own value.\n\n", exp(2.0), exp(4.0));
}

// The scaling the post leaves out. Transformers divide by sqrt(d_k) so
// that the dot products of long vectors do not grow with d_k and push
// softmax into a near one-hot corner where its gradient vanishes. Here
// d_k = 3, so every score shrinks by 1.732.
static void show_scaling(const ToyAttentionSteps *steps, const Tensor *Value) {
    printf("-- with the 1/sqrt(d_k) scaling the post leaves out (d_k = 3) --\n");
    const Tensor *scaled = div_scalar(steps->scores, sqrtf(3.0f));                  // (T, S)
    const Tensor *scaled_weights = softmax(scaled, -1);                             // (T, S)
    const Tensor *scaled_out = matmul(scaled_weights, Value);                       // (T, C)
    printf("softmax(scores / sqrt(3), dim=-1)\n%s\n", tensor_str(scaled_weights, NULL));
    printf("softmax(scores / sqrt(3), dim=-1) @ Value\n%s\n", tensor_str(scaled_out, NULL));
    printf("input-1 now gives itself %.4f instead of %.4f: smaller scores, flatter weights.\n\n",
           *at2(scaled_weights, 0, 0), *at2(steps->weights, 0, 0));
}

// The post's soft_max, as written: exp(z) / sum(exp(z)) with no max
// subtracted. In float32, exp() overflows to inf for z > 88.7, and then
// inf / inf is NaN. (numpy in float64 overflows a little later, at 709.8.)
static Tensor *unstable_softmax(const Tensor *scores) {
    Tensor *out = clone(scores);                                                    // (T, S)
    int T = size(scores, 0);
    int S = size(scores, 1);
    for (int t = 0; t < T; t++) {
        float sum = 0.0f;
        for (int s = 0; s < S; s++) {
            sum += expf(*at2(scores, t, s));
        }
        for (int s = 0; s < S; s++) {
            *at2(out, t, s) = expf(*at2(scores, t, s)) / sum;
        }
    }
    trace1("the post's soft_max", out, scores);   // an edge in the --dot diagram
    return out;
}

// Why softmax subtracts the max. Scale the scores up tenfold (long vectors
// and no 1/sqrt(d_k) easily give such numbers).
static void show_unstable_softmax(const Tensor *scores) {
    printf("-- the post's soft_max against the max-subtracted softmax --\n");
    const Tensor *big = mul_scalar(scores, 10.0f);                                  // (T, S)
    printf("big = scores * 10\n%s\n", tensor_str(big, NULL));
    printf("the post's soft_max(big): exp(160) overflows float32, inf / inf = nan\n%s\n",
           tensor_str(unstable_softmax(big), NULL));
    printf("softmax(big, dim=-1): exp(x - max) <= 1 never overflows\n%s\n",
           tensor_str(softmax(big, -1), NULL));
}

// --- the lesson -----------------------------------------------------------------------

int main(int argc, char **argv) {
    Lesson lesson = {
        .program = "lesson-1",
        .summary = "toy-qkv: the 3x3 Query/Key/Value example of Chen Ming's post "
                   "(nothing random: --seed changes nothing)",
    };
    parse_lesson_args(&lesson, argc, argv);
    // The budget (lesson/budget.h): about thirty 3x3 tensors, whatever the flags.
    check_budget(&lesson, (Cost){.bytes = 30 * 9 * 4, .exps = 5 * 9, .elements = 30 * 9});
    lesson_start(&lesson);   // no size flags: every tensor is the post's 3x3
    if (lesson.seed != 0) {
        printf("(--seed changes nothing here: this lesson draws no random numbers)\n\n");
    }

    // The post's matrices.
    const float query_values[] = {1, 0, 2,  2, 2, 2,  2, 1, 3};
    const float key_values[] = {0, 1, 1,  4, 4, 0,  2, 3, 1};
    const float value_values[] = {1, 2, 3,  2, 8, 0,  2, 6, 3};
    const Tensor *Query = named("Query", tensor_from(shape2(3, 3), query_values));  // (T, C)
    const Tensor *Key = named("Key", tensor_from(shape2(3, 3), key_values));        // (S, C)
    const Tensor *Value = named("Value", tensor_from(shape2(3, 3), value_values));  // (S, C)
    printf("Query:\n%s\nKey:\n%s\nValue:\n%s\n\n", tensor_str(Query, NULL),
           tensor_str(Key, NULL), tensor_str(Value, NULL));

    ToyAttentionSteps steps;
    const Tensor *out = toy_attention(&steps, Query, Key, Value);                   // (T, C)
    printf("scores = Query @ Key.T\n%s\n\n", tensor_str(steps.scores, NULL));
    printf("weights = softmax(scores, dim=-1)\n%s\n\n", tensor_str(steps.weights, NULL));
    if (lesson.heatmap) {
        print_heatmap("weights", steps.weights);   // --heatmap: the same weights as shades
        printf("\n");
    }
    printf("out = weights @ Value\n%s\n\n", tensor_str(out, NULL));

    walk_through_input_1(&steps, Value, out);
    show_scaling(&steps, Value);
    show_unstable_softmax(steps.scores);
    return lesson_finish(&lesson);
}
