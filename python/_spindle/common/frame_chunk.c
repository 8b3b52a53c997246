/* frame_chunk.c — a pooled greenlet's Python frames start in a small chunk
 * of its own (FRAME_CHUNK bytes from malloc) instead of CPython's 16 KiB
 * root chunk, an mmap whose first page stays resident for as long as the
 * greenlet lives: 4 KiB of every WSGI handler parked in a long wait (a
 * spindle.websocket in receive), whose few frames use ~200 bytes of it.
 * A call whose frames outgrow the small chunk gets CPython's own chunks
 * above it as usual; the greenlet then goes back to CPython's root for its
 * later calls, so a deep app pays no chunk mmap per call. CPython 3.11 to
 * 3.13 keep their frame stack in tstate->datastack_*; elsewhere this does
 * nothing. */
#include "common/binding.h"

#include <stdlib.h>

#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030E0000 && !defined(Py_LIMITED_API)
#define FRAME_CHUNK_ON 1
/* Room for ~6 shallow frames (an app, a view, the handler's loop); its
 * malloc block shares a page with three others. A size no CPython chunk
 * has (theirs are 16 KiB and its doublings), which is how free_chunk below
 * tells ours from CPython's. */
#define FRAME_CHUNK 1000
#endif

static long held;     /* greenlets on a small chunk now */
static long outgrown; /* greenlets that went back to CPython's root */

#ifdef FRAME_CHUNK_ON
static PyObjectArenaAllocator base; /* CPython's (or whoever set one before) */
static int installed;

/* greenlet frees the chunks of a greenlet deallocated while suspended
 * (it can never run again) through the arena allocator, the same way
 * CPython allocated them (_PyObject_VirtualFree): ours came from malloc. */
static void free_chunk(void *ctx, void *p, size_t size) {
    (void)ctx;
    if (size == FRAME_CHUNK) {
        free(p);
        held--;
    } else
        base.free(base.ctx, p, size);
}

static void *alloc_chunk(void *ctx, size_t size) {
    (void)ctx;
    return base.alloc(base.ctx, size);
}
#endif

int frame_chunk_init(void) {
#ifdef FRAME_CHUNK_ON
    if (!installed) {
        PyObject_GetArenaAllocator(&base);
        if (!base.alloc || !base.free)
            return 0; /* no allocator to wrap: CPython's chunks as usual */
        PyObjectArenaAllocator ours = {NULL, alloc_chunk, free_chunk};
        PyObject_SetArenaAllocator(&ours);
        installed = 1;
    }
#endif
    return 0;
}

void frame_chunk_enter(void) {
#ifdef FRAME_CHUNK_ON
    PyThreadState *ts = PyThreadState_Get();
    if (!installed || ts->datastack_chunk)
        return; /* not a fresh greenlet's frame stack: leave it alone */
    _PyStackChunk *c = malloc(FRAME_CHUNK);
    if (!c)
        return; /* CPython allocates its own root on the first call */
    c->previous = NULL;
    c->size = FRAME_CHUNK;
    c->top = 0; /* set by CPython once a call outgrows this chunk */
    ts->datastack_chunk = c;
    /* A root chunk's first slot stays unused: CPython pops a chunk when
     * the frame at its data[0] returns, and the root must never go. */
    ts->datastack_top = &c->data[1];
    ts->datastack_limit = (PyObject **)(void *)((char *)c + FRAME_CHUNK);
    held++;
#endif
}

/* Called between calls (no frame of this greenlet on its stack) and as it
 * ends: gives our chunk back if the last call outgrew it (for good: later
 * calls start on CPython's root) or if the greenlet is ending (greenlet
 * then frees whatever CPython chunk is left). */
void frame_chunk_after_call(int ending) {
#ifdef FRAME_CHUNK_ON
    PyThreadState *ts = PyThreadState_Get();
    _PyStackChunk *c = ts->datastack_chunk;
    if (!installed || !c || c->size != FRAME_CHUNK || ts->datastack_top != &c->data[1])
        return;
    if (!ending && c->top == 0)
        return;
    outgrown += c->top != 0;
    ts->datastack_chunk = NULL;
    ts->datastack_top = ts->datastack_limit = NULL;
    free(c);
    held--;
#else
    (void)ending;
#endif
}

PyObject *py_frame_chunks(PyObject *self, PyObject *unused) {
#ifdef FRAME_CHUNK_ON
    int on = installed;
#else
    int on = 0;
#endif
    return Py_BuildValue("{s:O,s:l,s:l}", "enabled", on ? Py_True : Py_False, "held", held,
                         "outgrown", outgrown);
}
