// print.c - the text of PyTorch's print(t), byte for byte.
//
// The rules are PyTorch 1.13's torch/_tensor_str.py with default options;
// docs/pytorch-print.md states them, with examples (section numbers below
// refer to it). The work follows its section 10:
//
//   1. collect the printed elements P (only the shown ones when the tensor
//      is summarised with "..."),
//   2. decide from P how every number is written (int / fixed / sci mode)
//      and the one column width W that the whole tensor shares,
//   3. format one element,
//   4. lay the elements out recursively: rows, matrices, blocks, then any
//      suffix such as "grad_fn=<SoftmaxBackward0>", then ")".
//
// The text is built twice with the same code: once only counting its
// length, then into an arena string of exactly that size (see Text).
#include "exact/print.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/arena.h"

#define LINE_WIDTH 80      // PyTorch's linewidth
#define THRESHOLD 1000     // more elements than this are summarised
#define EDGE_ITEMS 3       // a summarised dimension shows 3 + "..." + 3
#define TOP_INDENT 7       // strlen("tensor(")
#define ELEMENT_MAX 64     // longest element text, with room to spare

// --- building text: count first, then write ---------------------------------

// While `buf` is NULL, put() only counts, so one pass learns the exact length
// and a second pass writes into a buffer of that size. `column` is the
// length of the current (last) line, which is what suffix placement needs.
typedef struct {
    char *buf;
    size_t len;
    size_t column;
} Text;

static void put(Text *out, const char *s) {
    size_t n = strlen(s);
    if (out->buf != NULL) {
        memcpy(out->buf + out->len, s, n);
    }
    out->len += n;
    const char *newline = strrchr(s, '\n');
    out->column = newline != NULL ? strlen(newline + 1) : out->column + n;
}

static void put_repeated(Text *out, const char *s, int count) {
    for (int k = 0; k < count; k++) {
        put(out, s);
    }
}

// --- which elements are shown (section 5) -----------------------------------

// A dimension of size n shows every index, or, when the tensor is summarised
// and n > 6, the slots 0, 1, 2, "...", n-3, n-2, n-1.
static bool is_cut(int n, bool summarize) {
    return summarize && n > 2 * EDGE_ITEMS;
}

static int slot_count(int n, bool summarize) {
    return is_cut(n, summarize) ? 2 * EDGE_ITEMS + 1 : n;
}

// The index shown in slot k, or -1 for the "..." marker.
static int slot_index(int n, bool summarize, int k) {
    if (!is_cut(n, summarize) || k < EDGE_ITEMS) {
        return k;
    }
    if (k == EDGE_ITEMS) {
        return -1;
    }
    return n - (2 * EDGE_ITEMS + 1) + k;  // slots 4, 5, 6 -> n-3, n-2, n-1
}

// --- step 1: collect the printed elements P ---------------------------------

typedef struct {
    double *values;
    long count;
} Elements;

// Append every shown element of t at dims >= dim; index[0..dim-1] is fixed.
// Reading through at() follows the strides, so views need no copy.
static void collect(Elements *p, const Tensor *t, int *index, int dim, bool summarize) {
    if (dim == t->shape.ndim) {
        p->values[p->count] = *at(t, index);
        p->count += 1;
        return;
    }
    int n = t->shape.size[dim];
    for (int k = 0; k < slot_count(n, summarize); k++) {
        index[dim] = slot_index(n, summarize, k);
        if (index[dim] >= 0) {
            collect(p, t, index, dim + 1, summarize);
        }
    }
}

// P as doubles, in the arena like everything else (at most 6^5 values; a
// caller printing in a long loop can wrap it in arena_mark/arena_release).
static Elements printed_elements(const Tensor *t, bool summarize) {
    long capacity = 1;  // a 0-d tensor has one element
    for (int d = 0; d < t->shape.ndim; d++) {
        capacity *= is_cut(t->shape.size[d], summarize) ? 2 * EDGE_ITEMS : t->shape.size[d];
    }
    Elements p = {arena_alloc((size_t)capacity, sizeof(double)), 0};
    int index[MAX_DIMS] = {0};
    collect(&p, t, index, 0, summarize);
    return p;
}

// --- steps 2 and 3: how to write one element, and the column width ----------

typedef enum { MODE_INT, MODE_FIXED, MODE_SCI } FloatMode;

typedef struct {
    DType dtype;
    FloatMode mode;  // floats only
    int width;       // W: every element is right-aligned to this
} Format;

// The text of one element, without padding (section 3 and 6).
static void element_text(char out[ELEMENT_MAX], double x, const Format *f) {
    if (f->dtype == DTYPE_BOOL) {
        snprintf(out, ELEMENT_MAX, "%s", x != 0.0 ? "True" : "False");
    } else if (f->dtype == DTYPE_INT64) {
        snprintf(out, ELEMENT_MAX, "%lld", (long long)x);
    } else if (isnan(x)) {
        // glibc writes a nan with its sign bit set (0/0) as "-nan"; Python never does.
        snprintf(out, ELEMENT_MAX, "nan");
    } else if (isinf(x)) {
        // The same in every mode, and without int mode's dot.
        snprintf(out, ELEMENT_MAX, "%s", x > 0 ? "inf" : "-inf");
    } else if (f->mode == MODE_SCI) {
        snprintf(out, ELEMENT_MAX, "%.4e", x);
    } else if (f->mode == MODE_FIXED) {
        snprintf(out, ELEMENT_MAX, "%.4f", x);
    } else {
        // Int mode: "2." - the dot says "this is a float tensor".
        snprintf(out, ELEMENT_MAX, "%.0f.", x);
    }
}

// Floats only: zeros, nan and infinities say nothing about scale, so the
// mode and the width come from the finite nonzero elements S alone.
static bool in_scale_set(double x) {
    return isfinite(x) && x != 0.0;
}

// Section 3: pick int, fixed or sci mode from S, comparing in double.
static FloatMode float_mode(const Elements *p) {
    double amin = INFINITY, amax = 0.0;
    bool all_integral = true;
    for (long k = 0; k < p->count; k++) {
        double x = p->values[k];
        if (!in_scale_set(x)) {
            continue;
        }
        amin = fmin(amin, fabs(x));
        amax = fmax(amax, fabs(x));
        all_integral = all_integral && x == ceil(x);
    }
    if (amax == 0.0) {
        return MODE_INT;  // S is empty: all zero, nan or inf
    }
    // A spread of more than 1000x, or huge values, do not fit "%.4f".
    bool wide_range = amax / amin > 1000.0 || amax > 1.0e8;
    if (all_integral) {
        return wide_range ? MODE_SCI : MODE_INT;
    }
    // Fixed mode would print a value below 1e-4 as 0.0000.
    return wide_range || amin < 1.0e-4 ? MODE_SCI : MODE_FIXED;
}

// W: the longest text among the elements that count (S for floats, all of P
// for int64 and bool), at least 1.
static int column_width(const Elements *p, const Format *f) {
    int width = 1;
    for (long k = 0; k < p->count; k++) {
        double x = p->values[k];
        if (f->dtype == DTYPE_FLOAT32 && !in_scale_set(x)) {
            continue;
        }
        char text[ELEMENT_MAX];
        element_text(text, x, f);
        int len = (int)strlen(text);
        width = len > width ? len : width;
    }
    return width;
}

static Format decide_format(const Tensor *t, bool summarize) {
    Elements p = printed_elements(t, summarize);
    Format f = {t->dtype, MODE_INT, 1};
    if (t->dtype == DTYPE_FLOAT32) {
        f.mode = float_mode(&p);
    }
    f.width = column_width(&p, &f);
    return f;
}

// One element, right-aligned to W. A longer text (a "-inf" or "-0.0000" that
// W did not count) is written whole, so its column does not line up.
static void put_element(Text *out, double x, const Format *f) {
    char text[ELEMENT_MAX];
    element_text(text, x, f);
    put_repeated(out, " ", f->width - (int)strlen(text));
    put(out, text);
}

// --- step 4: layout (section 4) ------------------------------------------------

// Everything the recursive layout needs besides the position it is at.
typedef struct {
    const Tensor *t;
    Format format;
    bool summarize;
} Layout;

// The last dimension: one row "[a, b, c]" at column `indent`, wrapped after
// every `per_line` items; a continuation line starts under the first item.
static void put_row(Text *out, const Layout *lay, int *index, int indent) {
    int dim = lay->t->shape.ndim - 1;
    int n = lay->t->shape.size[dim];
    int per_line = (LINE_WIDTH - indent) / (lay->format.width + 2);  // ", " after each
    per_line = per_line > 1 ? per_line : 1;
    put(out, "[");
    for (int k = 0; k < slot_count(n, lay->summarize); k++) {
        if (k > 0 && k % per_line == 0) {
            put(out, ",\n");
            put_repeated(out, " ", indent + 1);
        } else if (k > 0) {
            put(out, ", ");
        }
        index[dim] = slot_index(n, lay->summarize, k);
        if (index[dim] < 0) {
            put(out, " ...");  // the marker counts as one item of the row
        } else {
            put_element(out, *at(lay->t, index), &lay->format);
        }
    }
    put(out, "]");
}

static void put_slices(Text *out, const Layout *lay, int *index, int dim, int indent);

// The sub-tensor at dims >= dim (index[0..dim-1] chooses which one).
static void put_tensor(Text *out, const Layout *lay, int *index, int dim, int indent) {
    if (dim == lay->t->shape.ndim - 1) {
        put_row(out, lay, index, indent);
    } else {
        put_slices(out, lay, index, dim, indent);
    }
}

// A k-d tensor (k >= 2) is "[" + its slices + "]", each slice one column
// further in, separated by "," and k-1 newlines: rows on consecutive lines,
// one blank line between matrices, two between 3-D blocks, and so on.
static void put_slices(Text *out, const Layout *lay, int *index, int dim, int indent) {
    int n = lay->t->shape.size[dim];
    int k_dims = lay->t->shape.ndim - dim;
    put(out, "[");
    for (int k = 0; k < slot_count(n, lay->summarize); k++) {
        if (k > 0) {
            put(out, ",");
            put_repeated(out, "\n", k_dims - 1);
            put_repeated(out, " ", indent + 1);
        }
        index[dim] = slot_index(n, lay->summarize, k);
        if (index[dim] < 0) {
            put(out, "...");
        } else {
            put_tensor(out, lay, index, dim + 1, indent + 1);
        }
    }
    put(out, "]");
}

static void put_body(Text *out, const Layout *lay) {
    int index[MAX_DIMS] = {0};
    if (lay->t->shape.ndim == 0) {
        put_element(out, *at(lay->t, index), &lay->format);
    } else {
        put_tensor(out, lay, index, 0, TOP_INDENT);
    }
}

// --- suffixes (sections 7 and 8) ----------------------------------------------

#define MAX_SUFFIXES 3  // size=, dtype=, and the caller's one

typedef struct {
    const char *items[MAX_SUFFIXES];
    int count;
    char size_text[128];   // storage for "size=(0, 3)"
    char dtype_text[32];   // storage for "dtype=torch.int64"
} Suffixes;

static const char *dtype_name(DType dtype) {
    return dtype == DTYPE_INT64  ? "torch.int64"
           : dtype == DTYPE_BOOL ? "torch.bool"
                                 : "torch.float32";
}

// An empty tensor has no elements to show its shape or dtype, so it names
// them: size=(...) unless it is 1-D, dtype=... unless it is float32.
static void empty_suffixes(Suffixes *s, const Tensor *t) {
    if (t->shape.ndim != 1) {
        // The sizes as a Python tuple: "(0, 3)".
        snprintf(s->size_text, sizeof s->size_text, "size=%s",
                 shape_str(t->shape, SIZES_TUPLE));
        s->items[s->count++] = s->size_text;
    }
    if (t->dtype != DTYPE_FLOAT32) {
        snprintf(s->dtype_text, sizeof s->dtype_text, "dtype=%s", dtype_name(t->dtype));
        s->items[s->count++] = s->dtype_text;
    }
}

// Section 8: a suffix stays on the last line while that line, its ", " and
// the closing ")" fit in 79 columns; otherwise it starts a new line at
// column 7. `room` copies PyTorch's counter exactly, including its quirk:
// it starts at the line's length + 2 but after a wrap is only 7 + len(s).
static void put_suffixes(Text *out, const Suffixes *s) {
    size_t room = out->column + 2;
    for (int k = 0; k < s->count; k++) {
        size_t len = strlen(s->items[k]);
        if (room + len + 2 > LINE_WIDTH) {
            put(out, ",\n");
            put_repeated(out, " ", TOP_INDENT);
            room = TOP_INDENT + len;
        } else {
            put(out, ", ");
            room += len + 2;
        }
        put(out, s->items[k]);
    }
}

// --- putting it together --------------------------------------------------------

static void put_tensor_text(Text *out, const Tensor *t, const Layout *lay, const Suffixes *s) {
    put(out, "tensor(");
    if (numel(t) == 0) {
        put(out, "[]");
    } else {
        put_body(out, lay);
    }
    put_suffixes(out, s);
    put(out, ")");
}

const char *tensor_str(const Tensor *t, const char *suffix) {
    Suffixes s = {.count = 0};
    Layout lay = {t, {t->dtype, MODE_INT, 1}, numel(t) > THRESHOLD};
    if (numel(t) == 0) {
        empty_suffixes(&s, t);
    } else {
        lay.format = decide_format(t, lay.summarize);
    }
    if (suffix != NULL) {
        s.items[s.count++] = suffix;
    }
    Text count = {NULL, 0, 0};  // pass 1: measure
    put_tensor_text(&count, t, &lay, &s);
    Text text = {arena_alloc(count.len + 1, 1), 0, 0};  // pass 2: write (zeroed: ends in '\0')
    put_tensor_text(&text, t, &lay, &s);
    return text.buf;
}
