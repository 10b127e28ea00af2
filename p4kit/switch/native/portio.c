/* p4kit-switch's native port loop: receive rings -> a program's native pipeline -> link emulation
   -> transmit rings, in one C loop.

   Why: with the pipeline in C (the generated module), what is left of a switch's CPU per packet is
   the Python around it -- copying frames out of the receive ring, the port loop, the link
   emulator's lock, heap and timer thread, and a send() system call per delayed frame. This loop
   does the same work as ports.py + linkemu.py without them: the pipeline reads each frame where the
   kernel wrote it in the receive ring, an output goes straight into its port's transmit ring or,
   on an emulated link, into that link's delay line (a FIFO: departures on one link never reorder),
   and one send() per wake hands every queued frame of a ring to the kernel.

   The semantics are linkemu.py's: loss before the queue, a rate-limited FIFO with a packet limit
   (tail drop), then the delay (and a uniform jitter that never reorders), the switch's own time
   counted against the delay (a frame's clock is the time its batch was read). A departure is sent
   at the first wake at or after its time, never before; the loop wakes for departures at most
   every `grain` (the Python delay line's granularity).

   The loop holds the GIL while it runs packets (direct counters are Python lists; packet-in frames
   become bytes) and releases it while it sleeps and between batches. It returns to Python when
   something needs Python: a frame for the CPU port, an interrupt (a packet-out to inject, a frame
   from another thread, stop), a data plane whose tables are owed a hand-over (or retired), or an
   idle timeout. ports.py decides when it runs (PortLoop, "native port loop"). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* ABI_H */

#define MAXPORTS 512
#define BATCH 256
#define TX_DATA_OFFSET 32 /* TPACKET2_HDRLEN - sizeof(struct sockaddr_ll) */
#define VNET_HDR_LEN 10
#define SCRATCH (65536 + 4096)

enum { R_IDLE = 0, R_WAKE = 1, R_STALE = 2, R_CPU = 3 };

typedef struct {
    uint64_t depart;
    uint32_t len;
    uint8_t *data;
} qent_t;

typedef struct {
    int number;
    /* receive ring */
    int rx_fd;
    uint8_t *rx_mm;
    uint32_t rx_frames, rx_fsize, rx_slot;
    Py_buffer rx_buf;
    /* transmit ring (on a socket of its own) and the plain socket for what does not fit */
    int tx_fd, plain_fd;
    uint8_t *tx_mm;
    uint32_t tx_frames, tx_fsize, tx_slot, tx_pending, tx_off;
    int vnet;
    Py_buffer tx_buf;
    /* the link: zero values are "not applied", as in LinkParams */
    int shaped, timed;
    double loss, ns_per_byte;
    uint64_t delay, jitter;
    uint32_t qlimit;
    uint64_t busy_until, last_depart;
    uint64_t *fin; /* when each packet still queued finishes serialising (ring of qlimit) */
    uint32_t fin_head, fin_n;
    qent_t *q;     /* the delay line: frames in departure order */
    uint32_t q_cap, q_head, q_n;
    uint64_t rng;
    /* statistics (PortStats, LinkStats) */
    uint64_t rx, tx, tx_errors, truncated, submitted, sent, lost, tail_dropped;
    uint64_t rx_errors; /* errors the receive socket reported (the interface went down, ...) */
    int last_error;     /* the latest of them (errno) */
} cport_t;

typedef struct {
    PyObject_HEAD
    cport_t *ports;
    int nports;
    int16_t index[MAXPORTS]; /* port number -> ports[], -1: no interface */
    int wake_fd;
    uint64_t grain;
    volatile int interrupt;
    uint64_t failures, drops;
    /* the call in progress */
    sink_t sink;
    uint8_t *scratch;
    uint64_t clock;    /* the frame's clock (ns): its batch's receive time */
    uint64_t ingress;  /* the frame's ingress port (for packet-in) */
    long cpu_port;
    PyObject *cpu;     /* [(ingress port, frame)] for the CPU port, or NULL */
    int cpu_error;
} pio_t;

static inline uint64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline double rnd01(uint64_t *s) { /* splitmix64 */
    uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    z ^= z >> 31;
    return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}

/* ---------------------------------------------------------------- transmit */

static void tx_flush(cport_t *p) {
    if (p->tx_pending) {
        p->tx_pending = 0;
        if (send(p->tx_fd, NULL, 0, 0) < 0) p->tx_errors++;
    }
}

static void tx_put(cport_t *p, const uint8_t *frame, uint32_t n) {
    if (n <= p->tx_fsize - p->tx_off) {
        uint8_t *slot = p->tx_mm + (size_t)p->tx_slot * p->tx_fsize;
        uint32_t *w = (uint32_t *)slot;
        uint32_t st = __atomic_load_n(&w[0], __ATOMIC_ACQUIRE);
        if (st != TP_STATUS_AVAILABLE) {
            if (st == TP_STATUS_WRONG_FORMAT) __atomic_store_n(&w[0], TP_STATUS_AVAILABLE, __ATOMIC_RELEASE);
            tx_flush(p);
            st = __atomic_load_n(&w[0], __ATOMIC_ACQUIRE);
        }
        if (st == TP_STATUS_AVAILABLE) {
            memcpy(slot + p->tx_off, frame, n);
            if (p->vnet) {
                uint16_t hl = (uint16_t)n;
                memcpy(slot + TX_DATA_OFFSET + 2, &hl, 2); /* virtio_net_hdr.hdr_len: one linear copy */
                w[1] = w[2] = n + VNET_HDR_LEN;
            } else {
                w[1] = w[2] = n;
            }
            __atomic_store_n(&w[0], TP_STATUS_SEND_REQUEST, __ATOMIC_RELEASE);
            p->tx_pending++;
            p->tx_slot = p->tx_slot + 1 == p->tx_frames ? 0 : p->tx_slot + 1;
            p->tx++;
            return;
        }
    }
    /* too big for a slot, or the ring is jammed: after what the ring holds, by send() */
    tx_flush(p);
    if (send(p->plain_fd, frame, n, 0) < 0)
        p->tx_errors++;
    else
        p->tx++;
}

/* ---------------------------------------------------------------- the link */

static int q_push(cport_t *p, uint64_t depart, const uint8_t *frame, uint32_t n) {
    if (p->q_n == p->q_cap) {
        uint32_t cap = p->q_cap ? p->q_cap * 2 : 1024;
        qent_t *nq = malloc(sizeof(qent_t) * cap);
        if (nq == NULL) return -1;
        for (uint32_t i = 0; i < p->q_n; i++) nq[i] = p->q[(p->q_head + i) % p->q_cap];
        free(p->q);
        p->q = nq;
        p->q_cap = cap;
        p->q_head = 0;
    }
    uint8_t *d = malloc(n ? n : 1);
    if (d == NULL) return -1;
    memcpy(d, frame, n);
    qent_t *e = &p->q[(p->q_head + p->q_n) % p->q_cap];
    e->depart = depart;
    e->len = n;
    e->data = d;
    p->q_n++;
    return 0;
}

/* One frame out of port p at the frame's clock `now`: loss, the rate's queue, the delay. */
static void submit(cport_t *p, const uint8_t *frame, uint32_t n, uint64_t now) {
    if (!p->shaped) {
        tx_put(p, frame, n);
        return;
    }
    p->submitted++;
    if (p->loss > 0 && rnd01(&p->rng) < p->loss) {
        p->lost++;
        return;
    }
    if (!p->timed) {
        tx_put(p, frame, n);
        p->sent++;
        return;
    }
    uint64_t depart = now;
    if (p->ns_per_byte > 0) {
        while (p->fin_n && p->fin[p->fin_head] <= now) {
            p->fin_head = p->fin_head + 1 == p->qlimit ? 0 : p->fin_head + 1;
            p->fin_n--;
        }
        if (p->fin_n >= p->qlimit) {
            p->tail_dropped++;
            return;
        }
        uint64_t start = p->busy_until > now ? p->busy_until : now;
        depart = p->busy_until = start + (uint64_t)((double)n * p->ns_per_byte);
        p->fin[(p->fin_head + p->fin_n) % p->qlimit] = depart;
        p->fin_n++;
    }
    depart += p->delay;
    if (p->jitter) {
        double j = (rnd01(&p->rng) * 2.0 - 1.0) * (double)p->jitter;
        depart = (int64_t)depart + (int64_t)j > 0 ? (uint64_t)((int64_t)depart + (int64_t)j) : 0;
    }
    if (depart < p->last_depart) depart = p->last_depart; /* no reordering on one link */
    p->last_depart = depart;
    if (q_push(p, depart, frame, n) < 0) {
        p->tail_dropped++;
        return;
    }
    p->sent++;
}

/* Send every departure due at `now`; how many went. */
static int send_due(pio_t *S, uint64_t now) {
    int sent = 0;
    for (int i = 0; i < S->nports; i++) {
        cport_t *p = &S->ports[i];
        while (p->q_n && p->q[p->q_head].depart <= now) {
            qent_t *e = &p->q[p->q_head];
            tx_put(p, e->data, e->len);
            free(e->data);
            p->q_head = p->q_head + 1 == p->q_cap ? 0 : p->q_head + 1;
            p->q_n--;
            sent++;
        }
    }
    return sent;
}

static uint64_t next_departure(pio_t *S) {
    uint64_t t = UINT64_MAX;
    for (int i = 0; i < S->nports; i++) {
        cport_t *p = &S->ports[i];
        if (p->q_n && p->q[p->q_head].depart < t) t = p->q[p->q_head].depart;
    }
    return t;
}

static void flush_all(pio_t *S) {
    for (int i = 0; i < S->nports; i++) tx_flush(&S->ports[i]);
}

/* ---------------------------------------------------------------- the pipeline's sink */

static uint8_t *sink_reserve(sink_t *s, int64_t len) {
    pio_t *S = (pio_t *)s->ctx;
    return len <= SCRATCH ? S->scratch : NULL;
}

static void sink_commit(sink_t *s, uint64_t port, int64_t len) {
    pio_t *S = (pio_t *)s->ctx;
    if ((long)port == S->cpu_port) {
        if (S->cpu == NULL) S->cpu = PyList_New(0);
        PyObject *t = S->cpu ? Py_BuildValue("(Ky#)", (unsigned long long)S->ingress, (const char *)S->scratch,
                                             (Py_ssize_t)len)
                             : NULL;
        if (t == NULL || PyList_Append(S->cpu, t) < 0) {
            PyErr_Clear();
            S->cpu_error = 1;
        }
        Py_XDECREF(t);
        return;
    }
    if (port >= MAXPORTS || S->index[port] < 0) return; /* a port without an interface: dropped */
    submit(&S->ports[S->index[port]], S->scratch, (uint32_t)len, S->clock);
}

static void sink_drop(sink_t *s, long code, uint64_t value) {
    (void)code;
    (void)value;
    ((pio_t *)s->ctx)->drops++;
}

static int run_frame(pio_t *S, const pipe_entry_t *E, const uint8_t *data, uint32_t len, uint64_t port,
                     uint64_t t0) {
    S->ingress = port;
    uint64_t now_us = E->uses_time ? (S->clock - t0) / 1000 : 0;
    if (E->run(E->dp, data, len, port, now_us, &S->sink) < 0) {
        PyErr_Clear();
        S->failures++;
        return -1;
    }
    return 0;
}

/* Up to BATCH frames of port p's receive ring through the pipeline. */
static int read_batch(pio_t *S, cport_t *p, const pipe_entry_t *E, uint64_t t0) {
    int n = 0;
    S->clock = mono_ns();
    while (n < BATCH) {
        struct tpacket2_hdr *h = (struct tpacket2_hdr *)(p->rx_mm + (size_t)p->rx_slot * p->rx_fsize);
        uint32_t st = __atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE);
        if (!(st & TP_STATUS_USER)) break;
        if (h->tp_snaplen == h->tp_len) {
            p->rx++;
            run_frame(S, E, (const uint8_t *)h + h->tp_mac, h->tp_snaplen, (uint64_t)p->number, t0);
        } else {
            p->truncated++;
        }
        __atomic_store_n(&h->tp_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
        p->rx_slot = p->rx_slot + 1 == p->rx_frames ? 0 : p->rx_slot + 1;
        n++;
    }
    return n;
}

static const pipe_entry_t *entry_of(PyObject *cap) {
    const pipe_entry_t *E = PyCapsule_GetPointer(cap, PIPE_CAPSULE);
    if (E == NULL) return NULL;
    if (E->abi != PIPE_ABI) {
        PyErr_Format(PyExc_ValueError, "pipeline ABI %u, the port loop speaks %u", E->abi, PIPE_ABI);
        return NULL;
    }
    return E;
}

static PyObject *take_cpu(pio_t *S) {
    PyObject *l = S->cpu;
    S->cpu = NULL;
    if (l == NULL) return PyList_New(0);
    return l;
}

/* ---------------------------------------------------------------- methods */

/* A receive socket's pending error (ENETDOWN when its interface goes down or away) makes poll() report
   POLLERR until someone reads it, and nothing else clears it: without this the loop would wake at once
   forever, two cores busy for a switch whose veths Mininet is removing. Reading SO_ERROR clears it; the
   count and the errno reach PortStats (rx_errors), where the Python side logs them. */
static void take_errors(pio_t *S, struct pollfd *pfd) {
    for (int i = 0; i < S->nports; i++) {
        if (pfd[i].revents & POLLNVAL) { /* closed under us: poll it no more */
            pfd[i].fd = -1;
            continue;
        }
        if (!(pfd[i].revents & (POLLERR | POLLHUP))) continue;
        int err = 0;
        socklen_t len = sizeof err;
        if (getsockopt(pfd[i].fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err != 0) {
            S->ports[i].rx_errors++;
            S->ports[i].last_error = err;
        }
    }
}

/* run(entry, cpu_port, timeout_s, t0_ns) -> (reason, [(ingress, frame) for the CPU port]) */
static PyObject *py_run(PyObject *self, PyObject *const *argv, Py_ssize_t argc) {
    pio_t *S = (pio_t *)self;
    if (argc != 4) {
        PyErr_SetString(PyExc_TypeError, "run(entry, cpu_port, timeout_s, t0_ns)");
        return NULL;
    }
    const pipe_entry_t *E = entry_of(argv[0]);
    if (E == NULL) return NULL;
    long cpu = PyLong_AsLong(argv[1]);
    double timeout = PyFloat_AsDouble(argv[2]);
    unsigned long long t0 = PyLong_AsUnsignedLongLong(argv[3]);
    if (PyErr_Occurred()) return NULL;
    S->cpu_port = cpu;
    S->sink.ctx = S;
    struct pollfd *pfd = malloc(sizeof(struct pollfd) * (size_t)(S->nports + 1));
    if (pfd == NULL) return PyErr_NoMemory();
    for (int i = 0; i < S->nports; i++) {
        pfd[i].fd = S->ports[i].rx_fd;
        pfd[i].events = POLLIN;
    }
    pfd[S->nports].fd = S->wake_fd;
    pfd[S->nports].events = POLLIN;
    uint64_t deadline = mono_ns() + (uint64_t)(timeout * 1e9);
    uint64_t last_timer = 0;
    int reason = R_IDLE;
    for (;;) {
        if (*E->stale) {
            reason = R_STALE;
            break;
        }
        if (S->interrupt) {
            S->interrupt = 0;
            reason = R_WAKE;
            break;
        }
        int got = 0;
        for (int i = 0; i < S->nports; i++) got += read_batch(S, &S->ports[i], E, t0);
        uint64_t now = mono_ns();
        int sent = send_due(S, now);
        if (sent && !got) last_timer = now;
        flush_all(S);
        if (S->cpu != NULL) {
            reason = R_CPU;
            break;
        }
        if (got) {
            Py_BEGIN_ALLOW_THREADS /* let the control plane in between batches */
            Py_END_ALLOW_THREADS
            continue;
        }
        if (now >= deadline) break;
        uint64_t until = deadline;
        uint64_t next = next_departure(S);
        if (next != UINT64_MAX) {
            if (next < last_timer + S->grain) next = last_timer + S->grain;
            if (next < until) until = next;
        }
        uint64_t wait = until > now ? until - now : 0;
        struct timespec ts = {(time_t)(wait / 1000000000u), (long)(wait % 1000000000u)};
        int r;
        Py_BEGIN_ALLOW_THREADS
        r = ppoll(pfd, (nfds_t)(S->nports + 1), &ts, NULL);
        Py_END_ALLOW_THREADS
        if (r > 0) take_errors(S, pfd);
        if (r > 0 && (pfd[S->nports].revents & POLLIN)) {
            S->interrupt = 0;
            reason = R_WAKE;
            break;
        }
        if (r < 0 && errno != EINTR) {
            free(pfd);
            return PyErr_SetFromErrno(PyExc_OSError);
        }
    }
    free(pfd);
    flush_all(S);
    PyObject *cpu_frames = take_cpu(S);
    if (cpu_frames == NULL) return NULL;
    PyObject *res = Py_BuildValue("(iN)", reason, cpu_frames);
    return res;
}

/* process(entry, cpu_port, port, frames, t0_ns) -> [(ingress, frame) for the CPU port]: frames that did not
   come from a ring (packet-out), through the pipeline and out as the loop sends */
static PyObject *py_process(PyObject *self, PyObject *const *argv, Py_ssize_t argc) {
    pio_t *S = (pio_t *)self;
    if (argc != 5) {
        PyErr_SetString(PyExc_TypeError, "process(entry, cpu_port, port, frames, t0_ns)");
        return NULL;
    }
    const pipe_entry_t *E = entry_of(argv[0]);
    if (E == NULL) return NULL;
    long cpu = PyLong_AsLong(argv[1]);
    unsigned long long port = PyLong_AsUnsignedLongLong(argv[2]);
    unsigned long long t0 = PyLong_AsUnsignedLongLong(argv[4]);
    if (PyErr_Occurred()) return NULL;
    if (!PyList_Check(argv[3])) {
        PyErr_SetString(PyExc_TypeError, "frames must be a list of bytes");
        return NULL;
    }
    S->cpu_port = cpu;
    S->sink.ctx = S;
    S->clock = mono_ns();
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(argv[3]); i++) {
        PyObject *fr = PyList_GET_ITEM(argv[3], i);
        if (!PyBytes_Check(fr)) continue;
        run_frame(S, E, (const uint8_t *)PyBytes_AS_STRING(fr), (uint32_t)PyBytes_GET_SIZE(fr), port, t0);
    }
    send_due(S, mono_ns());
    flush_all(S);
    return take_cpu(S);
}

/* send(port, frame): out of `port` through its link (a frame another thread hands the loop) */
static PyObject *py_send(PyObject *self, PyObject *const *argv, Py_ssize_t argc) {
    pio_t *S = (pio_t *)self;
    if (argc != 2 || !PyBytes_Check(argv[1])) {
        PyErr_SetString(PyExc_TypeError, "send(port, frame: bytes)");
        return NULL;
    }
    long port = PyLong_AsLong(argv[0]);
    if (port == -1 && PyErr_Occurred()) return NULL;
    if (port < 0 || port >= MAXPORTS || S->index[port] < 0) Py_RETURN_FALSE;
    cport_t *p = &S->ports[S->index[port]];
    submit(p, (const uint8_t *)PyBytes_AS_STRING(argv[1]), (uint32_t)PyBytes_GET_SIZE(argv[1]), mono_ns());
    send_due(S, mono_ns());
    flush_all(S);
    Py_RETURN_TRUE;
}

static int get_buffer(PyObject *o, Py_buffer *b) {
    return PyObject_GetBuffer(o, b, PyBUF_WRITABLE | PyBUF_SIMPLE);
}

/* add_port(number, rx_fd, rx_mmap, rx_frames, rx_frame_size, tx_fd, tx_mmap, tx_frames,
            tx_frame_size, vnet, plain_fd) */
static PyObject *py_add_port(PyObject *self, PyObject *const *argv, Py_ssize_t argc) {
    pio_t *S = (pio_t *)self;
    if (argc != 11) {
        PyErr_SetString(PyExc_TypeError, "add_port(number, rx_fd, rx_mmap, rx_frames, rx_frame_size, "
                                         "tx_fd, tx_mmap, tx_frames, tx_frame_size, vnet, plain_fd)");
        return NULL;
    }
    long number = PyLong_AsLong(argv[0]);
    if (PyErr_Occurred()) return NULL;
    if (number < 0 || number >= MAXPORTS || S->index[number] >= 0) {
        PyErr_Format(PyExc_ValueError, "port %ld: out of range or added twice", number);
        return NULL;
    }
    cport_t *np = realloc(S->ports, sizeof(cport_t) * (size_t)(S->nports + 1));
    if (np == NULL) return PyErr_NoMemory();
    S->ports = np;
    cport_t *p = &S->ports[S->nports];
    memset(p, 0, sizeof *p);
    p->number = (int)number;
    p->rx_fd = (int)PyLong_AsLong(argv[1]);
    p->rx_frames = (uint32_t)PyLong_AsUnsignedLong(argv[3]);
    p->rx_fsize = (uint32_t)PyLong_AsUnsignedLong(argv[4]);
    p->tx_fd = (int)PyLong_AsLong(argv[5]);
    p->tx_frames = (uint32_t)PyLong_AsUnsignedLong(argv[7]);
    p->tx_fsize = (uint32_t)PyLong_AsUnsignedLong(argv[8]);
    p->vnet = PyObject_IsTrue(argv[9]);
    p->plain_fd = (int)PyLong_AsLong(argv[10]);
    if (PyErr_Occurred()) return NULL;
    p->tx_off = TX_DATA_OFFSET + (p->vnet ? VNET_HDR_LEN : 0);
    if (get_buffer(argv[2], &p->rx_buf) < 0) return NULL;
    if (get_buffer(argv[6], &p->tx_buf) < 0) {
        PyBuffer_Release(&p->rx_buf);
        return NULL;
    }
    if ((uint64_t)p->rx_frames * p->rx_fsize > (uint64_t)p->rx_buf.len ||
        (uint64_t)p->tx_frames * p->tx_fsize > (uint64_t)p->tx_buf.len || !p->rx_frames || !p->tx_frames) {
        PyBuffer_Release(&p->rx_buf);
        PyBuffer_Release(&p->tx_buf);
        PyErr_SetString(PyExc_ValueError, "ring geometry larger than its mapping");
        return NULL;
    }
    p->rx_mm = p->rx_buf.buf;
    p->tx_mm = p->tx_buf.buf;
    S->index[number] = (int16_t)S->nports;
    S->nports++;
    Py_RETURN_NONE;
}

static cport_t *port_arg(pio_t *S, PyObject *o) {
    long n = PyLong_AsLong(o);
    if (n == -1 && PyErr_Occurred()) return NULL;
    if (n < 0 || n >= MAXPORTS || S->index[n] < 0) {
        PyErr_Format(PyExc_KeyError, "port %ld has no interface here", n);
        return NULL;
    }
    return &S->ports[S->index[n]];
}

/* set_link(port, delay_s, jitter_s, rate_bytes_per_s, loss, queue_pkts, busy_until_s, last_depart_s,
            seed) */
static PyObject *py_set_link(PyObject *self, PyObject *const *argv, Py_ssize_t argc) {
    pio_t *S = (pio_t *)self;
    if (argc != 9) {
        PyErr_SetString(PyExc_TypeError, "set_link(port, delay_s, jitter_s, rate_Bps, loss, queue_pkts, "
                                         "busy_until_s, last_depart_s, seed)");
        return NULL;
    }
    cport_t *p = port_arg(S, argv[0]);
    if (p == NULL) return NULL;
    double delay = PyFloat_AsDouble(argv[1]), jitter = PyFloat_AsDouble(argv[2]);
    double rate = PyFloat_AsDouble(argv[3]), loss = PyFloat_AsDouble(argv[4]);
    long qlimit = PyLong_AsLong(argv[5]);
    double busy = PyFloat_AsDouble(argv[6]), last = PyFloat_AsDouble(argv[7]);
    unsigned long long seed = PyLong_AsUnsignedLongLong(argv[8]);
    if (PyErr_Occurred()) return NULL;
    if (qlimit < 1) qlimit = 1;
    uint64_t *fin = malloc(sizeof(uint64_t) * (size_t)qlimit);
    if (fin == NULL) return PyErr_NoMemory();
    free(p->fin);
    p->fin = fin;
    p->fin_head = p->fin_n = 0;
    p->qlimit = (uint32_t)qlimit;
    p->delay = (uint64_t)(delay * 1e9);
    p->jitter = (uint64_t)(jitter * 1e9);
    p->ns_per_byte = rate > 0 ? 1e9 / rate : 0.0;
    p->loss = loss;
    p->timed = delay > 0 || jitter > 0 || rate > 0;
    p->shaped = p->timed || loss > 0;
    p->busy_until = busy > 0 ? (uint64_t)(busy * 1e9) : 0;
    p->last_depart = last > 0 ? (uint64_t)(last * 1e9) : 0;
    p->rng = seed;
    Py_RETURN_NONE;
}

/* link_state(port) -> (busy_until_s, last_depart_s): the shaper's clock for the Python one */
static PyObject *py_link_state(PyObject *self, PyObject *arg) {
    cport_t *p = port_arg((pio_t *)self, arg);
    if (p == NULL) return NULL;
    return Py_BuildValue("(dd)", (double)p->busy_until / 1e9, (double)p->last_depart / 1e9);
}

/* set_slots(port, rx_slot, tx_slot) / slots(port) -> (rx_slot, tx_slot): the rings' positions,
   handed between this loop and the Python one */
static PyObject *py_set_slots(PyObject *self, PyObject *const *argv, Py_ssize_t argc) {
    if (argc != 3) {
        PyErr_SetString(PyExc_TypeError, "set_slots(port, rx_slot, tx_slot)");
        return NULL;
    }
    cport_t *p = port_arg((pio_t *)self, argv[0]);
    if (p == NULL) return NULL;
    unsigned long rx = PyLong_AsUnsignedLong(argv[1]), tx = PyLong_AsUnsignedLong(argv[2]);
    if (PyErr_Occurred()) return NULL;
    p->rx_slot = (uint32_t)(rx % p->rx_frames);
    p->tx_slot = (uint32_t)(tx % p->tx_frames);
    Py_RETURN_NONE;
}

static PyObject *py_slots(PyObject *self, PyObject *arg) {
    cport_t *p = port_arg((pio_t *)self, arg);
    if (p == NULL) return NULL;
    return Py_BuildValue("(II)", p->rx_slot, p->tx_slot);
}

/* take_pending() -> [(port, depart_s, frame)]: what the delay lines still hold, in departure order
   per port, and they are emptied (for the Python delay line when the Python loop takes over) */
static PyObject *py_take_pending(PyObject *self, PyObject *unused) {
    (void)unused;
    pio_t *S = (pio_t *)self;
    PyObject *l = PyList_New(0);
    if (l == NULL) return NULL;
    for (int i = 0; i < S->nports; i++) {
        cport_t *p = &S->ports[i];
        while (p->q_n) {
            qent_t *e = &p->q[p->q_head];
            PyObject *t = Py_BuildValue("(idy#)", p->number, (double)e->depart / 1e9, (const char *)e->data,
                                        (Py_ssize_t)e->len);
            free(e->data);
            p->q_head = p->q_head + 1 == p->q_cap ? 0 : p->q_head + 1;
            p->q_n--;
            if (t == NULL || PyList_Append(l, t) < 0) {
                Py_XDECREF(t);
                Py_DECREF(l);
                return NULL;
            }
            Py_DECREF(t);
        }
    }
    return l;
}

/* stats() -> [(port, rx, tx, tx_errors, truncated, submitted, sent, lost, tail_dropped, queued, rx_errors,
   last_error)] */
static PyObject *py_stats(PyObject *self, PyObject *unused) {
    (void)unused;
    pio_t *S = (pio_t *)self;
    PyObject *l = PyList_New(S->nports);
    if (l == NULL) return NULL;
    for (int i = 0; i < S->nports; i++) {
        cport_t *p = &S->ports[i];
        PyObject *t = Py_BuildValue("(iKKKKKKKKIKi)", p->number, (unsigned long long)p->rx,
                                    (unsigned long long)p->tx, (unsigned long long)p->tx_errors,
                                    (unsigned long long)p->truncated, (unsigned long long)p->submitted,
                                    (unsigned long long)p->sent, (unsigned long long)p->lost,
                                    (unsigned long long)p->tail_dropped, p->q_n,
                                    (unsigned long long)p->rx_errors, p->last_error);
        if (t == NULL) {
            Py_DECREF(l);
            return NULL;
        }
        PyList_SET_ITEM(l, i, t);
    }
    return l;
}

/* counts() -> (failures, drops): frames the pipeline raised on, frames it dropped */
static PyObject *py_counts(PyObject *self, PyObject *unused) {
    (void)unused;
    pio_t *S = (pio_t *)self;
    return Py_BuildValue("(KK)", (unsigned long long)S->failures, (unsigned long long)S->drops);
}

/* interrupt(): make run() return soon (any thread; the caller also writes the wake eventfd) */
static PyObject *py_interrupt(PyObject *self, PyObject *unused) {
    (void)unused;
    ((pio_t *)self)->interrupt = 1;
    Py_RETURN_NONE;
}

static void release_ports(pio_t *S) {
    for (int i = 0; i < S->nports; i++) {
        cport_t *p = &S->ports[i];
        PyBuffer_Release(&p->rx_buf);
        PyBuffer_Release(&p->tx_buf);
        for (uint32_t k = 0; k < p->q_n; k++) free(p->q[(p->q_head + k) % p->q_cap].data);
        free(p->q);
        free(p->fin);
    }
    free(S->ports);
    S->ports = NULL;
    S->nports = 0;
    for (int i = 0; i < MAXPORTS; i++) S->index[i] = -1;
}

/* close(): release the rings' mappings (before their sockets close) and what the delay lines hold */
static PyObject *py_close(PyObject *self, PyObject *unused) {
    (void)unused;
    release_ports((pio_t *)self);
    Py_RETURN_NONE;
}

static PyMethodDef pio_methods[] = {
    {"run", (PyCFunction)(void (*)(void))py_run, METH_FASTCALL, "run the ports until Python is needed"},
    {"process", (PyCFunction)(void (*)(void))py_process, METH_FASTCALL, "frames from Python through the pipeline"},
    {"send", (PyCFunction)(void (*)(void))py_send, METH_FASTCALL, "a frame out of a port through its link"},
    {"add_port", (PyCFunction)(void (*)(void))py_add_port, METH_FASTCALL, "a port's rings"},
    {"set_link", (PyCFunction)(void (*)(void))py_set_link, METH_FASTCALL, "a port's link emulation"},
    {"link_state", (PyCFunction)py_link_state, METH_O, "a link's serialisation and departure clocks"},
    {"set_slots", (PyCFunction)(void (*)(void))py_set_slots, METH_FASTCALL, "the rings' positions"},
    {"slots", (PyCFunction)py_slots, METH_O, "the rings' positions"},
    {"take_pending", (PyCFunction)py_take_pending, METH_NOARGS, "empty the delay lines"},
    {"stats", (PyCFunction)py_stats, METH_NOARGS, "per-port counters"},
    {"counts", (PyCFunction)py_counts, METH_NOARGS, "pipeline failures and drops"},
    {"interrupt", (PyCFunction)py_interrupt, METH_NOARGS, "make run() return"},
    {"close", (PyCFunction)py_close, METH_NOARGS, "release the rings"},
    {NULL, NULL, 0, NULL},
};

/* PortIO(wake_fd, grain_s) */
static PyObject *pio_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    (void)kw;
    int wake;
    double grain;
    if (!PyArg_ParseTuple(args, "id", &wake, &grain)) return NULL;
    pio_t *S = (pio_t *)type->tp_alloc(type, 0);
    if (S == NULL) return NULL;
    S->scratch = malloc(SCRATCH);
    if (S->scratch == NULL) {
        Py_DECREF(S);
        return PyErr_NoMemory();
    }
    for (int i = 0; i < MAXPORTS; i++) S->index[i] = -1;
    S->wake_fd = wake;
    S->grain = (uint64_t)(grain * 1e9);
    S->sink.outs = S->sink.drops = NULL;
    S->sink.reserve = sink_reserve;
    S->sink.commit = sink_commit;
    S->sink.drop = sink_drop;
    S->sink.ctx = S;
    S->cpu_port = -1;
    return (PyObject *)S;
}

static void pio_dealloc(PyObject *self) {
    pio_t *S = (pio_t *)self;
    release_ports(S);
    Py_XDECREF(S->cpu);
    free(S->scratch);
    Py_TYPE(self)->tp_free(self);
}

static PyTypeObject PortIOType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "MODNAME.PortIO",
    .tp_basicsize = sizeof(pio_t),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = pio_new,
    .tp_dealloc = pio_dealloc,
    .tp_methods = pio_methods,
    .tp_doc = "a switch's ports, run by native code around a native pipeline",
};

static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT, "MODNAME", NULL, -1, NULL, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_MODNAME(void) {
    if (PyType_Ready(&PortIOType) < 0) return NULL;
    PyObject *m = PyModule_Create(&moddef);
    if (m == NULL) return NULL;
    Py_INCREF(&PortIOType);
    if (PyModule_AddObject(m, "PortIO", (PyObject *)&PortIOType) < 0) {
        Py_DECREF(&PortIOType);
        Py_DECREF(m);
        return NULL;
    }
    if (PyModule_AddIntConstant(m, "IDLE", R_IDLE) < 0 || PyModule_AddIntConstant(m, "WAKE", R_WAKE) < 0 ||
        PyModule_AddIntConstant(m, "STALE", R_STALE) < 0 || PyModule_AddIntConstant(m, "CPU", R_CPU) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
