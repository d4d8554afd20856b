/* libascendcl.so of the emulator, its timing stand-ins: events, an async memset, the device's L2
 * size, and a deterministic device clock (docs/timing.md; the calls' CANN signatures are cited
 * there). Why: so tests can check the aclnn backend's time_launches figures exactly, and the order
 * in which it records events, launches, flushes and synchronizes.
 *
 * The clock advances only as the emulated device runs a stream's work (at aclrtSynchronizeStream,
 * as runtime.c runs queued tasks): a kernel by ACLNN_EMU_LAUNCH_NS (default 3000) plus its bytes
 * (inputs and outputs at their dtypes, opapi.c counts them) over ACLNN_EMU_GBPS (default 1600 GB/s),
 * ACLNN_EMU_L2_SPEEDUP (default 4) times faster when the same call's data is still in the emulated
 * L2 of ACLNN_EMU_L2_BYTES (default 1 MiB; what aclGetDeviceCapability reports); a memset by
 * ACLNN_EMU_MEMSET_NS (default 1000) plus its bytes over the bandwidth, and a memset of at least the
 * L2 evicts it. An event's timestamp is the clock when the device reaches its record. So the times
 * are unrelated to the host's: they say what the device model did, never how long the host took.
 *
 * The trace (aclemuTrace): every stream operation in the host's order, as space-separated tokens:
 * P (phase 1 made an executor), K@s (a kernel queued on stream s), M<bytes>@s (a memset queued),
 * R<e>@s (event e recorded), Y (a synchronize: stream or event), D<e> (event e destroyed); stream 0
 * is the default stream. aclemuLiveEvents counts events not yet destroyed.
 */
#include <stdio.h>
#include <stdlib.h>
#include "emu.h"

#define EVENT_MAGIC 0x45564e54u
#define TRACE_CAP (1u << 20)

typedef struct {
    uint32_t magic;
    int id, stream_id;
    void *stream;
    int recorded, done, destroyed, pending; /* pending: record tasks queued, not yet run */
    double ts_ns;
} event_t;

static double g_clock_ns;
static const void *g_l2_key;   /* the call whose data the emulated L2 holds (NULL: none) */
static int64_t g_live_events, g_next_event;
static char g_trace[TRACE_CAP];
static size_t g_trace_len;

static double env_num(const char *name, double dflt) {
    const char *s = getenv(name);
    return s && *s ? strtod(s, NULL) : dflt;
}

static int64_t l2_bytes(void) { return (int64_t)env_num("ACLNN_EMU_L2_BYTES", 1 << 20); }

EMU_EXPORT void aclemu_trace(const char *fmt, int a, int b) {
    char tok[48];
    int n = snprintf(tok, sizeof tok, fmt, a, b);
    if (n > 0 && g_trace_len + (size_t)n + 1 < TRACE_CAP) { /* a full trace keeps its beginning */
        memcpy(g_trace + g_trace_len, tok, (size_t)n);
        g_trace_len += (size_t)n;
        g_trace[g_trace_len++] = ' ';
        g_trace[g_trace_len] = 0;
    }
}

EMU_EXPORT size_t aclemuTrace(char *buf, size_t cap) {
    if (buf && cap) {
        size_t n = g_trace_len < cap - 1 ? g_trace_len : cap - 1;
        memcpy(buf, g_trace, n);
        buf[n] = 0;
    }
    return g_trace_len;
}

EMU_EXPORT void aclemuTraceReset(void) { g_trace_len = 0; g_trace[0] = 0; }

EMU_EXPORT int64_t aclemuLiveEvents(void) { return g_live_events; }

EMU_EXPORT void aclemu_kernel_ran(const void *key, uint64_t bytes) {
    double gbps = env_num("ACLNN_EMU_GBPS", 1600.0);
    int warm = key && key == g_l2_key && (int64_t)bytes <= l2_bytes();
    if (warm) gbps *= env_num("ACLNN_EMU_L2_SPEEDUP", 4.0);
    g_clock_ns += env_num("ACLNN_EMU_LAUNCH_NS", 3000.0) + (double)bytes / gbps;
    g_l2_key = (int64_t)bytes <= l2_bytes() ? key : NULL;
}

EMU_EXPORT int aclGetDeviceCapability(uint32_t deviceId, int deviceInfo, int64_t *value) {
    (void)deviceId;
    if (!value) return ACL_ERROR_INVALID_PARAM;
    switch (deviceInfo) {
    case 0: *value = 24; return 0;            /* ACL_DEVICE_INFO_AI_CORE_NUM */
    case 1: *value = 48; return 0;            /* ACL_DEVICE_INFO_VECTOR_CORE_NUM */
    case 2: *value = l2_bytes(); return 0;    /* ACL_DEVICE_INFO_L2_SIZE, bytes */
    default: return ACL_ERROR_INVALID_PARAM;
    }
}

/* ---- events ------------------------------------------------------------------------------------ */
static int make_event(void **event) {
    if (!event) return ACL_ERROR_INVALID_PARAM;
    event_t *e = calloc(1, sizeof *e);
    e->magic = EVENT_MAGIC;
    e->id = (int)++g_next_event;
    *event = e;
    g_live_events++;
    return 0;
}

EMU_EXPORT int aclrtCreateEvent(void **event) { return make_event(event); }

EMU_EXPORT int aclrtCreateEventWithFlag(void **event, uint32_t flag) {
    if (flag & ~0x0Fu) return ACL_ERROR_INVALID_PARAM;
    return make_event(event);
}

static event_t *as_event(void *p) {
    event_t *e = p;
    return e && e->magic == EVENT_MAGIC && !e->destroyed ? e : NULL;
}

static void record_task(void *arg) {
    event_t *e = arg;
    e->ts_ns = g_clock_ns;
    e->done = 1;
    if (--e->pending == 0 && e->destroyed) free(e); /* destroyed before the device reached it */
}

EMU_EXPORT int aclrtRecordEvent(void *event, void *stream) {
    event_t *e = as_event(event);
    if (!e) return ACL_ERROR_INVALID_PARAM;
    int sid = aclemu_stream_id(stream);
    if (sid < 0) return ACL_ERROR_INVALID_PARAM;
    e->recorded = 1;
    e->done = 0;
    e->stream = stream;
    e->stream_id = sid;
    e->pending++;
    aclemu_trace("R%d@%d", e->id, sid);
    int rc = aclemu_enqueue(stream, record_task, e);
    if (rc) e->pending--;
    return rc;
}

EMU_EXPORT int aclrtSynchronizeEvent(void *event) {
    event_t *e = as_event(event);
    if (!e) return ACL_ERROR_INVALID_PARAM;
    aclemu_trace("Y", 0, 0);
    return e->recorded && !e->done ? aclemu_run_stream(e->stream) : 0;
}

EMU_EXPORT int aclrtEventElapsedTime(float *ms, void *start, void *end) {
    event_t *s = as_event(start), *e = as_event(end);
    if (!ms || !s || !e) return ACL_ERROR_INVALID_PARAM;
    if (!s->done || !e->done) return ACL_ERROR_INVALID_PARAM; /* not recorded, or not yet reached */
    if (s->stream != e->stream) return ACL_ERROR_INVALID_PARAM; /* the calling order: one stream */
    *ms = (float)((e->ts_ns - s->ts_ns) / 1e6);
    return 0;
}

EMU_EXPORT int aclrtDestroyEvent(void *event) {
    event_t *e = as_event(event);
    if (!e) return ACL_ERROR_INVALID_PARAM;
    aclemu_trace("D%d", e->id, 0);
    e->destroyed = 1;
    g_live_events--;
    if (!e->pending) free(e); /* else freed when the device reaches its last record */
    return 0;
}

/* ---- the flush --------------------------------------------------------------------------------- */
typedef struct { void *p; int32_t value; size_t count; } memset_t;

static void memset_task(void *arg) {
    memset_t *m = arg;
    if (aclemu_in_device_memory(m->p, m->count)) memset(m->p, m->value, m->count);
    g_clock_ns += env_num("ACLNN_EMU_MEMSET_NS", 1000.0) + (double)m->count / env_num("ACLNN_EMU_GBPS", 1600.0);
    if ((int64_t)m->count >= l2_bytes()) g_l2_key = NULL;
    free(m);
}

EMU_EXPORT int aclrtMemsetAsync(void *devPtr, size_t maxCount, int32_t value, size_t count, void *stream) {
    if (!devPtr || count > maxCount || !aclemu_in_device_memory(devPtr, count)) return ACL_ERROR_INVALID_PARAM;
    int sid = aclemu_stream_id(stream);
    if (sid < 0) return ACL_ERROR_INVALID_PARAM;
    memset_t *m = malloc(sizeof *m);
    m->p = devPtr;
    m->value = value;
    m->count = count;
    aclemu_trace("M%d@%d", (int)count, sid);
    int rc = aclemu_enqueue(stream, memset_task, m);
    if (rc) free(m);
    return rc;
}
