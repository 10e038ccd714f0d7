/* A plain C reference for records → Arrow columns (built by bench/bench_arrow.py).
 *
 * One v2 record batch: CRC32C of the batch (SSE4.2 instruction when the CPU
 * has it, as the crc32c package uses), then every record into Arrow-style
 * columns: key and value (int64 offsets + bytes, null when length -1),
 * offset, timestamp in microseconds, header list offsets, header keys (UTF-8
 * checked: ASCII fast path) and values.  The caller gives buffers big enough
 * (the records' byte size bounds every column).
 *
 * ref_records_kvot: the projected reference (offset, timestamp, key, value
 * only), allocating its buffers per call as the decoder must.
 */
#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static uint32_t crc_table[8][256];
static int crc_ready;

static void crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++) crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xFF];
    crc_ready = 1;
}

static uint32_t crc32c_soft(const unsigned char *p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    if (!crc_ready) crc_init();
    while (n--) c = (c >> 8) ^ crc_table[0][(c ^ *p++) & 0xFF];
    return c ^ 0xFFFFFFFFu;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2")))
static uint32_t crc32c_hw(const unsigned char *p, size_t n) {
    uint64_t c = 0xFFFFFFFFu;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c = __builtin_ia32_crc32di(c, w);
        p += 8;
        n -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    while (n--) c32 = __builtin_ia32_crc32qi(c32, *p++);
    return c32 ^ 0xFFFFFFFFu;
}
#endif

static uint32_t crc32c(const unsigned char *p, size_t n) {
#if defined(__x86_64__)
    if (__builtin_cpu_supports("sse4.2")) return crc32c_hw(p, n);
#endif
    return crc32c_soft(p, n);
}

static inline uint32_t ld32(const unsigned char *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}
static inline uint64_t ld64(const unsigned char *p) { return ((uint64_t)ld32(p) << 32) | ld32(p + 4); }

/* unsigned varint (at most 10 bytes); -1 on a bad one */
static inline int uvar(const unsigned char *b, size_t *pos, size_t end, uint64_t *out) {
    uint64_t v = 0;
    int shift = 0;
    for (;;) {
        if (*pos >= end || shift > 63) return -1;
        unsigned char x = b[(*pos)++];
        v |= (uint64_t)(x & 0x7F) << shift;
        if (!(x & 0x80)) break;
        shift += 7;
    }
    *out = v;
    return 0;
}
static inline int64_t unzig(uint64_t u) { return (int64_t)((u >> 1) ^ (0 - (u & 1))); }

static inline int ascii_or_utf8(const unsigned char *p, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (p[i] & 0x80) return 0; /* the reference only takes ASCII keys */
    return 1;
}

typedef struct {
    int64_t *koffs; unsigned char *kvalid; unsigned char *kdata;
    int64_t *voffs; unsigned char *vvalid; unsigned char *vdata;
    int64_t *offset; int64_t *ts;
    int64_t *hoffs; int64_t *hkoffs; unsigned char *hkdata; int64_t *hvoffs; unsigned char *hvdata;
} ref_columns;

/* batch: one whole v2 batch (uncompressed), or NULL with recs given (records
   already decompressed); returns the record count, -1 if malformed, -2 on a CRC mismatch. */
long ref_records_to_columns(const unsigned char *batch, size_t batch_len, const unsigned char *recs, size_t n,
                            ref_columns *c) {
    if (batch_len < 61) return -1;
    if (ld32(batch + 17) != crc32c(batch + 21, batch_len - 21)) return -2;
    int64_t base_offset = (int64_t)ld64(batch);
    int64_t base_ts = (int64_t)ld64(batch + 27);
    int32_t count = (int32_t)ld32(batch + 57);
    if (recs == NULL) {
        recs = batch + 61;
        n = batch_len - 61;
    }
    size_t pos = 0;
    int64_t kl = 0, vl = 0, hk = 0, hv = 0, hn = 0;
    c->koffs[0] = c->voffs[0] = c->hoffs[0] = c->hkoffs[0] = c->hvoffs[0] = 0;
    for (int32_t i = 0; i < count; i++) {
        uint64_t u;
        if (uvar(recs, &pos, n, &u)) return -1;
        int64_t len = unzig(u);
        if (len < 0 || (size_t)len > n - pos) return -1;
        size_t rend = pos + (size_t)len;
        pos++; /* attributes */
        if (uvar(recs, &pos, rend, &u)) return -1;
        int64_t tsd = unzig(u);
        if (uvar(recs, &pos, rend, &u)) return -1;
        int64_t od = unzig(u);
        if (uvar(recs, &pos, rend, &u)) return -1;
        int64_t klen = unzig(u);
        if (klen < -1 || klen > (int64_t)(rend - pos)) return -1;
        c->kvalid[i] = klen >= 0;
        if (klen > 0) { memcpy(c->kdata + kl, recs + pos, (size_t)klen); kl += klen; pos += (size_t)klen; }
        c->koffs[i + 1] = kl;
        if (uvar(recs, &pos, rend, &u)) return -1;
        int64_t vlen = unzig(u);
        if (vlen < -1 || vlen > (int64_t)(rend - pos)) return -1;
        c->vvalid[i] = vlen >= 0;
        if (vlen > 0) { memcpy(c->vdata + vl, recs + pos, (size_t)vlen); vl += vlen; pos += (size_t)vlen; }
        c->voffs[i + 1] = vl;
        if (uvar(recs, &pos, rend, &u)) return -1;
        int64_t hc = unzig(u);
        if (hc < 0 || hc > (int64_t)(rend - pos)) return -1;
        for (int64_t j = 0; j < hc; j++) {
            if (uvar(recs, &pos, rend, &u)) return -1;
            int64_t l = unzig(u);
            if (l < 0 || l > (int64_t)(rend - pos) || !ascii_or_utf8(recs + pos, l)) return -1;
            memcpy(c->hkdata + hk, recs + pos, (size_t)l); hk += l; pos += (size_t)l;
            c->hkoffs[hn + 1] = hk;
            if (uvar(recs, &pos, rend, &u)) return -1;
            l = unzig(u);
            if (l < -1 || l > (int64_t)(rend - pos)) return -1;
            if (l > 0) { memcpy(c->hvdata + hv, recs + pos, (size_t)l); hv += l; pos += (size_t)l; }
            c->hvoffs[hn + 1] = hv;
            hn++;
        }
        c->hoffs[i + 1] = hn;
        if (pos != rend) return -1;
        c->offset[i] = base_offset + od;
        c->ts[i] = (base_ts + tsd) * 1000;
    }
    return pos == n ? count : -1;
}

/* The projected reference: exactly the columns offset, timestamp, key and
 * value (validity bitmap + int64 offsets + bytes for key and value), in
 * buffers it allocates per call, sized from the batch (count, the records'
 * bytes), as the decoder must; the caller frees them with ref_free_kvot. */
typedef struct {
    int64_t *offset; int64_t *ts;
    unsigned char *kvalid; int64_t *koffs; unsigned char *kdata;
    unsigned char *vvalid; int64_t *voffs; unsigned char *vdata;
} ref_kvot;

void ref_free_kvot(ref_kvot *c) {
    free(c->offset); free(c->ts);
    free(c->kvalid); free(c->koffs); free(c->kdata);
    free(c->vvalid); free(c->voffs); free(c->vdata);
    memset(c, 0, sizeof(*c));
}

long ref_records_kvot(const unsigned char *batch, size_t batch_len, const unsigned char *recs, size_t n,
                      ref_kvot *c) {
    if (batch_len < 61) return -1;
    if (ld32(batch + 17) != crc32c(batch + 21, batch_len - 21)) return -2;
    int64_t base_offset = (int64_t)ld64(batch);
    int64_t base_ts = (int64_t)ld64(batch + 27);
    int32_t count = (int32_t)ld32(batch + 57);
    if (count < 0) return -1;
    if (recs == NULL) {
        recs = batch + 61;
        n = batch_len - 61;
    }
    size_t bits = ((size_t)count + 7) / 8;
    c->offset = malloc((size_t)count * 8 + 8);
    c->ts = malloc((size_t)count * 8 + 8);
    c->kvalid = calloc(bits + 1, 1);
    c->vvalid = calloc(bits + 1, 1);
    c->koffs = malloc(((size_t)count + 1) * 8);
    c->voffs = malloc(((size_t)count + 1) * 8);
    c->kdata = malloc(n + 1);
    c->vdata = malloc(n + 1);
    if (!c->offset || !c->ts || !c->kvalid || !c->vvalid || !c->koffs || !c->voffs || !c->kdata || !c->vdata)
        return -3;
    size_t pos = 0;
    int64_t kl = 0, vl = 0;
    c->koffs[0] = c->voffs[0] = 0;
    for (int32_t i = 0; i < count; i++) {
        uint64_t u;
        if (uvar(recs, &pos, n, &u)) return -1;
        int64_t len = unzig(u);
        if (len < 0 || (size_t)len > n - pos) return -1;
        size_t rend = pos + (size_t)len;
        pos++; /* attributes */
        if (uvar(recs, &pos, rend, &u)) return -1;
        int64_t tsd = unzig(u);
        if (uvar(recs, &pos, rend, &u)) return -1;
        int64_t od = unzig(u);
        if (uvar(recs, &pos, rend, &u)) return -1;
        int64_t klen = unzig(u);
        if (klen < -1 || klen > (int64_t)(rend - pos)) return -1;
        if (klen >= 0) c->kvalid[i >> 3] |= (unsigned char)(1u << (i & 7));
        if (klen > 0) { memcpy(c->kdata + kl, recs + pos, (size_t)klen); kl += klen; pos += (size_t)klen; }
        c->koffs[i + 1] = kl;
        if (uvar(recs, &pos, rend, &u)) return -1;
        int64_t vlen = unzig(u);
        if (vlen < -1 || vlen > (int64_t)(rend - pos)) return -1;
        if (vlen >= 0) c->vvalid[i >> 3] |= (unsigned char)(1u << (i & 7));
        if (vlen > 0) { memcpy(c->vdata + vl, recs + pos, (size_t)vlen); vl += vlen; pos += (size_t)vlen; }
        c->voffs[i + 1] = vl;
        /* headers: walked (varints, lengths and key text checked, as the decoder must), not stored */
        if (uvar(recs, &pos, rend, &u)) return -1;
        int64_t hc = unzig(u);
        if (hc < 0 || hc > (int64_t)(rend - pos)) return -1;
        for (int64_t j = 0; j < hc; j++) {
            if (uvar(recs, &pos, rend, &u)) return -1;
            int64_t l = unzig(u);
            if (l < 0 || l > (int64_t)(rend - pos) || !ascii_or_utf8(recs + pos, l)) return -1;
            pos += (size_t)l;
            if (uvar(recs, &pos, rend, &u)) return -1;
            l = unzig(u);
            if (l < -1 || l > (int64_t)(rend - pos)) return -1;
            if (l > 0) pos += (size_t)l;
        }
        if (pos != rend) return -1;
        c->offset[i] = base_offset + od;
        c->ts[i] = (base_ts + tsd) * 1000;
    }
    return pos == n ? count : -1;
}
