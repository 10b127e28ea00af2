/* A worker's per-packet I/O in C: its new chunks out (sendmmsg), its results in (recvmmsg).

   Why: on nine sites eighteen workers share two cores with nine switches, and a worker's Python
   costs several microseconds per packet: building each header with struct, slicing and joining
   bytes, one send() or recv_into() call with its exception handling, and parsing and checking each
   result's header field by field. This module does that mechanical part for a batch at a time and
   leaves every decision to edge/worker.py (ReduceStream): which chunks may go now (window, pace,
   slots), and what a new result means (loss detection, RTT samples, the pace). Repairs, copies and
   sparse rows still go through the Python path, packet by packet.

   `ChunkIO(fd, wire, result, done, out_index, ...)`: `fd` a connected, non-blocking UDP socket (to
   the switch's INC port: the kernel drops datagrams from anywhere else, so no source check is made
   here), `wire` every row in wire order (row i is bytes [i * row_bytes, (i + 1) * row_bytes)),
   `result` the stream's rows of native uint32 words, `done` one byte per row, `out_index` an int64
   buffer of at least 64 entries that the new results' rows are written to, and the stream's
   constants (ChunkIO_init; `first` is the stream's first chunk number, below `space`).

   send(index, n, flags=0) -> sent: rows index .. index + n - 1 as contributions sent once (the first
   transmission: no F_RETRANSMIT; `flags` F_URGENT for the call's last chunks), in order; fewer than n
   when the socket's buffer is full (or an ICMP error of an earlier datagram is reported on this one),
   as the Python path's transmit returns False.

   receive() -> (new, duplicates, rejected, bytes, drained, now, bad_index, bad_count): every datagram
   waiting, checked as ReduceStream.receive checks a dense result (docs/protocol.md), each new result's
   words written into its row, its `done` byte set and its row appended to out_index. `now` is
   CLOCK_MONOTONIC (time.monotonic()) when the last batch was read. `drained` is 0 when out_index
   filled up first (call again). A result summing the wrong number of contributions stops the batch:
   bad_index is then its row and bad_count its count (else -1), and the caller raises. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define BATCH 64
#define SLOT 2048 /* a receive buffer per datagram: a wide result is 1048 bytes */
#define HEADER_LEN 24
#define FRAME_OVERHEAD 42 /* Ethernet, IPv4 and UDP in front of every INC payload */
#define INC_VERSION 2
#define F_RESULT 0x01
#define F_VERSION 0x04
#define F_URGENT 0x08
#define FMT_WIDE32 3
#define FMT_WIDE16 4
#define FMT_EMPTY 5
#define FMT_LAST 5

typedef struct {
    PyObject_HEAD
    int fd;
    Py_buffer wire, result, done, out;
    int have_wire, have_result, have_done, have_out;
    long long first, groups, space, nslots, total, row_bytes, words, reply_len;
    long long tenant, round, kind, epoch, fmt, reply_fmt, workers;
    uint8_t headers[BATCH][HEADER_LEN];
    uint8_t *rx; /* BATCH receive slots */
} chunkio_t;

static long packet_len(int fmt) {
    if (fmt == FMT_EMPTY) return HEADER_LEN;
    return (fmt == FMT_WIDE32 || fmt == FMT_WIDE16) ? HEADER_LEN + 4 * 256 : HEADER_LEN + 4 * 64;
}

static void put16(uint8_t *p, unsigned v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static void put32(uint8_t *p, uint32_t v) { uint32_t n = htonl(v); memcpy(p, &n, 4); }
static unsigned get16(const uint8_t *p) { return ((unsigned)p[0] << 8) | p[1]; }
static uint32_t get32(const uint8_t *p) { uint32_t n; memcpy(&n, p, 4); return ntohl(n); }

static void release(chunkio_t *S) {
    if (S->have_wire) PyBuffer_Release(&S->wire);
    if (S->have_result) PyBuffer_Release(&S->result);
    if (S->have_done) PyBuffer_Release(&S->done);
    if (S->have_out) PyBuffer_Release(&S->out);
    S->have_wire = S->have_result = S->have_done = S->have_out = 0;
}

static int ChunkIO_init(PyObject *self, PyObject *args, PyObject *kw) {
    chunkio_t *S = (chunkio_t *)self;
    static char *names[] = {"fd", "wire", "result", "done", "out_index", "first", "groups", "space",
                            "nslots", "total", "row_bytes", "tenant", "round", "kind", "epoch", "fmt",
                            "reply_fmt", "workers", NULL};
    PyObject *wire, *result, *done, *out;
    release(S);
    if (!PyArg_ParseTupleAndKeywords(args, kw, "iOOOOLLLLLLLLLLLLL", names, &S->fd, &wire, &result, &done,
                                     &out, &S->first, &S->groups, &S->space, &S->nslots, &S->total,
                                     &S->row_bytes, &S->tenant, &S->round, &S->kind, &S->epoch, &S->fmt,
                                     &S->reply_fmt, &S->workers))
        return -1;
    if (S->groups < 1 || S->nslots < 1 || S->space < 1 || S->total < 0 || S->row_bytes < 0 ||
        S->reply_fmt < 0 || S->reply_fmt > FMT_LAST || S->reply_fmt == FMT_EMPTY) {
        PyErr_SetString(PyExc_ValueError, "ChunkIO: invalid stream parameters");
        return -1;
    }
    S->reply_len = packet_len((int)S->reply_fmt);
    S->words = (S->reply_len - HEADER_LEN) / 4;
    if (PyObject_GetBuffer(wire, &S->wire, PyBUF_SIMPLE) < 0) return -1;
    S->have_wire = 1;
    if (PyObject_GetBuffer(result, &S->result, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) return -1;
    S->have_result = 1;
    if (PyObject_GetBuffer(done, &S->done, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) return -1;
    S->have_done = 1;
    if (PyObject_GetBuffer(out, &S->out, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) return -1;
    S->have_out = 1;
    if (S->wire.len < S->total * S->row_bytes || S->result.len < S->total * S->words * 4 ||
        S->done.len < S->total || S->out.len < 8 * BATCH) {
        PyErr_SetString(PyExc_ValueError, "ChunkIO: a buffer is smaller than the stream's rows");
        return -1;
    }
    if (S->rx == NULL) S->rx = PyMem_Malloc((size_t)BATCH * SLOT);
    if (S->rx == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

/* the transport is full, or an ICMP error of an earlier datagram was reported on this one */
static int transient(int e) { return e == EAGAIN || e == EWOULDBLOCK || e == EINTR || e == ECONNREFUSED; }

static PyObject *ChunkIO_send(PyObject *self, PyObject *args) {
    chunkio_t *S = (chunkio_t *)self;
    long long index, n;
    int flags = 0; /* added to every header's (F_URGENT for the call's last chunks) */
    if (!PyArg_ParseTuple(args, "LL|i", &index, &n, &flags)) return NULL;
    if (index < 0 || n < 0 || index + n > S->total) {
        PyErr_SetString(PyExc_IndexError, "ChunkIO.send: rows outside the stream");
        return NULL;
    }
    if (flags & ~F_URGENT) {
        PyErr_SetString(PyExc_ValueError, "ChunkIO.send: only F_URGENT may be added to a first transmission");
        return NULL;
    }
    struct mmsghdr msgs[BATCH];
    struct iovec iov[BATCH][2];
    long long sent = 0;
    const uint8_t *wire = (const uint8_t *)S->wire.buf;
    while (sent < n) {
        int k = (int)(n - sent < BATCH ? n - sent : BATCH);
        for (int m = 0; m < k; m++) {
            long long i = index + sent + m;
            long long chunk = (S->first + S->groups * i) % S->space;
            long long slot = chunk % S->nslots, copy = (chunk / S->nslots) % 2;
            uint8_t *h = S->headers[m];
            h[0] = INC_VERSION;
            h[1] = (uint8_t)S->kind;
            h[2] = (uint8_t)((copy ? F_VERSION : 0) | flags);
            h[3] = 0; /* sender */
            put16(h + 4, (unsigned)S->tenant);
            put16(h + 6, (unsigned)S->round);
            put16(h + 8, (unsigned)slot);
            put16(h + 10, 1); /* count: one contribution */
            put32(h + 12, (uint32_t)chunk);
            put32(h + 16, (uint32_t)S->epoch);
            h[20] = 0; /* exponent */
            h[21] = (uint8_t)S->fmt;
            h[22] = h[23] = 0;
            iov[m][0].iov_base = h;
            iov[m][0].iov_len = HEADER_LEN;
            iov[m][1].iov_base = (void *)(wire + i * S->row_bytes);
            iov[m][1].iov_len = (size_t)S->row_bytes;
            memset(&msgs[m].msg_hdr, 0, sizeof(msgs[m].msg_hdr));
            msgs[m].msg_hdr.msg_iov = iov[m];
            msgs[m].msg_hdr.msg_iovlen = 2;
        }
        int r = sendmmsg(S->fd, msgs, (unsigned)k, MSG_DONTWAIT);
        if (r < 0) {
            if (transient(errno)) break;
            return PyErr_SetFromErrno(PyExc_OSError);
        }
        sent += r;
        if (r < k) break;
    }
    return PyLong_FromLongLong(sent);
}

static double monotonic(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static PyObject *ChunkIO_receive(PyObject *self, PyObject *unused) {
    chunkio_t *S = (chunkio_t *)self;
    struct mmsghdr msgs[BATCH];
    struct iovec iov[BATCH];
    long long fresh = 0, duplicates = 0, rejected = 0, bytes = 0, bad_index = -1, bad_count = -1;
    long long cap = S->out.len / 8;
    int64_t *out = (int64_t *)S->out.buf;
    uint8_t *done = (uint8_t *)S->done.buf;
    uint32_t *result = (uint32_t *)S->result.buf;
    int drained = 0;
    double now = monotonic();
    while (fresh + BATCH <= cap && bad_index < 0) {
        for (int m = 0; m < BATCH; m++) {
            iov[m].iov_base = S->rx + (size_t)m * SLOT;
            iov[m].iov_len = SLOT;
            memset(&msgs[m].msg_hdr, 0, sizeof(msgs[m].msg_hdr));
            msgs[m].msg_hdr.msg_iov = &iov[m];
            msgs[m].msg_hdr.msg_iovlen = 1;
        }
        int r = recvmmsg(S->fd, msgs, BATCH, MSG_DONTWAIT, NULL);
        if (r < 0) {
            if (errno == ECONNREFUSED || errno == EINTR) continue; /* an ICMP error, not a datagram */
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                drained = 1;
                break;
            }
            return PyErr_SetFromErrno(PyExc_OSError);
        }
        now = monotonic();
        for (int m = 0; m < r; m++) {
            const uint8_t *p = S->rx + (size_t)m * SLOT;
            long size = (long)msgs[m].msg_len;
            bytes += size + FRAME_OVERHEAD;
            if (size != S->reply_len) {
                rejected++;
                continue;
            }
            int version = p[0], kind = p[1], flags = p[2], fmt = p[21];
            long long tenant = get16(p + 4), rnd = get16(p + 6), slot_no = get16(p + 8);
            long long count = get16(p + 10), chunk = get32(p + 12), epoch = get32(p + 16);
            if (version != INC_VERSION || fmt > FMT_LAST || size != packet_len(fmt) || !(flags & F_RESULT) ||
                tenant != S->tenant || epoch != S->epoch) {
                rejected++;
                continue;
            }
            long long ahead = chunk < S->space ? (chunk - S->first + S->space) % S->space : -1;
            long long index = (ahead >= 0 && ahead % S->groups == 0) ? ahead / S->groups : -1;
            if (rnd != S->round || kind != S->kind || fmt != S->reply_fmt || index < 0 || index >= S->total ||
                done[index]) {
                duplicates++; /* a late copy: of this call, or of an earlier one */
                continue;
            }
            long long slot = chunk % S->nslots, copy = (chunk / S->nslots) % 2;
            if (slot_no != slot || ((flags & F_VERSION) != 0) != (copy != 0)) {
                rejected++;
                continue;
            }
            if (count != S->workers) {
                bad_index = index;
                bad_count = count;
                break;
            }
            uint32_t *row = result + index * S->words;
            for (long long w = 0; w < S->words; w++) row[w] = get32(p + HEADER_LEN + 4 * w);
            done[index] = 1;
            out[fresh++] = index;
        }
        if (r < BATCH && bad_index < 0) {
            drained = 1; /* fewer than asked: the socket had no more */
            break;
        }
    }
    return Py_BuildValue("LLLLidLL", fresh, duplicates, rejected, bytes, drained, now, bad_index, bad_count);
}

static PyMethodDef ChunkIO_methods[] = {
    {"send", ChunkIO_send, METH_VARARGS,
     "send(index, n, flags=0) -> rows sent (their first transmission; flags: 0 or F_URGENT)"},
    {"receive", ChunkIO_receive, METH_NOARGS,
     "receive() -> (new, duplicates, rejected, bytes, drained, now, bad_index, bad_count)"},
    {NULL, NULL, 0, NULL},
};

static void ChunkIO_dealloc(PyObject *self) {
    chunkio_t *S = (chunkio_t *)self;
    release(S);
    PyMem_Free(S->rx);
    Py_TYPE(self)->tp_free(self);
}

static PyTypeObject ChunkIOType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "MODNAME.ChunkIO",
    .tp_basicsize = sizeof(chunkio_t),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = ChunkIO_init,
    .tp_dealloc = ChunkIO_dealloc,
    .tp_methods = ChunkIO_methods,
    .tp_doc = "a worker stream's new chunks out and results in, a batch at a time",
};

static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT, "MODNAME", NULL, -1, NULL, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_MODNAME(void) {
    if (PyType_Ready(&ChunkIOType) < 0) return NULL;
    PyObject *m = PyModule_Create(&moddef);
    if (m == NULL) return NULL;
    Py_INCREF(&ChunkIOType);
    if (PyModule_AddObject(m, "ChunkIO", (PyObject *)&ChunkIOType) < 0) {
        Py_DECREF(&ChunkIOType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
