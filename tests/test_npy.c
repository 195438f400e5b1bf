// test_npy.c - common/lesson/npy.c: the .npy files --dump writes.
//
// The format (numpy's format.py, version 1.0):
//   bytes 0-5   "\x93NUMPY"
//   bytes 6-7   version 1, 0
//   bytes 8-9   header length, little-endian
//   header      the dict text, spaces, one '\n'; 10 + header length is a
//               multiple of 64, so the data starts aligned
//   data        the elements in C order, '<f4' or '<i8'
// Each header below is spelled out by hand; tests/data/npy/ holds files
// numpy 1.24 wrote with np.save (tests/reference/gen_npy.py), compared with
// ours byte for byte.
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "lesson/npy.h"

#define NPY_DIR DATA_DIR "/npy"

// --- helpers ---------------------------------------------------------------------

typedef struct {
    const unsigned char *bytes;
    size_t length;
} Bytes;

// The whole file (an arena buffer); a missing file fails the test.
static Bytes read_bytes(const char *path) {
    FILE *file = fopen(path, "rb");
    ck_assert_msg(file != NULL, "cannot open %s", path);
    unsigned char *bytes = arena_alloc(1 << 16, 1);
    size_t length = fread(bytes, 1, 1 << 16, file);
    ck_assert_msg(feof(file), "%s is larger than the tests expect", path);
    fclose(file);
    return (Bytes){bytes, length};
}

// Write t with npy_write into a fresh directory; return the file's bytes.
static Bytes written(const Tensor *t) {
    const char *dir = make_temp_dir();
    const char *path = path_join("%s/t.npy", dir);
    ck_assert_msg(npy_write(path, t), "npy_write(%s) failed", path);
    Bytes file = read_bytes(path);
    remove_dir(dir);
    return file;
}

// The first 10 + header_length bytes: magic, version, length, dict, spaces, '\n'.
static void assert_header(Bytes file, const char *dict, size_t header_length) {
    ck_assert_msg(file.length >= 10 + header_length, "file of %zu bytes", file.length);
    ck_assert_msg(memcmp(file.bytes, "\x93NUMPY", 6) == 0, "bad magic");
    ck_assert_int_eq(file.bytes[6], 1);   // version 1.0
    ck_assert_int_eq(file.bytes[7], 0);
    ck_assert_int_eq(file.bytes[8] | (file.bytes[9] << 8), (int)header_length);
    ck_assert_int_eq((10 + header_length) % 64, 0);
    size_t dict_length = strlen(dict);
    ck_assert_msg(memcmp(file.bytes + 10, dict, dict_length) == 0, "header is \"%.*s\", "
                  "expected \"%s\"", (int)dict_length, (const char *)file.bytes + 10, dict);
    for (size_t i = 10 + dict_length; i < 10 + header_length - 1; i++) {
        ck_assert_msg(file.bytes[i] == ' ', "byte %zu of the padding is 0x%02x", i,
                      file.bytes[i]);
    }
    ck_assert_int_eq(file.bytes[10 + header_length - 1], '\n');
}

// The data part: `count` little-endian floats.
static void assert_float_data(Bytes file, size_t start, const float *want, size_t count) {
    ck_assert_uint_eq(file.length, start + 4 * count);
    for (size_t i = 0; i < count; i++) {
        const unsigned char *p = file.bytes + start + 4 * i;
        uint32_t bits = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                        (uint32_t)p[3] << 24;
        uint32_t want_bits;
        memcpy(&want_bits, &want[i], 4);
        ck_assert_msg(bits == want_bits, "float %zu: 0x%08x, expected 0x%08x (%g)", i, bits,
                      want_bits, (double)want[i]);
    }
}

static void assert_same_bytes(Bytes got, Bytes want, const char *what) {
    ck_assert_msg(got.length == want.length, "%s: %zu bytes, numpy wrote %zu", what, got.length,
                  want.length);
    for (size_t i = 0; i < want.length; i++) {
        ck_assert_msg(got.bytes[i] == want.bytes[i], "%s: byte %zu is 0x%02x, numpy wrote 0x%02x",
                      what, i, got.bytes[i], want.bytes[i]);
    }
}

// (i - 12) / 4 for i = 0..23: quarters, exact in float.
static Tensor *quarters_3x2x4(void) {
    Tensor *t = zeros(shape3(3, 2, 4));
    for (int i = 0; i < 24; i++) {
        t->data[i] = (float)(i - 12) / 4.0f;
    }
    return t;
}

// --- headers and data, by hand -------------------------------------------------------

START_TEST(test_float_3x2x4) {
    Tensor *t = quarters_3x2x4();
    Bytes file = written(t);
    // The dict is 63 characters; 10 + 63 + '\n' = 74 rounds up to 128,
    // so the header is 118 bytes (0x76) and the data starts at 128.
    assert_header(file, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2, 4), }", 118);
    ck_assert_int_eq(file.bytes[8], 0x76);
    ck_assert_int_eq(file.bytes[9], 0x00);
    assert_float_data(file, 128, t->data, 24);
    ck_assert_uint_eq(file.length, 224);
}
END_TEST

START_TEST(test_int64_mask) {
    Tensor *mask = tensor_from(shape2(2, 3), (float[]){1, 0, 1, 0, 0, 1});
    mask->dtype = DTYPE_INT64;
    Bytes file = written(mask);
    assert_header(file, "{'descr': '<i8', 'fortran_order': False, 'shape': (2, 3), }", 118);
    ck_assert_uint_eq(file.length, 128 + 6 * 8);
    const int want[6] = {1, 0, 1, 0, 0, 1};
    for (int i = 0; i < 6; i++) {
        const unsigned char *p = file.bytes + 128 + 8 * i;
        ck_assert_int_eq(p[0], want[i]);        // little-endian: low byte first
        for (int k = 1; k < 8; k++) {
            ck_assert_int_eq(p[k], 0);
        }
    }
    // A bool tensor is written as int64 too, as the header says.
    mask->dtype = DTYPE_BOOL;
    assert_header(written(mask), "{'descr': '<i8', 'fortran_order': False, 'shape': (2, 3), }",
                  118);
    // A negative integer: two's complement, 8 bytes.
    Tensor *minus = tensor_from(shape1(1), (float[]){-2});
    minus->dtype = DTYPE_INT64;
    Bytes m = written(minus);
    const unsigned char minus_two[8] = {0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    ck_assert(memcmp(m.bytes + 128, minus_two, 8) == 0);
}
END_TEST

START_TEST(test_one_and_zero_dims) {
    // Python's tuple syntax: (5,) for one dim, () for none.
    Tensor *v = tensor_from(shape1(5), (float[]){0.5f, -2.5f, 1e-8f, 30000.0f, -0.0f});
    Bytes file = written(v);
    assert_header(file, "{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }", 118);
    assert_float_data(file, 128, v->data, 5);

    Tensor *scalar = full((Shape){.ndim = 0}, 3.5f);
    Bytes s = written(scalar);
    assert_header(s, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }", 118);
    assert_float_data(s, 128, (float[]){3.5f}, 1);

    Bytes empty = written(zeros(shape2(0, 3)));
    assert_header(empty, "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 3), }", 118);
    ck_assert_uint_eq(empty.length, 128);
}
END_TEST

START_TEST(test_views_written_in_logical_order) {
    // arange(6).view(2, 3).t() is [[0 3] [1 4] [2 5]]; the storage is 0..5.
    Tensor *base = zeros(shape2(2, 3));
    for (int i = 0; i < 6; i++) {
        base->data[i] = (float)i;
    }
    Bytes file = written(transpose(base, 0, 1));
    assert_header(file, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }", 118);
    assert_float_data(file, 128, (float[]){0, 3, 1, 4, 2, 5}, 6);
    // A stride-0 view writes its repeats, a narrowed one only its window.
    Tensor *row = tensor_from(shape2(1, 2), (float[]){7, 8});
    assert_float_data(written(expand(row, shape2(2, 2))), 128, (float[]){7, 8, 7, 8}, 4);
    assert_float_data(written(narrow(base, 1, 1, 2)), 128, (float[]){1, 2, 4, 5}, 4);
}
END_TEST

// Five dims: a longer dict (69 characters), still padded to start the data at 128.
START_TEST(test_padding_five_dims) {
    Tensor *t = zeros(shape5(1, 2, 1, 3, 1));
    Bytes file = written(t);
    assert_header(file,
                  "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2, 1, 3, 1), }", 118);
    ck_assert_uint_eq(file.length, 128 + 6 * 4);
}
END_TEST

// --- round trip and errors -------------------------------------------------------------

START_TEST(test_round_trip) {
    const char *dir = make_temp_dir();
    // Special values survive bit for bit: -0, inf, nan, the smallest subnormal.
    Tensor *t = tensor_from(shape2(2, 3), (float[]){-0.0f, INFINITY, -INFINITY, NAN, 1e-45f,
                                                    -123.456f});
    ck_assert(npy_write(path_join("%s/special.npy", dir), t));
    assert_bitwise_equal(load_npy(path_join("%s/special.npy", dir)), t, "special values");
    Tensor *q = quarters_3x2x4();
    ck_assert(npy_write(path_join("%s/q.npy", dir), permute(q, (int[]){2, 0, 1})));
    assert_bitwise_equal(load_npy(path_join("%s/q.npy", dir)), permute(q, (int[]){2, 0, 1}),
                         "permuted view");
    Tensor *mask = tensor_from(shape2(2, 2), (float[]){1, 0, 1, 1});
    mask->dtype = DTYPE_INT64;
    ck_assert(npy_write(path_join("%s/mask.npy", dir), mask));
    Tensor *back = load_npy(path_join("%s/mask.npy", dir));
    ck_assert_int_eq(back->dtype, DTYPE_INT64);
    assert_bitwise_equal(back, mask, "int64 mask");
    remove_dir(dir);
}
END_TEST

START_TEST(test_unwritable_path) {
    Tensor *t = zeros(shape1(2));
    errno = 0;
    ck_assert(!npy_write("/nonexistent-attn-dir/t.npy", t));
    ck_assert_int_eq(errno, ENOENT);
    const char *dir = make_temp_dir();
    ck_assert(!npy_write(dir, t));   // a directory is not a file
    remove_dir(dir);
    ck_assert_int_ne(access(dir, F_OK), 0);
}
END_TEST

// --- against numpy ------------------------------------------------------------------------

START_TEST(test_same_bytes_as_numpy) {
    Tensor *mask = zeros(shape2(4, 4));   // np.tril(np.ones((4, 4), dtype=np.int64))
    for (int t = 0; t < 4; t++) {
        for (int s = 0; s <= t; s++) {
            *at2(mask, t, s) = 1.0f;
        }
    }
    mask->dtype = DTYPE_INT64;
    Tensor *base = zeros(shape2(2, 3));
    for (int i = 0; i < 6; i++) {
        base->data[i] = (float)i;
    }
    struct {
        const char *name;
        const Tensor *t;
    } cases[] = {
        {"float_3x2x4", quarters_3x2x4()},
        {"mask_int64_4x4", mask},
        {"vector_5", tensor_from(shape1(5), (float[]){0.5f, -2.5f, 1e-8f, 30000.0f, -0.0f})},
        {"scalar", full((Shape){.ndim = 0}, 3.5f)},
        {"transposed_3x2", transpose(base, 0, 1)},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        Bytes numpy_file = read_bytes(path_join(NPY_DIR "/%s.npy", cases[i].name));
        // numpy pads to 64 as well: its data starts at 128 for all of these.
        ck_assert_int_eq((10 + (numpy_file.bytes[8] | (numpy_file.bytes[9] << 8))) % 64, 0);
        assert_same_bytes(written(cases[i].t), numpy_file, cases[i].name);
    }
}
END_TEST

static Suite *npy_suite(void) {
    Suite *suite = suite_create("npy");
    TCase *by_hand = new_tcase("headers and data");
    tcase_add_test(by_hand, test_float_3x2x4);
    tcase_add_test(by_hand, test_int64_mask);
    tcase_add_test(by_hand, test_one_and_zero_dims);
    tcase_add_test(by_hand, test_views_written_in_logical_order);
    tcase_add_test(by_hand, test_padding_five_dims);
    suite_add_tcase(suite, by_hand);
    TCase *files = new_tcase("files");
    tcase_add_test(files, test_round_trip);
    tcase_add_test(files, test_unwritable_path);
    tcase_add_test(files, test_same_bytes_as_numpy);
    suite_add_tcase(suite, files);
    return suite;
}

int main(void) { return run_suite(npy_suite()); }
