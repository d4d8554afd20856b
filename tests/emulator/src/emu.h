/* Host emulator of the CANN ABI subset the `aclnn` backend uses (test support, not a product).
 *
 * Three shared libraries, laid out like the toolkit's lib64:
 *   libascendcl.so  runtime: init, device, streams, "device" memory (host memory), SoC name,
 *                   live-resource counters (aclemuLiveCounts)
 *   libnnopbase.so  aclCreateTensor / aclDestroyTensor / aclDestroyAclOpExecutor
 *   libopapi.so     aclnnMseLossBackward*, aclnnKlDivBackward* (two phases each)
 * Fault builds are selected with -DEMU_FAULT_<NAME> (see tests/emulator/build.py).
 */
#ifndef ACLEMU_H
#define ACLEMU_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define EMU_EXPORT __attribute__((visibility("default")))
#define EMU_MAX_RANK 16 /* storage for views the operators accept (they reject > 8) */

/* Status and error codes (docs/aclnn-status.md; aclError values of the runtime). */
#define ACLNN_SUCCESS 0
#define ACLNN_ERR_PARAM_NULLPTR 161001
#define ACLNN_ERR_PARAM_INVALID 161002
#define ACLNN_ERR_RUNTIME_ERROR 361001
#define ACLNN_ERR_INNER_NULLPTR 561103
#define ACL_ERROR_INVALID_PARAM 100000
#define ACL_ERROR_UNINITIALIZE 100001
#define ACL_ERROR_REPEAT_INITIALIZE 100002
#define ACL_ERROR_RT_DEVICE_ID_INVALID 107001
#define ACL_ERROR_RT_CONTEXT_NULL 107002
#define ACL_ERROR_RT_MEMORY_ALLOCATION 207001
#define ACL_ERROR_RT_DEVICE_FAULT 507899 /* the emulator's code for a kernel touching freed memory */

enum { ACL_FLOAT = 0, ACL_FLOAT16 = 1, ACL_BF16 = 27 };
enum { EMU_BUFS = 0, EMU_TENSORS = 1, EMU_EXECUTORS = 2, EMU_STREAMS = 3 };

typedef struct aclTensor {
    uint32_t magic;
    int64_t ndim;
    int64_t *dims, *strides; /* element strides */
    int64_t offset;          /* elements from tensorData to the first element */
    int32_t dtype, format;
    int64_t nstorage;
    int64_t *storage_dims;
    void *data;
} aclTensor;

/* A tensor view captured by an executor (independent of the aclTensor's lifetime). */
typedef struct {
    int present;
    int64_t ndim, dims[EMU_MAX_RANK], strides[EMU_MAX_RANK], offset;
    int32_t dtype;
    void *data;
} emu_view;

typedef struct aclOpExecutor {
    uint32_t magic;
    int op;                 /* 1 MSE, 2 KL */
    emu_view grad, self, target, out;
    int64_t bdims[EMU_MAX_RANK], bndim; /* broadcast shape B */
    int64_t reduction;
    int log_target;
    int empty;
    uint64_t workspace;     /* bytes required */
    void *ws_ptr;           /* workspace given to phase 2 */
} aclOpExecutor;

#define EMU_TENSOR_MAGIC 0x54454e53u
#define EMU_EXEC_MAGIC 0x45584543u

/* Internal helpers exported by libascendcl.so for the other two libraries. */
void aclemu_count(int kind, int delta);
int aclemu_in_device_memory(const void *p, size_t nbytes); /* 1 if [p, p+nbytes) lies in one allocation */
typedef void (*aclemu_task)(void *arg);
int aclemu_enqueue(void *stream, aclemu_task fn, void *arg);
const char *aclemu_soc(void);
void aclemu_device_fault(void); /* the next aclrtSynchronizeStream reports ACL_ERROR_RT_DEVICE_FAULT */
/* Exported by libnnopbase.so. */
int aclDestroyAclOpExecutor(aclOpExecutor *executor);

/* ---- float conversions, round to nearest even, NaN/inf/subnormal aware ---- */
static inline float emu_bits_to_float(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline uint32_t emu_float_to_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

static inline float emu_half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1Fu, man = h & 0x3FFu;
    if (exp == 0x1F) return emu_bits_to_float(sign | 0x7F800000u | (man << 13));
    if (exp == 0) { /* zero or subnormal: man * 2^-24, exact in float */
        float v = (float)man * 5.9604644775390625e-08f;
        return sign ? -v : v;
    }
    return emu_bits_to_float(sign | ((exp + 112u) << 23) | (man << 13));
}

static inline uint16_t emu_float_to_half(float f) {
    uint32_t x = emu_float_to_bits(f), sign = (x >> 16) & 0x8000u, ax = x & 0x7FFFFFFFu;
    if (ax > 0x7F800000u) return (uint16_t)(sign | 0x7E00u | ((ax >> 13) & 0x3FFu)); /* NaN stays NaN */
    if (ax >= 0x477FF000u) return (uint16_t)(sign | 0x7C00u); /* >= 65520 (incl. inf) -> inf */
    if (ax >= 0x38800000u) { /* normal half */
        uint32_t h = (ax >> 13) - (112u << 10), rem = ax & 0x1FFFu;
        if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;
        return (uint16_t)(sign | h);
    }
    if (ax < 0x33000000u) return (uint16_t)sign; /* below half the smallest subnormal */
    { /* subnormal half: k * 2^-24 */
        uint32_t e = ax >> 23, m = (ax & 0x7FFFFFu) | 0x800000u, s = 126u - e;
        uint32_t k = m >> s, rem = m & ((1u << s) - 1u), half = 1u << (s - 1u);
        if (rem > half || (rem == half && (k & 1u))) k++;
        return (uint16_t)(sign | k);
    }
}

static inline float emu_bf16_to_float(uint16_t b) { return emu_bits_to_float((uint32_t)b << 16); }

static inline uint16_t emu_float_to_bf16(float f) {
    uint32_t x = emu_float_to_bits(f);
    if ((x & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((x >> 16) | 0x0040u); /* quiet NaN */
    x += 0x7FFFu + ((x >> 16) & 1u); /* RNE; a carry into the exponent gives inf correctly */
    return (uint16_t)(x >> 16);
}

static inline int emu_itemsize(int32_t dtype) {
    return dtype == ACL_FLOAT ? 4 : (dtype == ACL_FLOAT16 || dtype == ACL_BF16) ? 2 : 0;
}
#endif
