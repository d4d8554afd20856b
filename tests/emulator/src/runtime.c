/* libascendcl.so of the emulator: runtime calls with host memory standing in for device memory.
 *
 * Strict where a real device would fail or misbehave, so marshalling bugs surface: memory calls
 * need aclInit + aclrtSetDevice; aclrtMemcpy checks the direction against which side is "device";
 * fresh device memory holds garbage (0xA5); operator work queued on a stream runs only at
 * aclrtSynchronizeStream (or aclrtDestroyStream), so reading out before synchronising sees garbage.
 * Env: ACLNN_EMU_SOC (SoC name, default Ascend910B3), ACLNN_EMU_MALLOC_LIMIT (bytes; larger
 * aclrtMalloc requests fail), ACLNN_EMU_DEVICES (device count, default 8).
 *
 * A planted AI-core fault, as a real device has one: ACLNN_EMU_AICORE_FAULT_AT=N makes the N-th kernel
 * this process runs (counted from 1) fault instead of computing. Its aclrtSynchronizeStream returns
 * ACL_ERROR_RT_AICORE_EXCEPTION (507015), and from then on the device is poisoned, as CANN's is:
 * synchronize, memcpy, malloc and stream creation return 507899 (the sticky error) and queued kernels
 * never run, until aclrtResetDevice releases the device's last reference. aclGetRecentErrMsg then
 * says what happened, once. ACLNN_EMU_RESET_FAILS=1 makes the poison outlive resets (a device that
 * cannot be recovered). aclemuKernelsRun() tells tests how many kernels ran so far.
 */
#include <stdio.h>
#include <stdlib.h>
#include "emu.h"

typedef void *aclrtStream;

static int g_init, g_device = -1, g_devref; /* set/reset are reference counted, as in CANN */
static int64_t g_live[4];
static int g_fault;
static int g_poisoned;      /* an AI-core fault happened: the device is unusable until reset */
static int64_t g_kernels;   /* kernels run by this process, for ACLNN_EMU_AICORE_FAULT_AT */
static char g_errmsg[512];  /* aclGetRecentErrMsg's message; empty: none */

EMU_EXPORT void aclemu_device_fault(void) { g_fault = 1; }

static void set_errmsg(const char *msg) { snprintf(g_errmsg, sizeof g_errmsg, "%s", msg); }

EMU_EXPORT const char *aclGetRecentErrMsg(void) {
    static char last[sizeof g_errmsg];
    if (!g_errmsg[0]) return NULL;
    memcpy(last, g_errmsg, sizeof last);
    g_errmsg[0] = 0; /* reported once, as CANN's is */
    return last;
}

EMU_EXPORT int64_t aclemuKernelsRun(void) { return g_kernels; }

EMU_EXPORT int aclemu_kernel_may_run(void) {
    const char *at = getenv("ACLNN_EMU_AICORE_FAULT_AT");
    if (g_poisoned) return 0;
    g_kernels++;
    if (at && *at && g_kernels == strtoll(at, NULL, 10)) {
        g_poisoned = 1;
        set_errmsg("EZ9999: Inner Error! aicore exception (emulated by ACLNN_EMU_AICORE_FAULT_AT): the kernel "
                   "faulted; the device must be reset");
        return 0;
    }
    return 1;
}

typedef struct { char *p; size_t size; } alloc_t;
static alloc_t *g_allocs;
static size_t g_nallocs, g_cap;

typedef struct { aclemu_task fn; void *arg; } task_t;
typedef struct { uint32_t magic; int id; task_t *tasks; size_t n, cap; } stream_t;
static int g_next_stream;
#define STREAM_MAGIC 0x5354524du

EMU_EXPORT void aclemu_count(int kind, int delta) { g_live[kind] += delta; }

EMU_EXPORT int aclemuLiveCounts(int64_t *bufs, int64_t *tensors, int64_t *executors, int64_t *streams) {
    if (bufs) *bufs = g_live[EMU_BUFS];
    if (tensors) *tensors = g_live[EMU_TENSORS];
    if (executors) *executors = g_live[EMU_EXECUTORS];
    if (streams) *streams = g_live[EMU_STREAMS];
    return 0;
}

static alloc_t *find_alloc(const void *p) {
    for (size_t i = 0; i < g_nallocs; i++)
        if ((const char *)p >= g_allocs[i].p && (const char *)p < g_allocs[i].p + g_allocs[i].size)
            return &g_allocs[i];
    return NULL;
}

EMU_EXPORT int aclemu_in_device_memory(const void *p, size_t nbytes) {
    alloc_t *a = find_alloc(p);
    return a && (const char *)p + nbytes <= a->p + a->size;
}

EMU_EXPORT const char *aclemu_soc(void) {
    const char *s = getenv("ACLNN_EMU_SOC");
    return s && *s ? s : "Ascend910B3";
}

EMU_EXPORT int aclInit(const char *config) {
    (void)config;
    if (g_init) return ACL_ERROR_REPEAT_INITIALIZE;
    g_init = 1;
    return 0;
}

EMU_EXPORT int aclFinalize(void) {
    if (!g_init) return ACL_ERROR_UNINITIALIZE;
    g_init = 0;
    g_device = -1;
    g_devref = 0;
    g_poisoned = 0;
    return 0;
}

EMU_EXPORT int aclrtSetDevice(int32_t device) {
    const char *n = getenv("ACLNN_EMU_DEVICES");
    int count = n ? atoi(n) : 8;
    if (!g_init) return ACL_ERROR_UNINITIALIZE;
    if (device < 0 || device >= count) return ACL_ERROR_RT_DEVICE_ID_INVALID;
    if (g_device >= 0 && g_device != device) return ACL_ERROR_RT_DEVICE_ID_INVALID; /* one device at a time here */
    g_device = device;
    g_devref++;
    return 0;
}

EMU_EXPORT int aclrtResetDevice(int32_t device) {
    if (device != g_device || g_devref <= 0) return ACL_ERROR_RT_DEVICE_ID_INVALID;
    const char *stuck = getenv("ACLNN_EMU_RESET_FAILS");
    if (--g_devref == 0) { /* the device's last reference: a real reset */
        g_device = -1;
        if (!(stuck && *stuck == '1')) g_poisoned = 0;
    }
    return 0;
}

EMU_EXPORT int aclrtGetDeviceCount(uint32_t *count) {
    const char *n = getenv("ACLNN_EMU_DEVICES");
    if (!count) return ACL_ERROR_INVALID_PARAM;
    *count = (uint32_t)(n ? atoi(n) : 8);
    return 0;
}

EMU_EXPORT const char *aclrtGetSocName(void) {
    static char name[64];
    snprintf(name, sizeof name, "%s", aclemu_soc());
    return name;
}

EMU_EXPORT int aclrtCreateStream(aclrtStream *stream) {
    if (!stream) return ACL_ERROR_INVALID_PARAM;
    if (g_device < 0) return ACL_ERROR_RT_CONTEXT_NULL;
    if (g_poisoned) return ACL_ERROR_RT_STICKY;
    stream_t *s = calloc(1, sizeof *s);
    s->magic = STREAM_MAGIC;
    s->id = ++g_next_stream;
    *stream = s;
    aclemu_count(EMU_STREAMS, 1);
    return 0;
}

static int run_pending(stream_t *s) {
    int was_poisoned = g_poisoned;
    for (size_t i = 0; i < s->n; i++) s->tasks[i].fn(s->tasks[i].arg); /* a poisoned device runs none */
    s->n = 0;
    if (g_fault) { g_fault = 0; return ACL_ERROR_RT_DEVICE_FAULT; }
    if (g_poisoned) return was_poisoned ? ACL_ERROR_RT_STICKY : ACL_ERROR_RT_AICORE_EXCEPTION;
    return 0;
}

EMU_EXPORT int aclemu_enqueue(void *stream, aclemu_task fn, void *arg) {
    stream_t *s = stream;
    if (!s) { fn(arg); return 0; } /* default stream: run now */
    if (s->magic != STREAM_MAGIC) return ACL_ERROR_INVALID_PARAM;
    if (g_poisoned) return ACL_ERROR_RT_STICKY;
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 4;
        s->tasks = realloc(s->tasks, s->cap * sizeof *s->tasks);
    }
    s->tasks[s->n].fn = fn;
    s->tasks[s->n].arg = arg;
    s->n++;
    return 0;
}

EMU_EXPORT int aclemu_stream_id(void *stream) {
    stream_t *s = stream;
    if (!s) return 0;
    return s->magic == STREAM_MAGIC ? s->id : -1;
}

EMU_EXPORT int aclemu_run_stream(void *stream) {
    stream_t *s = stream;
    if (!s) return 0; /* the default stream ran its work when it was queued */
    return s->magic == STREAM_MAGIC ? run_pending(s) : ACL_ERROR_INVALID_PARAM;
}

EMU_EXPORT int aclrtSynchronizeStream(aclrtStream stream) {
    stream_t *s = stream;
    if (!s || s->magic != STREAM_MAGIC) return ACL_ERROR_INVALID_PARAM;
    aclemu_trace("Y", 0, 0);
    return run_pending(s);
}

EMU_EXPORT int aclrtDestroyStream(aclrtStream stream) {
    stream_t *s = stream;
    if (!s || s->magic != STREAM_MAGIC) return ACL_ERROR_INVALID_PARAM;
    run_pending(s);
    s->magic = 0;
    free(s->tasks);
    free(s);
    aclemu_count(EMU_STREAMS, -1);
    return 0;
}

EMU_EXPORT int aclrtMalloc(void **ptr, size_t size, int policy) {
    (void)policy;
    const char *limit = getenv("ACLNN_EMU_MALLOC_LIMIT");
    if (!ptr || size == 0) return ACL_ERROR_INVALID_PARAM;
    if (g_device < 0) return ACL_ERROR_RT_CONTEXT_NULL;
    if (g_poisoned) return ACL_ERROR_RT_STICKY;
    if (limit && size > (size_t)strtoull(limit, NULL, 10)) return ACL_ERROR_RT_MEMORY_ALLOCATION;
    size_t rounded = (size + 63) / 64 * 64;
    char *p = aligned_alloc(64, rounded);
    if (!p) return ACL_ERROR_RT_MEMORY_ALLOCATION;
    memset(p, 0xA5, rounded); /* device memory starts as garbage */
    if (g_nallocs == g_cap) {
        g_cap = g_cap ? 2 * g_cap : 16;
        g_allocs = realloc(g_allocs, g_cap * sizeof *g_allocs);
    }
    g_allocs[g_nallocs].p = p;
    g_allocs[g_nallocs].size = size;
    g_nallocs++;
    *ptr = p;
    aclemu_count(EMU_BUFS, 1);
    return 0;
}

EMU_EXPORT int aclrtFree(void *ptr) {
    for (size_t i = 0; i < g_nallocs; i++) {
        if (g_allocs[i].p == ptr) {
            free(ptr);
            g_allocs[i] = g_allocs[--g_nallocs];
            aclemu_count(EMU_BUFS, -1);
            return 0;
        }
    }
    return ACL_ERROR_INVALID_PARAM; /* not a live allocation's base: double free or host pointer */
}

EMU_EXPORT int aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count, int kind) {
    if (!dst || !src || count > destMax) return ACL_ERROR_INVALID_PARAM;
    int dst_dev = aclemu_in_device_memory(dst, count), src_dev = aclemu_in_device_memory(src, count);
    int want_dst = kind == 1 || kind == 3, want_src = kind == 2 || kind == 3;
    if (kind < 0 || kind > 3 || dst_dev != want_dst || src_dev != want_src) return ACL_ERROR_INVALID_PARAM;
    if (g_poisoned) return ACL_ERROR_RT_STICKY;
    memcpy(dst, src, count);
    return 0;
}
