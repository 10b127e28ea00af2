/* What a program's generated module (cgen.py + runtime.c) and the native port loop (portio.c) share.

   Why a separate header: the port loop is one fixed module for every program, while each program
   has a module of its own; the port loop reaches a program's pipeline through a capsule (pipe_entry_t)
   that its data plane object hands out, and the pipeline hands its outputs to the port loop through
   a sink (sink_t). Both sides are compiled from this text, so the layouts agree by construction;
   PIPE_ABI changes whenever they change, and the port loop refuses a capsule of another version. */

/* It is pasted where an includer's own includes end (the line ABI_H of runtime.c and portio.c),
   after Python.h and <stdint.h>, since Python.h must come before any system header. */

#ifndef P4KIT_NATIVE_ABI_H
#define P4KIT_NATIVE_ABI_H

#define PIPE_ABI 1

typedef struct sink sink_t;

/* Where a packet's outputs and drops go. With `outs` set (process_batch from Python) outputs become
   (port, bytes) tuples in that list and drops (code, value) tuples in `drops`; otherwise `reserve`
   gives the room for a frame of `len` bytes (NULL: no room, the copy is lost), `commit` sends what
   was written there out of `port`, and `drop` counts a drop. */
struct sink {
    void *outs, *drops; /* PyObject * lists, or NULL */
    uint8_t *(*reserve)(sink_t *s, int64_t len);
    void (*commit)(sink_t *s, uint64_t port, int64_t len);
    void (*drop)(sink_t *s, long code, uint64_t value);
    void *ctx;
};

/* One program's pipeline as the port loop calls it. `run` takes one frame (the data stay the
   caller's and are only read), the ingress port and the time in microseconds since the switch
   started; it returns 0, or -1 with a Python exception set (call it with the GIL held: direct
   counters are Python lists). `stale` is nonzero while the Python side owes the data plane a
   hand-over of its tables (1), or once the data plane is retired by a new program or engine (2). */
typedef struct {
    uint32_t abi;
    int (*run)(void *dp, const uint8_t *data, int64_t len, uint64_t port, uint64_t now_us, sink_t *s);
    void *dp;
    volatile int *stale;
    int uses_time;
} pipe_entry_t;

#define PIPE_CAPSULE "p4kit.pipe_entry"

#endif
