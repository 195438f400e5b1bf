// checkpoint.c - the state_dict and the tokenizer on disk: what --save writes and --load reads.
//
// Each parameter is one NumPy .npy file named by its state_dict key
// (layers.0.self_attn.q_proj.weight.npy), float32, C order, in the parameter's shape: what
// the page's PyTorch reads with numpy.load and model.load_state_dict, and what it writes
// with numpy.save for the lesson to --load. The tokenizer goes beside them, as text:
//     lesson-17 tokenizer
//     chars 420                   the vocabulary's size, then each token's code point
//     10                          (ascending), one a line
//     ...
// or
//     lesson-17 tokenizer
//     bpe 512                     the merges, then each merge's pair and how often it came
//     101 32 5728                 (merge m makes token 256 + m)
//     ...
#define _POSIX_C_SOURCE 200809L
#include "checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lesson/npy.h"
#include "lesson/outputs.h"

#define MAX_ENTRIES (3 + 9 * MAX_LAYERS)
#define TOKENIZER_FILE "tokenizer.txt"
#define TOKENIZER_HEADER "lesson-17 tokenizer\n"

typedef struct {
    char name[64];
    Shape shape;
} Entry;

// The state_dict's keys and shapes for this config, in its order.
static int state_dict(Entry *entries, const Config *c) {
    int C = c->hidden_size, F = c->intermediate_size, NV = c->vocab_size;
    int H = c->num_attention_heads, KV = c->num_key_value_heads, D = c->head_dim, n = 0;
    entries[n++] = (Entry){"embed_tokens.weight", shape2(NV, C)};
    const char *names[9] = {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                            "self_attn.o_proj", "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj",
                            "input_layernorm", "post_attention_layernorm"};
    Shape shapes[9] = {shape2(H * D, C), shape2(KV * D, C), shape2(KV * D, C), shape2(C, H * D),
                       shape2(F, C), shape2(F, C), shape2(C, F), shape1(C), shape1(C)};
    for (int l = 0; l < c->num_hidden_layers; l++) {
        for (int i = 0; i < 9; i++) {
            entries[n].shape = shapes[i];
            snprintf(entries[n++].name, 64, "layers.%d.%s.weight", l, names[i]);
        }
    }
    entries[n++] = (Entry){"norm.weight", shape1(C)};
    entries[n++] = (Entry){"lm_head.weight", shape2(NV, C)};
    return n;
}

static const char *file_in(const char *dir, const char *name) {
    char *path = arena_alloc(strlen(dir) + strlen(name) + 2, 1);
    sprintf(path, "%s/%s", dir, name);
    return path;
}

static const char *file_of(const char *dir, const char *name) {
    char *path = arena_alloc(strlen(dir) + strlen(name) + 6, 1);
    sprintf(path, "%s/%s.npy", dir, name);
    return path;
}

// The sizes in a header's shape, "(16, 64)" or "(16,)" or "()": each a whole number below
// 2^31 (a tensor's size is an int), read with no wrap-around (strtol's overflow is caught,
// and so is a size past an int: "(4294967312, 64)" is not (16, 64)). NULL if it is not one;
// else the dims in `found` and the shape as the file wrote it in *text.
static const char *parse_shape(Shape *found, const char **text, const char *cursor) {
    const char *start = cursor;
    *found = (Shape){0, {0}};
    while (*cursor != ')') {
        if (*cursor < '0' || *cursor > '9' || found->ndim == MAX_DIMS) {
            return NULL;
        }
        errno = 0;
        char *end;
        long size = strtol(cursor, &end, 10);
        if (errno == ERANGE || size > INT_MAX) {
            found->size[found->ndim++] = -1;   // more than any tensor here holds
        } else {
            found->size[found->ndim++] = (int)size;
        }
        cursor = end + strspn(end, ", ");
    }
    size_t length = (size_t)(cursor - start);
    char *shape_text = arena_alloc(length + 3, 1);
    sprintf(shape_text, "(%.*s)", (int)length, start);
    *text = shape_text;
    return cursor;
}

// Read <dir>/<name>.npy, a float32 array of `shape`, into values (or only check it when
// values is NULL). NULL on success, else what is wrong with the file, in a few words.
static const char *read_npy(float *values, const char *path, Shape shape) {
    // What is not a regular file is refused before it is opened: opening a FIFO waits for a
    // writer that may never come (O_NONBLOCK too, in case it is swapped in meanwhile).
    struct stat info;
    if (stat(path, &info) != 0) {
        return errno == ENOENT ? "is missing" : "cannot be read";
    }
    if (!S_ISREG(info.st_mode)) {
        return S_ISDIR(info.st_mode) ? "is a directory, not a .npy file"
                                     : "is not a regular file";
    }
    int fd = open(path, O_RDONLY | O_NONBLOCK);
    FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
    if (f == NULL || fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
        if (f != NULL) {
            fclose(f);
        } else if (fd >= 0) {
            close(fd);
        }
        return "cannot be read as a regular file";
    }
    unsigned char magic[10];
    char *header = "";
    const char *problem = NULL;
    if (fread(magic, 1, 10, f) != 10 || memcmp(magic, "\x93NUMPY\x01\x00", 8) != 0) {
        problem = "is not a .npy file (version 1.0)";
    } else {   // version 1.0: a header of up to 65535 bytes, as long as its length says
        size_t length = (size_t)magic[8] | (size_t)magic[9] << 8;
        header = arena_alloc(length + 1, 1);
        if (fread(header, 1, length, f) != length) {
            problem = "is cut short in its header";
        }
    }
    // The header is a Python dict: {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
    const char *shape_text = strstr(header, "'shape': (");
    if (problem == NULL && (strstr(header, "'descr': '<f4'") == NULL ||
                            strstr(header, "'fortran_order': False") == NULL || !shape_text)) {
        problem = "is not a float32 array in C order ('<f4')";
    }
    if (problem == NULL) {
        Shape found;
        const char *written = NULL;
        bool same = parse_shape(&found, &written, shape_text + strlen("'shape': (")) != NULL &&
                    found.ndim == shape.ndim;
        for (int d = 0; same && d < shape.ndim; d++) {
            same = found.size[d] == shape.size[d];
        }
        if (!same) {
            const char *want = shape_str(shape, SIZES_TUPLE);
            size_t length = strlen(want) + (written != NULL ? strlen(written) : 0) + 64;
            char *text = arena_alloc(length, 1);
            if (written != NULL) {
                snprintf(text, length, "has shape %s, this model's is %s", written, want);
            } else {
                snprintf(text, length, "has a shape that is not whole sizes, this model's is %s",
                         want);
            }
            problem = text;
        }
    }
    long count = 1;
    for (int d = 0; d < shape.ndim; d++) {
        count *= shape.size[d];
    }
    float *data = values != NULL ? values : arena_alloc((size_t)count, sizeof(float));
    if (problem == NULL && (long)fread(data, sizeof(float), (size_t)count, f) != count) {
        problem = "is cut short: fewer numbers than its shape holds";
    }
    if (problem == NULL && fgetc(f) != EOF) {
        problem = "has more bytes than its shape holds";
    }
    // A NaN or an Inf would train to "loss nan" without a word: refused, with where.
    for (long i = 0; problem == NULL && i < count; i++) {
        if (!isfinite(data[i])) {
            char *text = arena_alloc(160, 1);
            snprintf(text, 160, "holds %s at flat index %ld; a checkpoint's weights must be "
                     "finite: save one from a run whose loss stayed finite", isnan(data[i])
                     ? "NaN" : "Inf", i);
            problem = text;
        }
    }
    fclose(f);
    return problem;
}

static bool is_directory(const char *path) {
    struct stat info;
    return stat(path, &info) == 0 && S_ISDIR(info.st_mode);
}

// The tokenizer in `text` (a tokenizer.txt's bytes) into *tok (vocabulary and merges; NULL
// only checks it). NULL if it is well made, else what is wrong, in a few words.
static const char *parse_tokenizer(Tokenizer *tok, const char *text) {
    if (strncmp(text, TOKENIZER_HEADER, strlen(TOKENIZER_HEADER)) != 0) {
        return "does not start with '" "lesson-17 tokenizer" "'";
    }
    const char *cursor = text + strlen(TOKENIZER_HEADER);
    char kind[8] = "";
    int count = -1, used = 0;
    if (sscanf(cursor, "%7s %d%n", kind, &count, &used) != 2 || count < 0 ||
        (strcmp(kind, "chars") != 0 && strcmp(kind, "bpe") != 0)) {
        return "has no line 'chars N' or 'bpe N' after its first";
    }
    bool chars = strcmp(kind, "chars") == 0;
    if ((chars && (count < 1 || count > MAX_VOCAB)) || (!chars && count > MAX_MERGES)) {
        return chars ? "has a vocabulary size out of range" : "has too many merges";
    }
    cursor += used;
    int *values = arena_alloc((size_t)count * 3 + 1, sizeof(int));
    for (int i = 0; i < count * (chars ? 1 : 3); i++) {
        long value;
        char *end;
        errno = 0;
        value = strtol(cursor, &end, 10);
        if (end == cursor || errno != 0 || value < 0 || value > 0x10FFFF ||
            (*end != '\n' && *end != ' ')) {
            return "has a line that is not whole numbers";
        }
        values[i] = (int)value;
        cursor = end;
    }
    if (strspn(cursor, "\n") != strlen(cursor)) {
        return "has more lines than it says";
    }
    for (int i = 0; i < count; i++) {
        if (chars && ((i > 0 && values[i] <= values[i - 1]) ||
                      (values[i] >= 0xD800 && values[i] <= 0xDFFF))) {
            return "has code points that are not ascending characters";
        }
        if (!chars && (values[3 * i] >= 256 + i || values[3 * i + 1] >= 256 + i)) {
            return "has a merge of a token not made yet";
        }
    }
    if (tok == NULL) {
        return NULL;
    }
    if (chars) {
        *tok = chars_tokenizer(values, count);
        return NULL;
    }
    *tok = (Tokenizer){.kind = BPE, .vocab_size = 256 + count, .n_merges = count,
                       .merges = arena_alloc((size_t)count + 1, sizeof(int[2])),
                       .merge_counts = arena_alloc((size_t)count + 1, sizeof(int))};
    for (int m = 0; m < count; m++) {
        tok->merges[m][0] = values[3 * m];
        tok->merges[m][1] = values[3 * m + 1];
        tok->merge_counts[m] = values[3 * m + 2];
    }
    bpe_bytes(tok);
    return NULL;
}

// A whole regular file as a string (an arena string), or NULL. What is not a regular file
// is refused before it is opened, as read_npy's files are (a FIFO would wait for a writer).
static char *read_whole(const char *path) {
    struct stat info;
    if (stat(path, &info) != 0 || !S_ISREG(info.st_mode)) {
        return NULL;
    }
    int fd = open(path, O_RDONLY | O_NONBLOCK);
    FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
    if (f == NULL || fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
        if (f != NULL) {
            fclose(f);
        } else if (fd >= 0) {
            close(fd);
        }
        return NULL;
    }
    size_t capacity = 1 << 16, used = 0;
    char *text = arena_alloc(capacity, 1);
    size_t got;
    while ((got = fread(text + used, 1, capacity - used - 1, f)) > 0) {
        used += got;
        if (used + 1 == capacity) {
            char *bigger = arena_alloc(capacity * 2, 1);
            memcpy(bigger, text, used);
            text = bigger;
            capacity *= 2;
        }
    }
    fclose(f);
    text[used] = '\0';
    return strlen(text) == used ? text : NULL;   // a NUL inside: not our text
}

Tokenizer checkpoint_tokenizer(const Lesson *lesson, const char *dir) {
    Tokenizer tok;
    const char *path = file_in(dir, TOKENIZER_FILE);
    struct stat info;
    const char *problem = stat(path, &info) != 0 ? (errno == ENOENT ? "is missing"
                                                                     : "cannot be read")
                          : !S_ISREG(info.st_mode) ? "is not a regular file" : NULL;
    const char *text = problem == NULL ? read_whole(path) : NULL;
    if (problem == NULL) {
        problem = text == NULL ? "cannot be read" : parse_tokenizer(&tok, text);
    }
    if (problem != NULL) {
        usage_error(lesson, "--load %s: %s %s", shown(dir), TOKENIZER_FILE, problem);
    }
    return tok;
}

// outputs.c keeps every other output off the .npy names of --save's and --load's
// directories; tokenizer.txt is this lesson's own, so it is declared too: --save's as a file
// it writes, --load's as one it reads, and --svg or --dot on either is refused up front.
// (Where --save is --load's directory, --save's declaration covers both: --save may
// rewrite what --load read.) The paths live as long as the declarations (static).
static void declare_tokenizer_files(const Settings *s) {
    static char save_file_path[PATH_MAX + 32], load_file_path[PATH_MAX + 32];
    struct stat save_info, load_info;   // one directory however spelled: one device and inode
    bool same = s->save_dir != NULL && s->load_dir != NULL && stat(s->save_dir, &save_info) == 0 &&
                stat(s->load_dir, &load_info) == 0 && save_info.st_dev == load_info.st_dev &&
                save_info.st_ino == load_info.st_ino;
    // A directory too long for the buffer is refused by outputs.c's length checks anyway.
    if (s->save_dir != NULL && strlen(s->save_dir) < PATH_MAX) {
        snprintf(save_file_path, sizeof save_file_path, "%s/%s", s->save_dir, TOKENIZER_FILE);
        declare_output("--save", save_file_path, OUTPUT_FILE);
    }
    if (s->load_dir != NULL && !same && strlen(s->load_dir) < PATH_MAX) {
        snprintf(load_file_path, sizeof load_file_path, "%s/%s", s->load_dir, TOKENIZER_FILE);
        declare_input("--load", load_file_path);
    }
}

void checkpoint_check(const Lesson *lesson, Settings *s) {
    if (s->load_dir != NULL) {
        if (!is_directory(s->load_dir)) {
            usage_error(lesson, "--load: '%s' is not a directory", shown(s->load_dir));
        }
        size_t mark = arena_mark();
        s->config.vocab_size = checkpoint_tokenizer(lesson, s->load_dir).vocab_size;
        arena_release(mark);
        Entry entries[MAX_ENTRIES];
        int n = state_dict(entries, &s->config);
        for (int i = 0; i < n; i++) {
            mark = arena_mark();
            const char *problem = read_npy(NULL, file_of(s->load_dir, entries[i].name),
                                           entries[i].shape);
            if (problem != NULL) {
                usage_error(lesson, "--load %s: %s.npy %s", shown(s->load_dir), entries[i].name,
                            problem);
            }
            arena_release(mark);
        }
        declare_input("--load", s->load_dir);   // no output may write over it but --save
    }
    if (s->save_dir != NULL) {   // made and checked with the run's other outputs
        declare_output("--save", s->save_dir, OUTPUT_DIRECTORY);
    }
    declare_tokenizer_files(s);
}

void checkpoint_load(const AdamW *parameters, const Config *config, const char *dir) {
    Entry entries[MAX_ENTRIES];
    state_dict(entries, config);
    for (int i = 0; i < parameters->n_params; i++) {
        size_t mark = arena_mark();
        const char *problem = read_npy(parameters->params[i].value,
                                       file_of(dir, parameters->params[i].name), entries[i].shape);
        if (problem != NULL) {   // checked before: it changed while the lesson ran
            fail("--load %s: %s.npy %s", dir, parameters->params[i].name, problem);
        }
        arena_release(mark);
    }
}

// The tokenizer as tokenizer.txt's text (an arena string).
static char *tokenizer_text(size_t *length, const Tokenizer *tok) {
    size_t capacity = 64 + 40 * (size_t)(tok->kind == CHARS ? tok->vocab_size : tok->n_merges);
    char *text = arena_alloc(capacity, 1);
    size_t used = (size_t)sprintf(text, "%s%s %d\n", TOKENIZER_HEADER,
                                  tok->kind == CHARS ? "chars" : "bpe",
                                  tok->kind == CHARS ? tok->vocab_size : tok->n_merges);
    for (int i = 0; tok->kind == CHARS && i < tok->vocab_size; i++) {
        used += (size_t)sprintf(text + used, "%d\n", tok->code_points[i]);
    }
    for (int m = 0; tok->kind == BPE && m < tok->n_merges; m++) {
        used += (size_t)sprintf(text + used, "%d %d %d\n", tok->merges[m][0], tok->merges[m][1],
                                tok->merge_counts[m]);
    }
    *length = used;
    return text;
}

// Every parameter as <dir>/<name>.npy and the tokenizer as <dir>/tokenizer.txt, kept to be
// written with the run's other outputs in one transaction (lesson/outputs.h): every file
// under a temporary name first, then all renamed into place, or, if any of it fails, none,
// and the directory as it was.
void checkpoint_save(const AdamW *parameters, const Tokenizer *tok, const Config *config,
                     const char *dir) {
    Entry entries[MAX_ENTRIES];
    state_dict(entries, config);
    for (int i = 0; i < parameters->n_params; i++) {
        const Param *p = &parameters->params[i];
        size_t mark = arena_mark();
        Tensor *t = zeros(entries[i].shape);
        memcpy(t->data, p->value, (size_t)p->numel * sizeof(float));
        size_t length;
        unsigned char *bytes = npy_encode(&length, t);   // malloc'd: keep_output frees it
        keep_output("--save", file_of(dir, p->name), bytes, length);
        arena_release(mark);
    }
    size_t mark = arena_mark(), length;
    const char *text = tokenizer_text(&length, tok);
    unsigned char *bytes = malloc(length);   // keep_output's to free
    if (bytes != NULL) {
        memcpy(bytes, text, length);
    }
    keep_output("--save", file_in(dir, TOKENIZER_FILE), bytes, length);
    arena_release(mark);
}
