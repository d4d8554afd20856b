/* Host emulator of the CANN ABI subset the `aclnn` backend uses (test support, not a product).
 *
 * Three shared libraries, laid out like the toolkit's lib64:
 *   libascendcl.so  runtime.c: init, device, streams, "device" memory (host memory), SoC name,
 *                   live-resource counters (aclemuLiveCounts); events.c: events, aclrtMemsetAsync,
 *                   the L2 size, the emulated device clock and the trace (timing stand-ins)
 *   libnnopbase.so  nnopbase.c: aclCreateTensor / aclDestroyTensor / aclDestroyAclOpExecutor
 *   libopapi.so     opapi.c (the generic core: views, loads and stores with RNE, broadcasting,
 *                   validation helpers, the executor, workspace and launch, device-memory checks),
 *                   entry.c (the generic entry: an elementwise loss's phase 1 from its descriptor)
 *                   and one file per operator in ops/ (the operator table): ops/<module>.c, named
 *                   after the operator's module in suite/ops/, exports aclnn<Op>GetWorkspaceSize
 *                   and aclnn<Op> and holds the operator's run function: either a descriptor, a
 *                   term function and EMU_ENTRY (below), or both functions written by hand on the
 *                   core's helpers. Adding an operator is one new file there: the build compiles
 *                   every file in ops/.
 * Fault builds are selected with -DEMU_FAULT_<NAME>; each source declares the faults it plants in
 * a comment line "@fault <name> <MACRO> <what it does>" (read by tests/emulator/build.py).
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
#define ACLNN_ERR_INNER 561000
#define ACL_ERROR_INVALID_PARAM 100000
#define ACL_ERROR_UNINITIALIZE 100001
#define ACL_ERROR_REPEAT_INITIALIZE 100002
#define ACL_ERROR_RT_DEVICE_ID_INVALID 107001
#define ACL_ERROR_RT_CONTEXT_NULL 107002
#define ACL_ERROR_RT_MEMORY_ALLOCATION 207001
#define ACL_ERROR_RT_DEVICE_FAULT 507899 /* the emulator's code for a kernel touching freed memory */
#define ACL_ERROR_RT_AICORE_EXCEPTION 507015 /* an AI-core fault, reported by the synchronize that saw it */
#define ACL_ERROR_RT_STICKY 507899 /* what a poisoned device answers until it is reset */

/* aclDataType values (docs/aclnn-status.md); EMU_NO_DTYPE stands for "none" / an undefined promotion. */
enum {
    ACL_FLOAT = 0, ACL_FLOAT16 = 1, ACL_INT8 = 2, ACL_INT32 = 3, ACL_UINT8 = 4, ACL_INT16 = 6, ACL_UINT16 = 7,
    ACL_UINT32 = 8, ACL_INT64 = 9, ACL_UINT64 = 10, ACL_DOUBLE = 11, ACL_BOOL = 12, ACL_COMPLEX64 = 16,
    ACL_COMPLEX128 = 17, ACL_BF16 = 27, ACL_COMPLEX32 = 33
};
#define EMU_NO_DTYPE (-1)
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
    int64_t storage; /* elements the storage dims hold */
} emu_view;

#define EMU_MAX_INPUTS 8 /* tensor parameters of one operator before out */
#define EMU_MAX_ATTRS 8  /* attributes of each C type (int64, bool, float) an operator may keep */
#define EMU_MAX_OUTPUTS 4 /* out tensors of one call (out first, then the others in C order) */

/* How emu_terms_n writes one output: AUTO as emu_terms does (each term stored where the output has
 * B's shape, else summed into it); SUM always summed (into a one-element output: every term); NONE
 * never written (its memory keeps what the caller put there: an output an attribute value leaves alone). */
enum { EMU_OUT_AUTO = 0, EMU_OUT_SUM = 1, EMU_OUT_NONE = 2 };

struct aclOpExecutor;
/* One operator of the table: its name (as in aclnn<name>) and the computation phase 2 queues. */
typedef struct emu_op {
    const char *name;
    void (*run)(struct aclOpExecutor *ex);
} emu_op;

/* A validated call, as phase 1 leaves it for phase 2. Nothing in it belongs to one operator: the
 * inputs are views in the operator's C-parameter order (a NULL optional tensor is a view with
 * present = 0), the attributes are slots each operator numbers as it likes. */
typedef struct aclOpExecutor {
    uint32_t magic;
    const emu_op *op;
    int nin;
    emu_view in[EMU_MAX_INPUTS];
    emu_view out;                          /* the first output (the only one of most operators) */
    int nout;                              /* outputs in all, out included (1 for most operators) */
    emu_view more[EMU_MAX_OUTPUTS - 1];    /* the outputs after out, in C-parameter order */
    int outmode[EMU_MAX_OUTPUTS];          /* EMU_OUT_* of each output, out first (emu_terms_n) */
    /* A gathered input (emu_gather): input k is read, along its axis gaxis[k], at the index that
     * input gby[k] - 1 holds at the same element of B (0: not gathered). */
    int gby[EMU_MAX_INPUTS];
    int64_t gaxis[EMU_MAX_INPUTS];
    int64_t bdims[EMU_MAX_RANK], bndim; /* the shape the terms live on (B) */
    int64_t i64[EMU_MAX_ATTRS];
    int flag[EMU_MAX_ATTRS];
    float f32[EMU_MAX_ATTRS];
    int32_t cast_in; /* every input is cast to this dtype before the kernel reads it, or EMU_NO_DTYPE */
    int32_t result;  /* the float32 result is rounded to this dtype before out's, or EMU_NO_DTYPE */
    int empty;       /* nothing to compute (set by emu_executor when out is empty) */
    uint64_t workspace; /* bytes required */
    void *ws_ptr;       /* workspace given to phase 2 */
    int repeatable;     /* aclSetAclOpExecutorRepeatable: phase 2 may run it again, the caller destroys it */
    int pending;        /* launches queued and not yet run */
    int fill;           /* the generic entry's run fills out with fill_value instead of the terms */
    float fill_value;
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
int aclemu_kernel_may_run(void); /* 0: the device is poisoned, or this kernel is the planted AI-core fault */
/* The timing stand-ins (events.c): a trace token (a printf format with up to two ints), the stream's
 * number in the trace (0: the default stream, -1: not a stream), running a stream's queued work now,
 * and a kernel's run on the emulated device clock (key: its data, for the emulated L2). */
void aclemu_trace(const char *fmt, int a, int b);
int aclemu_stream_id(void *stream);
int aclemu_run_stream(void *stream);
void aclemu_kernel_ran(const void *key, uint64_t bytes);
/* Exported by libnnopbase.so. */
int aclDestroyAclOpExecutor(aclOpExecutor *executor);

/* ---- the core of libopapi.so (opapi.c), for the operators in ops/ ---- */
int emu_soc_has_bf16(void);                 /* the SoC's product family takes BFLOAT16 (A2, A3, 950) */
const char *emu_soc_family(void);           /* the SoC's product family (suite/contract.py's name; "": none) */
int emu_listed(int32_t dtype);              /* FLOAT, FLOAT16, and BFLOAT16 where the SoC has it */
int emu_rank_ok(const aclTensor *t);        /* rank <= 8 (the accept_rank9 fault: <= 9) */
int64_t emu_numel(const aclTensor *t);
int64_t emu_numel_dims(const int64_t *dims, int64_t n);
/* B := broadcast(B, t) with NumPy's rules; 0 when they do not broadcast. Start with *nb = 0. */
int emu_bcast(int64_t *B, int64_t *nb, const aclTensor *t);
int emu_shape_is(const aclTensor *t, const int64_t *B, int64_t nb);
int emu_same_shape(const aclTensor *a, const aclTensor *b);
/* opbase's type promotion (PromoteType) and CanCast; EMU_NO_DTYPE when undefined. */
int32_t emu_promote(int32_t a, int32_t b);
int emu_can_cast(int32_t from, int32_t to);
int emu_is_floating(int32_t dtype);
int emu_loadable(int32_t dtype);            /* the core can read tensors of this dtype */
int emu_storable(int32_t dtype);            /* the core can write out in this dtype */
float emu_round_to(int32_t dtype, float v); /* v rounded to dtype (RNE) and back; EMU_NO_DTYPE: v */
/* A new executor for `op`: captures the views (a NULL tensor in `in` is an absent view), the shape
 * B, and marks the call empty when out is. Counted as a live executor until destroyed. */
aclOpExecutor *emu_executor(const emu_op *op, const aclTensor *const *in, int nin, const aclTensor *out,
                            const int64_t *B, int64_t nb);
/* Phase 1's last step: the workspace (float32 accumulators when out is smaller than B and the call
 * is not empty), written to *workspaceSize, and the executor handed out. Returns ACLNN_SUCCESS. */
int emu_ready(aclOpExecutor *ex, uint64_t *workspaceSize, aclOpExecutor **executor);
/* Phase 2 of any operator: checks executor, workspace and device memory, queues op->run. */
int emu_launch(const emu_op *op, void *workspace, uint64_t workspaceSize, aclOpExecutor *ex, void *stream);
/* The elementwise driver every run function calls: for each element of B in C order, fn gets the
 * present inputs' values there (x[i], cast to cast_in, as float32; 0 for an absent input) and
 * returns the float32 term. When out has B's shape each term is rounded to `result`, then stored to
 * out; otherwise the terms are summed in float32, in that order, into out's elements (out must
 * broadcast to B), each sum rounded and stored once. */
typedef float (*emu_term_fn)(const aclOpExecutor *ex, const float *x);
void emu_terms(aclOpExecutor *ex, emu_term_fn fn);
/* Every element of out set to v rounded to out's dtype (RNE): the fill kernel an op API queues for
 * a reduction of empty inputs (a forward loss's mean of nothing is NaN, its sum 0). */
void emu_fill(aclOpExecutor *ex, float v);

/* ---- several outputs, gathered inputs (a loss and its weight sum; scores read at a class index) ----
 * emu_executor_n: emu_executor with `nout` out tensors in C-parameter order (outs[0] is ex->out, a
 * NULL one an absent view); every one is view-checked in phase 1 and phase 2, each summed one gets
 * its float32 accumulators in the workspace, and the call is empty when every written output is
 * (emu_ready decides, after the operator has set outmode). Counted as a live executor. */
aclOpExecutor *emu_executor_n(const emu_op *op, const aclTensor *const *in, int nin, const aclTensor *const *outs,
                              int nout, const int64_t *B, int64_t nb);
/* Input k is read at one index along its `axis`: the value input `by` holds at the same element of B
 * (an integer input, read exactly); k's other dims broadcast to B. An index outside [0, dim) is
 * never read: the value is 0 and the term function decides (it sees the index in ix[by]). */
void emu_gather(aclOpExecutor *ex, int k, int64_t axis, int by);
/* The driver for several outputs: for each element of B in C order, fn gets the present inputs'
 * values there as emu_terms gives them (x[i]) and, for integer inputs, exactly (ix[i]), and writes
 * one float32 term per output into r[0..nout-1]. Each output is written by its outmode: stored (AUTO
 * with B's shape: rounded to `result`, then to its dtype) or summed in float32 in B's order into its
 * elements; after the walk `finish` (may be NULL) gets every summed output's sums (sums[k], NULL for
 * one that is not summed) and may change them (a mean's division) before each is rounded and stored
 * once. An empty B gives sums of 0. */
typedef void (*emu_terms_n_fn)(const aclOpExecutor *ex, const float *x, const int64_t *ix, float *r);
typedef void (*emu_finish_fn)(const aclOpExecutor *ex, float *const *sums);
void emu_terms_n(aclOpExecutor *ex, emu_terms_n_fn fn, emu_finish_fn finish);

/* ---- the generic entry (entry.c): an elementwise loss declared, not written ----
 * An operator whose phase 1 is the loss family's (NULLs, dtype lists, a reduction range, ranks,
 * broadcasting, an out-shape rule) and whose kernel is one float32 term per element of B is its
 * descriptor, its term function and a setup of its constants: EMU_ENTRY then defines the two
 * exported functions with the exact aclnn signature, and emu_entry checks the call as the
 * descriptor says, in this order (every rejection after the NULLs is 161002, so their order
 * only matters to the planted faults):
 *   1. workspaceSize, executor, a tensor ('t') or out ('o') NULL -> 161001 ('?' may be NULL);
 *   2. the product family `unlisted_on` (no dtype listed there);
 *   3. dtypes: each tensor in `listed` (EMU_IN(i) bits, EMU_OUT_BIT) whose dtype the product does not
 *      list; each input in `same` not of self's dtype; with `promote`, P = the promotion of the
 *      present inputs in C order undefined, not listed, or not castable to out's dtype;
 *   4. the reduction (the first 'i') outside 0..reductions-1 (reductions 0: unchecked), with status
 *      `bad_reduction` (0: 161002);
 *   5. each tensor in `rank` of rank > 8; each float attribute in `nonneg` (bit k: the k-th 'f')
 *      not >= 0 (NaN too);
 *   6. shapes, unless `empty` says an empty input skips them: B = broadcast of the inputs in `from`;
 *      each other present input must broadcast to B without changing it; out as `out_shape` says;
 *   7. an input the core cannot load or an out it cannot store -> 561103.
 * The executor then holds the present inputs (C order), B, the attributes in the first slots of
 * their type (the k-th 'i' in i64[k], 'b' in flag[k], 'f' in f32[k]; the reduction is i64[0]),
 * cast_in = result = P with `promote`; `setup` (may be NULL) sets the operator's constants (the
 * slots after the attributes, ex->fill and ex->fill_value) from them and the tensors as passed.
 * Phase 2 runs emu_fill(ex, ex->fill_value) where setup set ex->fill, else emu_terms(ex, term). */
#define EMU_IN(i) (1u << (i))
#define EMU_INPUTS 0xFFu       /* every input */
#define EMU_OUT_BIT (1u << 15) /* out */
enum {
    EMU_SHAPE_B = 0,       /* out is B */
    EMU_SHAPE_SELF = 1,    /* out is self's shape (the terms on B summed back to it) */
    EMU_SHAPE_REDUCED_0D = 2,  /* none: B; mean, sum: 0-d */
    EMU_SHAPE_REDUCED_ONE = 3  /* none: B; otherwise any shape of one element */
};
enum {
    EMU_EMPTY_CHECKED = 0, /* empty inputs are checked like any other */
    EMU_EMPTY_SELF = 1,    /* an empty self skips step 6 and computes nothing (no input view) */
    EMU_EMPTY_ANY = 2      /* an empty input makes shapes unasserted: where they fail, B is out's shape
                            * and the reduction is none (nothing is written) */
};
typedef struct emu_entry {
    emu_op op;              /* {name, emu_entry_run} */
    const char *params;     /* the C parameters before workspaceSize: 't' tensor, '?' optional tensor,
                             * 'i' int64_t, 'b' bool, 'f' float, 'o' out (last) */
    int self;               /* self's index among the tensor inputs */
    unsigned listed, same, rank, from, nonneg;
    int promote, reductions, bad_reduction, out_shape, empty;
    const char *unlisted_on;
    emu_term_fn term;
    void (*setup)(aclOpExecutor *ex, const aclTensor *const *in);
} emu_entry;
void emu_entry_run(aclOpExecutor *ex);
int emu_entry_call(const emu_entry *d, uint64_t *workspaceSize, aclOpExecutor **executor, ...);
#define EMU_UNPAREN(...) __VA_ARGS__
/* The two exported functions of aclnn<Name>: params is the C parameter list before workspaceSize
 * (parenthesized), then the parameters' names in the same order. */
#define EMU_ENTRY(Name, desc, params, ...)                                                                   \
    EMU_EXPORT int aclnn##Name##GetWorkspaceSize(EMU_UNPAREN params, uint64_t *workspaceSize,               \
                                                 aclOpExecutor **executor) {                                 \
        return emu_entry_call(&(desc), workspaceSize, executor, __VA_ARGS__);                               \
    }                                                                                                        \
    EMU_EXPORT int aclnn##Name(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, void *stream) { \
        return emu_launch(&(desc).op, workspace, workspaceSize, executor, stream);                          \
    }

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
    switch (dtype) {
    case ACL_INT8: case ACL_UINT8: case ACL_BOOL: return 1;
    case ACL_FLOAT16: case ACL_BF16: case ACL_INT16: case ACL_UINT16: return 2;
    case ACL_FLOAT: case ACL_INT32: case ACL_UINT32: case ACL_COMPLEX32: return 4;
    case ACL_INT64: case ACL_UINT64: case ACL_DOUBLE: case ACL_COMPLEX64: return 8;
    case ACL_COMPLEX128: return 16;
    default: return 0;
    }
}
#endif
