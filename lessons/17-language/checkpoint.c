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
//     101 32 4123                 (merge m makes token 256 + m)
//     ...
#define _POSIX_C_SOURCE 200809L
#include "checkpoint.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lesson/files.h"
#include "lesson/npy.h"

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

// Read <dir>/<name>.npy, a float32 array of `shape`, into values (or only check it when
// values is NULL). NULL on success, else what is wrong with the file, in a few words.
static const char *read_npy(float *values, const char *path, Shape shape) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        return errno == ENOENT ? "is missing" : "cannot be read";
    }
    unsigned char magic[10];
    char header[4096] = "";
    const char *problem = NULL;
    if (fread(magic, 1, 10, f) != 10 || memcmp(magic, "\x93NUMPY\x01\x00", 8) != 0) {
        problem = "is not a .npy file (version 1.0)";
    } else {
        size_t length = (size_t)magic[8] | (size_t)magic[9] << 8;
        if (length >= sizeof header || fread(header, 1, length, f) != length) {
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
        const char *cursor = shape_text + strlen("'shape': (");
        Shape found = {0, {0}};
        while (*cursor != ')' && found.ndim < MAX_DIMS) {
            found.size[found.ndim++] = (int)strtol(cursor, (char **)&cursor, 10);
            cursor += strspn(cursor, ", ");
        }
        bool same = found.ndim == shape.ndim;
        for (int d = 0; same && d < shape.ndim; d++) {
            same = found.size[d] == shape.size[d];
        }
        if (!same) {
            char *text = arena_alloc(160, 1);
            snprintf(text, 160, "has shape %s, this model's is %s", shape_str(found, SIZES_TUPLE),
                     shape_str(shape, SIZES_TUPLE));
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
    fclose(f);
    return problem;
}

static bool is_directory(const char *path) {
    struct stat info;
    return stat(path, &info) == 0 && S_ISDIR(info.st_mode);
}

const char *parent_of(const char *path) {
    char *parent = arena_alloc(strlen(path) + 2, 1);
    strcpy(parent, path);
    size_t n = strlen(parent);
    while (n > 1 && parent[n - 1] == '/') {   // "a/b/" is "a/b"
        parent[--n] = '\0';
    }
    char *slash = strrchr(parent, '/');
    if (slash == NULL) {
        return ".";
    }
    slash[slash == parent ? 1 : 0] = '\0';
    return parent;
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

// A whole file as a string (an arena string), or NULL (errno set).
static char *read_whole(const char *path) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
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
    const char *text = read_whole(file_in(dir, TOKENIZER_FILE));
    const char *problem = text == NULL ? "cannot be read" : parse_tokenizer(&tok, text);
    if (problem != NULL) {
        usage_error(lesson, "--load %s: %s %s", shown(dir), TOKENIZER_FILE, problem);
    }
    return tok;
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
    }
    if (s->save_dir != NULL) {   // made at the end; here: it is a directory, or its parent is
        const char *dir = s->save_dir;
        if (!is_directory(dir) && access(dir, F_OK) == 0) {
            usage_error(lesson, "--save: '%s' is not a directory", shown(dir));
        }
        const char *where = is_directory(dir) ? dir : parent_of(dir);
        if (!is_directory(where) || access(where, W_OK | X_OK) != 0) {
            usage_error(lesson, "--save %s: cannot write into '%s'", shown(dir), shown(where));
        }
    }
}

void checkpoint_load(const AdamW *parameters, const Config *config, const char *dir) {
    Entry entries[MAX_ENTRIES];
    state_dict(entries, config);
    for (int i = 0; i < parameters->n_params; i++) {
        const char *problem = read_npy(parameters->params[i].value,
                                       file_of(dir, parameters->params[i].name), entries[i].shape);
        if (problem != NULL) {   // checked before: it changed while the lesson ran
            fail("--load %s: %s.npy %s", dir, parameters->params[i].name, problem);
        }
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

// Every file under a temporary name first, then each renamed into place: a run that fails
// while writing leaves the directory as it was (save_file does this for one file). A rename
// within one directory does not fail on a working disk once the names are checked.
bool checkpoint_save(const AdamW *parameters, const Tokenizer *tok, const Config *config,
                     const char *dir) {
    Entry entries[MAX_ENTRIES];
    state_dict(entries, config);
    bool made = !is_directory(dir) && mkdir(dir, 0777) == 0;
    if (!is_directory(dir)) {
        return false;
    }
    int n = parameters->n_params + 1, written = 0;   // the parameters, then the tokenizer
    const char **final = arena_alloc((size_t)n, sizeof(char *));
    char **temporary = arena_alloc((size_t)n, sizeof(char *));
    for (int i = 0; i < n; i++) {
        final[i] = i + 1 < n ? file_of(dir, parameters->params[i].name)
                             : file_in(dir, TOKENIZER_FILE);
        temporary[i] = arena_alloc(strlen(final[i]) + sizeof ".saving", 1);
        sprintf(temporary[i], "%s.saving", final[i]);
    }
    bool ok = true;
    for (int i = 0; i < n && ok; i++) {   // a name that is a directory would stop a rename
        ok = !is_directory(final[i]);
        errno = ok ? errno : EISDIR;
    }
    for (int i = 0; i < n && ok; i++, written++) {
        if (i + 1 == n) {
            size_t length;
            char *text = tokenizer_text(&length, tok);
            ok = save_file(temporary[i], text, length);
            continue;
        }
        const Param *p = &parameters->params[i];
        Tensor *t = zeros(entries[i].shape);
        memcpy(t->data, p->value, (size_t)p->numel * sizeof(float));
        size_t length;
        unsigned char *bytes = npy_encode(&length, t);
        ok = bytes != NULL && save_file(temporary[i], bytes, length);
        free(bytes);
    }
    for (int i = 0; i < n && ok; i++) {
        ok = rename(temporary[i], final[i]) == 0;
    }
    if (!ok) {
        int error = errno;
        for (int i = 0; i < written; i++) {
            unlink(temporary[i]);
        }
        if (made) {
            rmdir(dir);
        }
        errno = error;
    }
    return ok;
}
