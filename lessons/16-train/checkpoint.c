// checkpoint.c - the state_dict on disk: what --save writes and --load reads.
//
// Each parameter is one NumPy .npy file named by its state_dict key
// (layers.0.self_attn.q_proj.weight.npy), float32, C order, in the parameter's shape: what
// the page's PyTorch reads with numpy.load and model.load_state_dict, and what it writes
// with numpy.save for the lesson to --load.
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

void checkpoint_check(const Lesson *lesson, const Settings *s) {
    if (s->load_dir != NULL) {
        if (!is_directory(s->load_dir)) {
            usage_error(lesson, "--load: '%s' is not a directory", shown(s->load_dir));
        }
        Entry entries[MAX_ENTRIES];
        int n = state_dict(entries, &s->config);
        for (int i = 0; i < n; i++) {
            size_t mark = arena_mark();
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

// Every file under a temporary name first, then each renamed into place: a run that fails
// while writing leaves the directory as it was (save_file does this for one file). A rename
// within one directory does not fail on a working disk once the names are checked.
bool checkpoint_save(const AdamW *parameters, const Config *config, const char *dir) {
    Entry entries[MAX_ENTRIES];
    state_dict(entries, config);
    bool made = !is_directory(dir) && mkdir(dir, 0777) == 0;
    if (!is_directory(dir)) {
        return false;
    }
    int n = parameters->n_params, written = 0;
    char **temporary = arena_alloc((size_t)n, sizeof(char *));
    bool ok = true;
    for (int i = 0; i < n && ok; i++) {   // a name that is a directory would stop a rename
        ok = !is_directory(file_of(dir, parameters->params[i].name));
        errno = ok ? errno : EISDIR;
    }
    for (int i = 0; i < n && ok; i++, written++) {
        const Param *p = &parameters->params[i];
        Tensor *t = zeros(entries[i].shape);
        memcpy(t->data, p->value, (size_t)p->numel * sizeof(float));
        size_t length;
        unsigned char *bytes = npy_encode(&length, t);
        const char *path = file_of(dir, p->name);
        temporary[i] = arena_alloc(strlen(path) + sizeof ".saving", 1);
        sprintf(temporary[i], "%s.saving", path);
        ok = bytes != NULL && save_file(temporary[i], bytes, length);
        free(bytes);
    }
    for (int i = 0; i < n && ok; i++) {
        ok = rename(temporary[i], file_of(dir, parameters->params[i].name)) == 0;
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
