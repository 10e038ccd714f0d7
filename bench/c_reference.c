/* Plain C loops the benchmarks compare kafkaproto against (built by bench/conftest.py). */
#include <stdint.h>
#include <stddef.h>

/* zig-zag varints (32-bit) from buf into out; returns how many were read, -1 on a bad one. */
long ref_decode_varints(const unsigned char *buf, size_t n, int32_t *out, size_t cap) {
    size_t pos = 0, k = 0;
    while (pos < n && k < cap) {
        uint32_t v = 0;
        int shift = 0;
        for (;;) {
            if (pos >= n || shift > 28) return -1;
            unsigned char b = buf[pos++];
            v |= (uint32_t)(b & 0x7f) << shift;
            if (!(b & 0x80)) break;
            shift += 7;
        }
        out[k++] = (int32_t)((v >> 1) ^ (0u - (v & 1)));
    }
    return (long)k;
}

/* size-prefixed frames: body offsets and sizes; returns the frame count (consumed in *end). */
long ref_split_frames(const unsigned char *buf, size_t n, int64_t *starts, int32_t *sizes, size_t cap,
                      int64_t *end) {
    size_t pos = 0, k = 0;
    while (pos + 4 <= n && k < cap) {
        int32_t size = (int32_t)(((uint32_t)buf[pos] << 24) | ((uint32_t)buf[pos + 1] << 16) |
                                 ((uint32_t)buf[pos + 2] << 8) | buf[pos + 3]);
        if (size < 0 || (size_t)size > n - pos - 4) break;
        starts[k] = (int64_t)(pos + 4);
        sizes[k] = size;
        k++;
        pos += 4 + (size_t)size;
    }
    *end = (int64_t)pos;
    return (long)k;
}
