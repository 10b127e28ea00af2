/* p4kit-switch's native data plane: the part every generated module shares.

   The generated module (cgen.py) #includes this text after defining the program's sizes:
   NFIELDS (header fields of all instances, flattened), NHEADERS, MAXKEY (key fields of the
   widest table), MAXARGS (parameters of the widest action), NTABLES, NREGS, NCOUNTERS.

   Why a table runtime of its own: the control plane keeps its entries in Python (tables.py), and
   the lookups here must not call back into Python. The Python side hands each table's entries over
   whole (set_table) whenever a control-plane call may have changed them; lookups then read plain C
   arrays. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* ABI_H */

typedef unsigned __int128 u128;

static inline uint64_t mask_w(unsigned w) { return w >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << w) - 1); }
static inline uint64_t shl64(uint64_t a, uint64_t b) { return b >= 64 ? 0 : a << b; }
static inline uint64_t shr64(uint64_t a, uint64_t b) { return b >= 64 ? 0 : a >> b; }

/* Whole bytes, most significant first: the fields that start on a byte and are 8, 16, 32 or 64 bits
   wide (most of a real program's) skip the bit loops below. The calls' offsets and widths are
   constants in the generated code, so inlined the compiler keeps only one of these paths per field
   (always_inline: a wide header's hundreds of calls would otherwise make it give up inlining, and
   every call would pay for both paths). */
static inline __attribute__((always_inline)) uint64_t load_be(const uint8_t *p, unsigned nbytes) {
    uint64_t v = 0;
    for (unsigned i = 0; i < nbytes; i++) v = (v << 8) | p[i];
    return v;
}

static inline __attribute__((always_inline)) void store_be(uint8_t *p, unsigned nbytes, uint64_t v) {
    for (int i = (int)nbytes - 1; i >= 0; i--) {
        p[i] = (uint8_t)v;
        v >>= 8;
    }
}

static inline __attribute__((always_inline)) int whole_bytes(unsigned bo, unsigned w) {
    return !(bo & 7) && (w == 8 || w == 16 || w == 32 || w == 64);
}

/* Bits [bo, bo + w) of p, most significant first (w <= 64). */
static inline __attribute__((always_inline)) uint64_t get_bits(const uint8_t *p, unsigned bo, unsigned w) {
    if (whole_bytes(bo, w)) return load_be(p + (bo >> 3), w >> 3);
    p += bo >> 3;
    bo &= 7;
    unsigned nb = (bo + w + 7) >> 3;
    u128 acc = 0;
    for (unsigned i = 0; i < nb; i++) acc = (acc << 8) | p[i];
    acc >>= (nb * 8 - bo - w);
    return (uint64_t)acc & mask_w(w);
}

/* OR v's low w bits into bits [bo, bo + w) of p (the buffer starts zeroed, so a field of whole bytes,
   which shares none of them, is simply stored). */
static inline __attribute__((always_inline)) void put_bits(uint8_t *p, unsigned bo, unsigned w, uint64_t v) {
    if (whole_bytes(bo, w)) {
        store_be(p + (bo >> 3), w >> 3, v);
        return;
    }
    p += bo >> 3;
    bo &= 7;
    unsigned nb = (bo + w + 7) >> 3;
    unsigned sh = nb * 8 - bo - w;
    u128 acc = ((u128)(v & mask_w(w))) << sh;
    for (int i = (int)nb - 1; i >= 0; i--) {
        p[i] |= (uint8_t)acc;
        acc >>= 8;
    }
}

/* One field of a csum16 input list at bit offset bo: a field that starts on a 16-bit word and fills
   whole words is added to the sum *s word by word; any other is written into the zeroed buffer b
   (hi: one past its last byte written so far), whose words csum_finish adds. Both give the sum of
   the words of the list laid out as one buffer, since the words a field does not touch are zero: the
   same checksum as writing every field and summing the whole buffer, without a wide header's
   thousand bytes written and read again. */
static inline __attribute__((always_inline)) void csum_field(uint8_t *b, unsigned *hi, uint64_t *s, unsigned bo,
                                                             unsigned w, uint64_t v) {
    if (!(bo & 15) && !(w & 15) && w <= 64) {
        for (unsigned k = 16; k <= w; k += 16) *s += (v >> (w - k)) & 0xFFFF;
        return;
    }
    put_bits(b, bo, w, v);
    unsigned end = (bo + w + 7) >> 3;
    if (end > *hi) *hi = end;
}

/* The checksum of the sum s plus the words of b's first hi bytes (an odd last byte is a word's high
   half). */
static inline uint64_t csum_finish(const uint8_t *b, unsigned hi, uint64_t s) {
    unsigned i = 0;
    for (; i + 1 < hi; i += 2) s += ((uint64_t)b[i] << 8) | b[i + 1];
    if (i < hi) s += (uint64_t)b[i] << 8;
    while (s >> 16) s = (s & 0xFFFF) + (s >> 16);
    return (~s) & 0xFFFF;
}

/* The Internet checksum of nbits bits (zero-padded to whole 16-bit words), as BMv2's csum16. */
static inline uint64_t csum16_bits(const uint8_t *p, unsigned nbits) {
    return csum_finish(p, (nbits + 7) >> 3, 0);
}

/* The same sum fed in pieces of any length: `pos` counts the bytes so far, so each byte lands in
   the high or low half of its 16-bit word as it would in one buffer. */
static inline void csum_feed(uint64_t *s, size_t *pos, const uint8_t *p, size_t n) {
    uint64_t acc = *s;
    size_t i = 0;
    if ((*pos & 1) && n) {
        acc += p[0];
        i = 1;
    }
    for (; i + 1 < n; i += 2) acc += ((uint64_t)p[i] << 8) | p[i + 1];
    if (i < n) acc += (uint64_t)p[i] << 8;
    *pos += n;
    while (acc >> 32) acc = (acc & 0xFFFFFFFF) + (acc >> 32);
    *s = acc;
}

static inline uint64_t csum_fold(uint64_t s) {
    while (s >> 16) s = (s & 0xFFFF) + (s >> 16);
    return (~s) & 0xFFFF;
}

/* ---------------------------------------------------------------- packets */

typedef struct {
    uint64_t f[NFIELDS + 1];
    uint8_t v[NHEADERS + 1];
    uint32_t nx[NSTACKS + 1]; /* each header stack's next index (how many were extracted or pushed) */
} hdrs_t;

typedef struct {
    hdrs_t h;
    const uint8_t *data;
    Py_ssize_t dlen;
    Py_ssize_t off;
    uint64_t plen;
    int stop;          /* set by exit (1), a failed assert (2) or assume (3): the control ends */
} pkt_t;

/* ---------------------------------------------------------------- tables */

typedef struct {
    int action;        /* action id, -1: none */
    int nargs;
    uint64_t args[MAXARGS + 1];
    PyObject *counter; /* the entry's direct counter [packets, bytes] (a list), or NULL */
} ent_t;

typedef struct {
    uint64_t key[MAXKEY + 1];
    uint32_t ent;      /* index into ents, + 1; 0: empty slot */
} slot_t;

typedef struct {
    slot_t *slots;
    uint32_t cap;      /* a power of two */
} hmap_t;

typedef struct {
    uint64_t pmask;    /* the lpm field's prefix mask */
    hmap_t map;
} lpm_level_t;

typedef struct {
    uint64_t a[MAXKEY + 1], b[MAXKEY + 1];
    uint32_t ent;
} row_t;

typedef struct {
    int kind;          /* 0 keyless, 1 exact, 2 lpm, 3 rows (ternary, range, optional) */
    int nkeys;
    int lpm_pos;
    uint8_t is_range[MAXKEY + 1];
    ent_t *ents;
    uint32_t nents;
    hmap_t exact;
    lpm_level_t *levels;
    uint32_t nlevels;
    row_t *rows;
    uint32_t nrows;
    ent_t dflt;
} table_t;

typedef struct {
    uint32_t n;
    uint32_t *port, *rid;
} mgrp_t;

/* A hash calculation as hashes.py computes it: kind 1 a table-driven CRC (its Rocksoft parameters),
   2 identity (the first 8 bytes), 3 xor16, 4 csum16. */
typedef struct {
    int kind, width, refin, refout;
    uint64_t init, xorout, mask;
    uint64_t table[256];
} hashp_t;

/* One switch's data plane: a generated module serves every switch that runs its program, so all
   run-time state lives here, never in statics. */
typedef struct {
    PyObject_HEAD
    table_t tables[NTABLES + 1];
    uint64_t *reg[NREGS + 1];
    Py_ssize_t reg_n[NREGS + 1];
    Py_buffer reg_buf[NREGS + 1];
    uint64_t *ctp[NCOUNTERS + 1], *ctb[NCOUNTERS + 1];
    Py_ssize_t ct_n[NCOUNTERS + 1];
    Py_buffer ctp_buf[NCOUNTERS + 1], ctb_buf[NCOUNTERS + 1];
    mgrp_t *mgrps; /* indexed by group id */
    uint32_t nmgrps;
    hashp_t hashes[NHASHES + 1];
    uint64_t drop_port;
    hdrs_t init;   /* a new packet's headers: metadata valid, egress_spec as configured */
    volatile int stale; /* see pipe_entry_t (abi.h): tables owed (1), retired (2) */
    pipe_entry_t entry; /* what the native port loop calls (py_entry) */
} dp_t;

static void init_headers(hdrs_t *h, uint64_t egress_spec_init); /* generated */


static inline uint64_t hash_key(const uint64_t *k, int n) {
    uint64_t h = 0x9E3779B97F4A7C15ULL;
    for (int i = 0; i < n; i++) {
        h ^= k[i] + 0x9E3779B97F4A7C15ULL + (h << 6) + (h >> 2);
        h *= 0xFF51AFD7ED558CCDULL;
    }
    return h ^ (h >> 29);
}

static void hmap_free(hmap_t *m) {
    PyMem_Free(m->slots);
    m->slots = NULL;
    m->cap = 0;
}

static int hmap_init(hmap_t *m, uint32_t n) {
    uint32_t cap = 8;
    while (cap < 2 * n + 2) cap <<= 1;
    m->slots = PyMem_Calloc(cap, sizeof(slot_t));
    if (m->slots == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    m->cap = cap;
    return 0;
}

static void hmap_put(hmap_t *m, const uint64_t *k, int n, uint32_t ent) {
    uint32_t i = (uint32_t)hash_key(k, n) & (m->cap - 1);
    while (m->slots[i].ent) {
        if (memcmp(m->slots[i].key, k, (size_t)n * 8) == 0) {
            m->slots[i].ent = ent; /* the later entry of two with one key: Python's dict does the same */
            return;
        }
        i = (i + 1) & (m->cap - 1);
    }
    memcpy(m->slots[i].key, k, (size_t)n * 8);
    m->slots[i].ent = ent;
}

static inline ent_t *hmap_get(const table_t *t, const hmap_t *m, const uint64_t *k, int n) {
    if (m->cap == 0) return NULL;
    uint32_t i = (uint32_t)hash_key(k, n) & (m->cap - 1);
    for (;;) {
        const slot_t *s = &m->slots[i];
        if (!s->ent) return NULL;
        int same = 1;
        for (int j = 0; j < n; j++)
            if (s->key[j] != k[j]) { same = 0; break; }
        if (same) return &t->ents[s->ent - 1];
        i = (i + 1) & (m->cap - 1);
    }
}

static void table_clear(table_t *t) {
    for (uint32_t i = 0; i < t->nents; i++) Py_XDECREF(t->ents[i].counter);
    PyMem_Free(t->ents);
    t->ents = NULL;
    t->nents = 0;
    hmap_free(&t->exact);
    for (uint32_t i = 0; i < t->nlevels; i++) hmap_free(&t->levels[i].map);
    PyMem_Free(t->levels);
    t->levels = NULL;
    t->nlevels = 0;
    PyMem_Free(t->rows);
    t->rows = NULL;
    t->nrows = 0;
}

static inline ent_t *table_lookup(const table_t *t, const uint64_t *k) {
    int n = t->nkeys;
    if (t->kind == 1) return hmap_get(t, &t->exact, k, n);
    if (t->kind == 2) {
        uint64_t mk[MAXKEY + 1];
        memcpy(mk, k, (size_t)n * 8);
        for (uint32_t l = 0; l < t->nlevels; l++) {
            mk[t->lpm_pos] = k[t->lpm_pos] & t->levels[l].pmask;
            ent_t *e = hmap_get(t, &t->levels[l].map, mk, n);
            if (e != NULL) return e;
        }
        return NULL;
    }
    if (t->kind == 3) {
        for (uint32_t r = 0; r < t->nrows; r++) {
            const row_t *row = &t->rows[r];
            int ok = 1;
            for (int j = 0; j < n && ok; j++) {
                if (t->is_range[j])
                    ok = row->a[j] <= k[j] && k[j] <= row->b[j];
                else
                    ok = (k[j] & row->b[j]) == row->a[j];
            }
            if (ok) return &t->ents[row->ent];
        }
    }
    return NULL;
}

/* A direct counter's hit: the entry's [packets, bytes] list, which the control plane reads. */
static void count_direct(PyObject *c, uint64_t plen) {
    if (c == NULL || !PyList_Check(c) || PyList_GET_SIZE(c) < 2) return;
    for (int i = 0; i < 2; i++) {
        PyObject *old = PyList_GET_ITEM(c, i);
        unsigned long long v = PyLong_AsUnsignedLongLong(old);
        if (v == (unsigned long long)-1 && PyErr_Occurred()) {
            PyErr_Clear();
            return;
        }
        PyObject *nv = PyLong_FromUnsignedLongLong(v + (i == 0 ? 1 : plen));
        if (nv == NULL) {
            PyErr_Clear();
            return;
        }
        PyList_SetItem(c, i, nv); /* steals nv, releases old */
    }
}

static int u64_of(PyObject *o, uint64_t *out) {
    unsigned long long v = PyLong_AsUnsignedLongLongMask(o);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) return -1;
    *out = v;
    return 0;
}

/* (action id, args tuple, counter or None) into e */
static int ent_of(PyObject *act, PyObject *args, PyObject *counter, ent_t *e) {
    long a = PyLong_AsLong(act);
    if (a == -1 && PyErr_Occurred()) return -1;
    e->action = (int)a;
    if (!PyTuple_Check(args) || PyTuple_GET_SIZE(args) > MAXARGS) {
        PyErr_SetString(PyExc_ValueError, "action arguments must be a tuple that fits the program");
        return -1;
    }
    e->nargs = (int)PyTuple_GET_SIZE(args);
    for (int i = 0; i < e->nargs; i++)
        if (u64_of(PyTuple_GET_ITEM(args, i), &e->args[i]) < 0) return -1;
    e->counter = NULL;
    if (counter != Py_None) {
        Py_INCREF(counter);
        e->counter = counter;
    }
    return 0;
}

static int key_of(PyObject *seq, uint64_t *k, int n) {
    if (!PyTuple_Check(seq) || PyTuple_GET_SIZE(seq) != n) {
        PyErr_SetString(PyExc_ValueError, "a table key must be a tuple of the table's key fields");
        return -1;
    }
    for (int i = 0; i < n; i++)
        if (u64_of(PyTuple_GET_ITEM(seq, i), &k[i]) < 0) return -1;
    return 0;
}

/* set_table(tid, default, exact_or_levels_or_rows)
     default: (action, args)
     kind 1: [(key tuple, action, args, counter)]
     kind 2: [(prefix mask, [(masked key tuple, action, args, counter)]) ...] longest prefix first
     kind 3: [(a tuple, b tuple, action, args, counter)] best first */
static PyObject *py_set_table(PyObject *self, PyObject *const *argv, Py_ssize_t argc) {
    dp_t *D = (dp_t *)self;
    if (argc != 3) {
        PyErr_SetString(PyExc_TypeError, "set_table(tid, default, entries)");
        return NULL;
    }
    long tid = PyLong_AsLong(argv[0]);
    if (tid < 0 || tid >= NTABLES) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_IndexError, "no such table");
        return NULL;
    }
    table_t *t = &D->tables[tid];
    PyObject *dflt = argv[1], *items = argv[2];
    if (!PyTuple_Check(dflt) || PyTuple_GET_SIZE(dflt) != 2 || !PyList_Check(items)) {
        PyErr_SetString(PyExc_TypeError, "set_table: default must be (action, args), entries a list");
        return NULL;
    }
    table_clear(t);
    if (ent_of(PyTuple_GET_ITEM(dflt, 0), PyTuple_GET_ITEM(dflt, 1), Py_None, &t->dflt) < 0) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(items);
    int nk = t->nkeys;
    if (t->kind == 0) Py_RETURN_NONE;
    uint32_t total = 0;
    if (t->kind == 2) {
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *lv = PyList_GET_ITEM(items, i);
            if (!PyTuple_Check(lv) || PyTuple_GET_SIZE(lv) != 2 || !PyList_Check(PyTuple_GET_ITEM(lv, 1))) {
                PyErr_SetString(PyExc_TypeError, "set_table: an lpm level is (mask, entries)");
                return NULL;
            }
            total += (uint32_t)PyList_GET_SIZE(PyTuple_GET_ITEM(lv, 1));
        }
    } else {
        total = (uint32_t)n;
    }
    t->ents = PyMem_Calloc(total + 1, sizeof(ent_t));
    if (t->ents == NULL) return PyErr_NoMemory();
    uint64_t key[MAXKEY + 1];
    if (t->kind == 1) {
        if (hmap_init(&t->exact, total) < 0) return NULL;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *it = PyList_GET_ITEM(items, i);
            if (!PyTuple_Check(it) || PyTuple_GET_SIZE(it) != 4) goto bad;
            if (key_of(PyTuple_GET_ITEM(it, 0), key, nk) < 0) goto fail;
            if (ent_of(PyTuple_GET_ITEM(it, 1), PyTuple_GET_ITEM(it, 2), PyTuple_GET_ITEM(it, 3),
                       &t->ents[t->nents]) < 0) goto fail;
            t->nents++;
            hmap_put(&t->exact, key, nk, t->nents);
        }
    } else if (t->kind == 2) {
        t->levels = PyMem_Calloc((size_t)n + 1, sizeof(lpm_level_t));
        if (t->levels == NULL) return PyErr_NoMemory();
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *lv = PyList_GET_ITEM(items, i);
            PyObject *es = PyTuple_GET_ITEM(lv, 1);
            lpm_level_t *L = &t->levels[t->nlevels++];
            if (u64_of(PyTuple_GET_ITEM(lv, 0), &L->pmask) < 0) goto fail;
            Py_ssize_t m = PyList_GET_SIZE(es);
            if (hmap_init(&L->map, (uint32_t)m) < 0) goto fail;
            for (Py_ssize_t j = 0; j < m; j++) {
                PyObject *it = PyList_GET_ITEM(es, j);
                if (!PyTuple_Check(it) || PyTuple_GET_SIZE(it) != 4) goto bad;
                if (key_of(PyTuple_GET_ITEM(it, 0), key, nk) < 0) goto fail;
                if (ent_of(PyTuple_GET_ITEM(it, 1), PyTuple_GET_ITEM(it, 2), PyTuple_GET_ITEM(it, 3),
                           &t->ents[t->nents]) < 0) goto fail;
                t->nents++;
                hmap_put(&L->map, key, nk, t->nents);
            }
        }
    } else {
        t->rows = PyMem_Calloc(total + 1, sizeof(row_t));
        if (t->rows == NULL) return PyErr_NoMemory();
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *it = PyList_GET_ITEM(items, i);
            if (!PyTuple_Check(it) || PyTuple_GET_SIZE(it) != 5) goto bad;
            row_t *r = &t->rows[t->nrows];
            if (key_of(PyTuple_GET_ITEM(it, 0), r->a, nk) < 0) goto fail;
            if (key_of(PyTuple_GET_ITEM(it, 1), r->b, nk) < 0) goto fail;
            if (ent_of(PyTuple_GET_ITEM(it, 2), PyTuple_GET_ITEM(it, 3), PyTuple_GET_ITEM(it, 4),
                       &t->ents[t->nents]) < 0) goto fail;
            r->ent = t->nents++;
            t->nrows++;
        }
    }
    Py_RETURN_NONE;
bad:
    PyErr_SetString(PyExc_TypeError, "set_table: malformed entry");
fail:
    table_clear(t);
    return NULL;
}

/* ---------------------------------------------------------------- registers and counters */

static int take_buffer(PyObject *o, Py_buffer *b, uint64_t **ptr, Py_ssize_t *n) {
    if (b->obj != NULL) PyBuffer_Release(b);
    if (PyObject_GetBuffer(o, b, PyBUF_WRITABLE | PyBUF_FORMAT) < 0) return -1;
    if (b->itemsize != 8 || b->format == NULL || strcmp(b->format, "Q") != 0) {
        PyBuffer_Release(b);
        PyErr_SetString(PyExc_TypeError, "a register or counter array must hold unsigned 64-bit cells");
        return -1;
    }
    *ptr = (uint64_t *)b->buf;
    *n = b->len / 8;
    return 0;
}

/* bind_arrays(registers, counter_packets, counter_bytes): lists of array('Q') in the program's order */
static PyObject *py_bind_arrays(PyObject *self, PyObject *const *argv, Py_ssize_t argc) {
    dp_t *D = (dp_t *)self;
    if (argc != 3 || !PyList_Check(argv[0]) || !PyList_Check(argv[1]) || !PyList_Check(argv[2]) ||
        PyList_GET_SIZE(argv[0]) != NREGS || PyList_GET_SIZE(argv[1]) != NCOUNTERS ||
        PyList_GET_SIZE(argv[2]) != NCOUNTERS) {
        PyErr_SetString(PyExc_TypeError, "bind_arrays(registers, counter_packets, counter_bytes)");
        return NULL;
    }
    for (int i = 0; i < NREGS; i++)
        if (take_buffer(PyList_GET_ITEM(argv[0], i), &D->reg_buf[i], &D->reg[i], &D->reg_n[i]) < 0)
            return NULL;
    for (int i = 0; i < NCOUNTERS; i++) {
        Py_ssize_t n2;
        if (take_buffer(PyList_GET_ITEM(argv[1], i), &D->ctp_buf[i], &D->ctp[i], &D->ct_n[i]) < 0)
            return NULL;
        if (take_buffer(PyList_GET_ITEM(argv[2], i), &D->ctb_buf[i], &D->ctb[i], &n2) < 0) return NULL;
        if (n2 < D->ct_n[i]) D->ct_n[i] = n2;
    }
    Py_RETURN_NONE;
}

/* ---------------------------------------------------------------- multicast groups */

static void mgrps_clear(dp_t *D) {
    for (uint32_t i = 0; i < D->nmgrps; i++) {
        PyMem_Free(D->mgrps[i].port);
        PyMem_Free(D->mgrps[i].rid);
    }
    PyMem_Free(D->mgrps);
    D->mgrps = NULL;
    D->nmgrps = 0;
}

/* set_groups({group id: ((port, rid), ...)}) */
static PyObject *py_set_groups(PyObject *self, PyObject *arg) {
    dp_t *D = (dp_t *)self;
    if (!PyDict_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "set_groups takes a dict");
        return NULL;
    }
    mgrps_clear(D);
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    long top = -1;
    while (PyDict_Next(arg, &pos, &k, &v)) {
        long g = PyLong_AsLong(k);
        if (g < 0 || g > 0xFFFF) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "multicast group id out of range");
            return NULL;
        }
        if (g > top) top = g;
    }
    if (top < 0) Py_RETURN_NONE;
    D->mgrps = PyMem_Calloc((size_t)top + 1, sizeof(mgrp_t));
    if (D->mgrps == NULL) return PyErr_NoMemory();
    D->nmgrps = (uint32_t)top + 1;
    pos = 0;
    while (PyDict_Next(arg, &pos, &k, &v)) {
        long g = PyLong_AsLong(k);
        PyObject *seq = PySequence_Fast(v, "replicas must be a sequence");
        if (seq == NULL) return NULL;
        Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
        mgrp_t *m = &D->mgrps[g];
        m->port = PyMem_Calloc((size_t)n + 1, sizeof(uint32_t));
        m->rid = PyMem_Calloc((size_t)n + 1, sizeof(uint32_t));
        if (m->port == NULL || m->rid == NULL) {
            Py_DECREF(seq);
            return PyErr_NoMemory();
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *pr = PySequence_Fast_GET_ITEM(seq, i);
            if (!PyTuple_Check(pr) || PyTuple_GET_SIZE(pr) != 2) {
                Py_DECREF(seq);
                PyErr_SetString(PyExc_TypeError, "a replica is (port, rid)");
                return NULL;
            }
            m->port[i] = (uint32_t)PyLong_AsUnsignedLongMask(PyTuple_GET_ITEM(pr, 0));
            m->rid[i] = (uint32_t)PyLong_AsUnsignedLongMask(PyTuple_GET_ITEM(pr, 1));
        }
        m->n = (uint32_t)n;
        Py_DECREF(seq);
    }
    Py_RETURN_NONE;
}

/* ---------------------------------------------------------------- outputs */

/* Why outputs go through a sink: from Python (process_batch) they become a list of (port, bytes) and
   drops a list of (code, value), so the Python side words drop reasons as the Python engine does and
   applies sinks and packet-in; the native port loop (portio.c) writes them into its transmit rings
   and delay lines instead (abi.h). */
static int emit_out(PyObject *outs, uint64_t port, PyObject *bytes) {
    if (bytes == NULL) return -1;
    PyObject *p = PyLong_FromUnsignedLongLong(port);
    if (p == NULL) {
        Py_DECREF(bytes);
        return -1;
    }
    PyObject *t = PyTuple_New(2);
    if (t == NULL) {
        Py_DECREF(p);
        Py_DECREF(bytes);
        return -1;
    }
    PyTuple_SET_ITEM(t, 0, p);
    PyTuple_SET_ITEM(t, 1, bytes);
    int r = PyList_Append((PyObject *)outs, t);
    Py_DECREF(t);
    return r;
}

static int emit_drop(sink_t *S, long code, uint64_t value) {
    if (S->drops == NULL) {
        S->drop(S, code, value);
        return 0;
    }
    PyObject *t = Py_BuildValue("(lK)", code, (unsigned long long)value);
    if (t == NULL) return -1;
    int r = PyList_Append((PyObject *)S->drops, t);
    Py_DECREF(t);
    return r;
}

/* Room for an output frame of `len` bytes: a new bytes object (Python sink, *obj set) or the
   sink's own buffer; NULL with *obj NULL and no exception: the sink has no room (the copy is lost). */
static uint8_t *out_room(sink_t *S, Py_ssize_t len, PyObject **obj) {
    *obj = NULL;
    if (S->outs == NULL) return S->reserve(S, (int64_t)len);
    *obj = PyBytes_FromStringAndSize(NULL, len);
    return *obj == NULL ? NULL : (uint8_t *)PyBytes_AS_STRING(*obj);
}

static int out_done(sink_t *S, uint64_t port, Py_ssize_t len, PyObject *obj) {
    if (S->outs == NULL) {
        S->commit(S, port, (int64_t)len);
        return 0;
    }
    return emit_out((PyObject *)S->outs, port, obj);
}

enum { DROP_IN = 1, DROP_OUT = 2, DROP_NO_REPLICAS = 3, DROP_ASSERT = 4 };

/* configure(drop_port, egress_spec_init) */
static PyObject *py_configure(PyObject *self, PyObject *const *argv, Py_ssize_t argc) {
    dp_t *D = (dp_t *)self;
    if (argc != 2) {
        PyErr_SetString(PyExc_TypeError, "configure(drop_port, egress_spec_init)");
        return NULL;
    }
    uint64_t es;
    if (u64_of(argv[0], &D->drop_port) < 0 || u64_of(argv[1], &es) < 0) return NULL;
    init_headers(&D->init, es);
    Py_RETURN_NONE;
}

static void dp_dealloc(PyObject *self) {
    dp_t *D = (dp_t *)self;
    for (int i = 0; i < NTABLES; i++) {
        table_clear(&D->tables[i]);
        Py_XDECREF(D->tables[i].dflt.counter);
    }
    for (int i = 0; i < NREGS; i++)
        if (D->reg_buf[i].obj != NULL) PyBuffer_Release(&D->reg_buf[i]);
    for (int i = 0; i < NCOUNTERS; i++) {
        if (D->ctp_buf[i].obj != NULL) PyBuffer_Release(&D->ctp_buf[i]);
        if (D->ctb_buf[i].obj != NULL) PyBuffer_Release(&D->ctb_buf[i]);
    }
    mgrps_clear(D);
    Py_TYPE(self)->tp_free(self);
}

static uint64_t reflect_bits(uint64_t v, int w) {
    uint64_t r = 0;
    for (int i = 0; i < w; i++) {
        r = (r << 1) | (v & 1);
        v >>= 1;
    }
    return r;
}

static uint64_t hash_bytes(const hashp_t *h, const uint8_t *p, size_t n) {
    switch (h->kind) {
    case 1: {
        uint64_t crc;
        if (h->refin) {
            crc = reflect_bits(h->init, h->width);
            for (size_t i = 0; i < n; i++) crc = (crc >> 8) ^ h->table[(crc ^ p[i]) & 0xFF];
            if (!h->refout) crc = reflect_bits(crc, h->width);
        } else {
            int sh = h->width - 8;
            crc = h->init;
            for (size_t i = 0; i < n; i++) crc = ((crc << 8) & h->mask) ^ h->table[((crc >> sh) ^ p[i]) & 0xFF];
            if (h->refout) crc = reflect_bits(crc, h->width);
        }
        return (crc ^ h->xorout) & h->mask;
    }
    case 2: {
        uint64_t v = 0;
        for (size_t i = 0; i < n && i < 8; i++) v = (v << 8) | p[i];
        return v;
    }
    case 3: {
        uint64_t v = 0;
        for (size_t i = 0; i < n; i += 2) v ^= ((uint64_t)p[i] << 8) | (i + 1 < n ? p[i + 1] : 0);
        return v;
    }
    case 4:
        return csum16_bits(p, (unsigned)(n * 8));
    default:
        return 0;
    }
}

/* set_hash(slot, kind, width, refin, refout, init, xorout, table: 256 ints or ()) */
static PyObject *py_set_hash(PyObject *self, PyObject *const *argv, Py_ssize_t argc) {
    dp_t *D = (dp_t *)self;
    if (argc != 8) {
        PyErr_SetString(PyExc_TypeError, "set_hash(slot, kind, width, refin, refout, init, xorout, table)");
        return NULL;
    }
    long slot = PyLong_AsLong(argv[0]);
    if (slot < 0 || slot >= NHASHES) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_IndexError, "no such hash slot");
        return NULL;
    }
    hashp_t *h = &D->hashes[slot];
    uint64_t v[6];
    for (int i = 0; i < 6; i++)
        if (u64_of(argv[1 + i], &v[i]) < 0) return NULL;
    if (v[1] < 8 || v[1] > 64) {
        PyErr_SetString(PyExc_ValueError, "a CRC's width must be 8..64 bits");
        return NULL;
    }
    h->kind = (int)v[0];
    h->width = (int)v[1];
    h->refin = (int)v[2];
    h->refout = (int)v[3];
    h->init = v[4];
    h->xorout = v[5];
    h->mask = mask_w((unsigned)h->width);
    PyObject *seq = PySequence_Fast(argv[7], "table must be a sequence");
    if (seq == NULL) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (h->kind == 1 && n != 256) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_ValueError, "a CRC table has 256 entries");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n && i < 256; i++)
        if (u64_of(PySequence_Fast_GET_ITEM(seq, i), &h->table[i]) < 0) {
            Py_DECREF(seq);
            return NULL;
        }
    Py_DECREF(seq);
    Py_RETURN_NONE;
}
