/* libopapi.so of the emulator, its generic core: everything an operator's two entry points need
 * that is not the operator's own (declared in emu.h). The operators are in ops/, one file each.
 *
 * Phase 1 (in each operator's file) validates in the order its page gives, using the helpers here,
 * then captures the call in an executor (emu_executor, emu_ready). Phase 2 (emu_launch) checks the
 * workspace and that every view lies inside device memory, then queues the operator's run function
 * on the stream. The run function hands a float32 term function to emu_terms, which reads the
 * inputs and writes out through strides and offset, rounding with round-to-nearest-even. An
 * operator with several out tensors makes its executor with emu_executor_n and runs emu_terms_n,
 * which writes each output stored, summed or not at all, reads gathered inputs (emu_gather) at the
 * index another input holds, and lets the operator finish the sums (a mean's division).
 *
 * Faults planted here apply to every operator:
 * @fault ignore_strides EMU_FAULT_IGNORE_STRIDES reads and writes every view as contiguous
 * @fault skip_last EMU_FAULT_SKIP_LAST leaves the last element of out unwritten
 * @fault accept_rank9 EMU_FAULT_ACCEPT_RANK9 rank 9 accepted instead of rejected
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "emu.h"
#include "emu_soc_table.h" /* suite/soc.py's table, written by the build */

#ifdef EMU_FAULT_ACCEPT_RANK9
#define RANK_LIMIT 9
#else
#define RANK_LIMIT 8
#endif

/* ---- products, dtypes, shapes --------------------------------------------------------------- */
/* The product family of the SoC the runtime reports, by suite/soc.py's rules: exact names, then
 * prefixes (some requiring a digit after them, the rest of the name letters, digits, '-' or '_');
 * EMU_FAMILY_NONE for an unknown name. */
static int name_chars(const char *s) {
    for (; *s; s++)
        if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '-' || *s == '_'))
            return 0;
    return 1;
}

static int soc_family(const char *soc) {
    size_t i;
    for (i = 0; i < sizeof EMU_SOC_EXACT / sizeof *EMU_SOC_EXACT; i++)
        if (strcmp(soc, EMU_SOC_EXACT[i].name) == 0) return EMU_SOC_EXACT[i].family;
    for (i = 0; i < sizeof EMU_SOC_PREFIX / sizeof *EMU_SOC_PREFIX; i++) {
        size_t n = strlen(EMU_SOC_PREFIX[i].name);
        if (strncmp(soc, EMU_SOC_PREFIX[i].name, n) == 0 &&
            (!EMU_SOC_PREFIX[i].digit || (soc[n] >= '0' && soc[n] <= '9')) && name_chars(soc + n))
            return EMU_SOC_PREFIX[i].family;
    }
    return EMU_FAMILY_NONE;
}

int emu_soc_has_bf16(void) {
    int f = soc_family(aclemu_soc());
    return f != EMU_FAMILY_NONE && EMU_FAMILY_BF16[f];
}

const char *emu_soc_family(void) {
    int f = soc_family(aclemu_soc());
    return f == EMU_FAMILY_NONE ? "" : EMU_FAMILIES[f];
}

int emu_listed(int32_t d) {
    return d == ACL_FLOAT || d == ACL_FLOAT16 || (d == ACL_BF16 && emu_soc_has_bf16());
}

int emu_rank_ok(const aclTensor *t) { return t->ndim <= RANK_LIMIT; }

int64_t emu_numel_dims(const int64_t *dims, int64_t n) {
    int64_t k = 1;
    for (int64_t i = 0; i < n; i++) k *= dims[i];
    return k;
}

int64_t emu_numel(const aclTensor *t) { return emu_numel_dims(t->dims, t->ndim); }

static int bcast_dims(int64_t *B, int64_t *nb, const int64_t *dims, int64_t nd) {
    int64_t n = *nb > nd ? *nb : nd, r[EMU_MAX_RANK];
    if (n > EMU_MAX_RANK) return 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t ib = i - (n - *nb), id = i - (n - nd);
        int64_t x = ib >= 0 ? B[ib] : 1, y = id >= 0 ? dims[id] : 1;
        if (x == y || y == 1) r[i] = x;
        else if (x == 1) r[i] = y;
        else return 0;
    }
    memcpy(B, r, n * sizeof *r);
    *nb = n;
    return 1;
}

int emu_bcast(int64_t *B, int64_t *nb, const aclTensor *t) { return bcast_dims(B, nb, t->dims, t->ndim); }

static int same_dims(const int64_t *a, int64_t na, const int64_t *b, int64_t nb) {
    return na == nb && (na == 0 || memcmp(a, b, na * sizeof *a) == 0);
}

int emu_shape_is(const aclTensor *t, const int64_t *B, int64_t nb) { return same_dims(t->dims, t->ndim, B, nb); }

int emu_same_shape(const aclTensor *a, const aclTensor *b) { return same_dims(a->dims, a->ndim, b->dims, b->ndim); }

/* opbase's kPromoteTypesLookup restricted to the dtypes aclCreateTensor takes here
 * (github.com/hicann/opbase @aa3cd74b include/nnopbase/opdev/data_type_utils.h). */
#define f4 ACL_FLOAT
#define f2 ACL_FLOAT16
#define i1 ACL_INT8
#define i4 ACL_INT32
#define u1 ACL_UINT8
#define i2 ACL_INT16
#define i8 ACL_INT64
#define f8 ACL_DOUBLE
#define b1 ACL_BOOL
#define c4 ACL_COMPLEX64
#define c8 ACL_COMPLEX128
#define bf ACL_BF16
#define c2 ACL_COMPLEX32
#define ud EMU_NO_DTYPE
static const int32_t PROMOTE_ORDER[16] = {f4, f2, i1, i4, u1, i2, ACL_UINT16, ACL_UINT32, i8, ACL_UINT64, f8, b1,
                                          c4, c8, bf, c2};
static const int8_t PROMOTE[16][16] = {
    /*       f4  f2  i1  i4  u1  i2  u2  u4  i8  u8  f8  b1  c4  c8  bf  c2 */
    /* f4 */ {f4, f4, f4, f4, f4, f4, ud, ud, f4, ud, f8, f4, c4, c8, f4, c4},
    /* f2 */ {f4, f2, f2, f2, f2, f2, ud, ud, f2, ud, f8, f2, c4, c8, f4, c2},
    /* i1 */ {f4, f2, i1, i4, i2, i2, ud, ud, i8, ud, f8, i1, c4, c8, bf, c2},
    /* i4 */ {f4, f2, i4, i4, i4, i4, ud, ud, i8, ud, f8, i4, c4, c8, bf, c2},
    /* u1 */ {f4, f2, i2, i4, u1, i2, ud, ud, i8, ud, f8, u1, c4, c8, bf, c2},
    /* i2 */ {f4, f2, i2, i4, i2, i2, ud, ud, i8, ud, f8, i2, c4, c8, bf, c2},
    /* u2 */ {ud, ud, ud, ud, ud, ud, ud, ud, ud, ud, ud, ud, c4, c8, ud, ud},
    /* u4 */ {ud, ud, ud, ud, ud, ud, ud, ud, ud, ud, ud, ud, c4, c8, ud, ud},
    /* i8 */ {f4, f2, i8, i8, i8, i8, ud, ud, i8, ud, f8, i8, c4, c8, bf, c2},
    /* u8 */ {ud, ud, ud, ud, ud, ud, ud, ud, ud, ud, ud, ud, c8, c8, ud, ud},
    /* f8 */ {f8, f8, f8, f8, f8, f8, ud, ud, f8, ud, f8, f8, c8, c8, f8, c8},
    /* b1 */ {f4, f2, i1, i4, u1, i2, ud, ud, i8, ud, f8, b1, c4, c8, bf, c2},
    /* c4 */ {c4, c4, c4, c4, c4, c4, ud, ud, c4, ud, c8, c4, c4, c8, c4, c4},
    /* c8 */ {c8, c8, c8, c8, c8, c8, ud, ud, c8, ud, c8, c8, c8, c8, c8, c8},
    /* bf */ {f4, f4, bf, bf, bf, bf, ud, ud, bf, ud, f8, bf, c4, c8, bf, c4},
    /* c2 */ {c4, c2, c2, c2, c2, c2, ud, ud, c2, ud, c8, c2, c4, c8, c4, c2},
};
#undef f4
#undef f2
#undef i1
#undef i4
#undef u1
#undef i2
#undef i8
#undef f8
#undef b1
#undef c4
#undef c8
#undef bf
#undef c2
#undef ud

static int promote_index(int32_t d) {
    for (int i = 0; i < 16; i++)
        if (PROMOTE_ORDER[i] == d) return i;
    return -1;
}

int32_t emu_promote(int32_t a, int32_t b) {
    int ia = promote_index(a), ib = promote_index(b);
    if (ia < 0 || ib < 0) return EMU_NO_DTYPE;
    if (a == b) return a;
    return PROMOTE[ia][ib];
}

int emu_is_floating(int32_t d) { return d == ACL_FLOAT || d == ACL_FLOAT16 || d == ACL_BF16 || d == ACL_DOUBLE; }

static int is_complex(int32_t d) { return d == ACL_COMPLEX32 || d == ACL_COMPLEX64 || d == ACL_COMPLEX128; }

static int is_integral(int32_t d) {
    return d == ACL_INT8 || d == ACL_INT16 || d == ACL_INT32 || d == ACL_INT64 || d == ACL_UINT8 ||
           d == ACL_UINT16 || d == ACL_UINT32 || d == ACL_UINT64;
}

int emu_can_cast(int32_t from, int32_t to) { /* opbase's CanCast */
    if (is_complex(from) && !is_complex(to)) return 0;
    if (emu_is_floating(from) && is_integral(to)) return 0;
    if (from != ACL_BOOL && to == ACL_BOOL) return 0;
    return 1;
}

int emu_loadable(int32_t d) {
    return emu_is_floating(d) || d == ACL_INT8 || d == ACL_INT16 || d == ACL_INT32 || d == ACL_INT64 ||
           d == ACL_UINT8 || d == ACL_BOOL;
}

int emu_storable(int32_t d) { return emu_is_floating(d); }

float emu_round_to(int32_t dtype, float v) {
    switch (dtype) {
    case ACL_FLOAT16: return emu_half_to_float(emu_float_to_half(v));
    case ACL_BF16: return emu_bf16_to_float(emu_float_to_bf16(v));
    default: return v; /* FLOAT, DOUBLE (wider than the float32 result), or none */
    }
}

/* ---- views ------------------------------------------------------------------------------------ */
static void capture(emu_view *v, const aclTensor *t) {
    memset(v, 0, sizeof *v);
    if (!t) return; /* a NULL optional tensor: absent */
    v->present = 1;
    v->ndim = t->ndim;
    memcpy(v->dims, t->dims, t->ndim * sizeof(int64_t));
    memcpy(v->strides, t->strides, t->ndim * sizeof(int64_t));
    v->offset = t->offset;
    v->dtype = t->dtype;
    v->data = t->data;
    v->storage = emu_numel_dims(t->storage_dims, t->nstorage);
}

/* CANN's phase-1 view check (opbase, op::Validate in tensor_view_utils.cpp): every element a
 * non-empty view reaches, from offset + the negative strides' reach to offset + the positive
 * strides' reach, lies inside the storage dims' element count; else 161002 "ViewShape overlap".
 * Negative strides themselves are fine. A negative dim is refused here too. */
static int view_in_storage(const emu_view *v) {
    int64_t lo = v->offset, hi = v->offset, n = 1;
    for (int64_t d = 0; d < v->ndim; d++) {
        if (v->dims[d] < 0) return 0;
        n *= v->dims[d];
    }
    if (n == 0) return 1; /* reaches nothing */
    for (int64_t d = 0; d < v->ndim; d++) {
        int64_t reach = v->strides[d] * (v->dims[d] - 1);
        if (reach > 0) hi += reach; else lo += reach;
    }
    return lo >= 0 && hi + 1 <= v->storage;
}

/* The view the computation actually uses (the strides fault reads every view as contiguous). */
static emu_view effective(const emu_view *v) {
    emu_view e = *v;
#ifdef EMU_FAULT_IGNORE_STRIDES
    for (int64_t i = e.ndim - 1, run = 1; i >= 0; i--) { e.strides[i] = run; run *= e.dims[i]; }
    e.offset = 0;
#endif
    return e;
}

static int view_in_memory(const emu_view *v) {
    if (!v->present || emu_numel_dims(v->dims, v->ndim) == 0) return 1;
    int64_t lo = v->offset, hi = v->offset, isz = emu_itemsize(v->dtype);
    for (int64_t i = 0; i < v->ndim; i++) {
        int64_t span = (v->dims[i] - 1) * v->strides[i];
        if (span < 0) lo += span; else hi += span;
    }
    if (lo < 0 || !v->data || !isz) return 0;
    return aclemu_in_device_memory((char *)v->data + lo * isz, (size_t)((hi - lo + 1) * isz));
}

/* Output k of the executor: out, then the others in C-parameter order. */
static const emu_view *output_of(const aclOpExecutor *ex, int k) { return k ? &ex->more[k - 1] : &ex->out; }

/* Index of the first view (inputs in order, then the outputs from nin on) outside device memory, or -1. */
static int first_view_outside(const aclOpExecutor *ex) {
    for (int i = 0; i < ex->nin + ex->nout; i++) {
        emu_view v = effective(i < ex->nin ? &ex->in[i] : output_of(ex, i - ex->nin));
        if (!view_in_memory(&v)) return i;
    }
    return -1;
}

static float load(const emu_view *v, int64_t off) {
    const char *p = (const char *)v->data + off * emu_itemsize(v->dtype);
    uint16_t h;
    float f;
    double d;
    int8_t b;
    int16_t s;
    int32_t i;
    int64_t l;
    switch (v->dtype) {
    case ACL_FLOAT: memcpy(&f, p, 4); return f;
    case ACL_FLOAT16: memcpy(&h, p, 2); return emu_half_to_float(h);
    case ACL_BF16: memcpy(&h, p, 2); return emu_bf16_to_float(h);
    case ACL_DOUBLE: memcpy(&d, p, 8); return (float)d;
    /* integers reach float32 through one conversion (RNE); one more rounding to a narrower cast_in
     * can double-round integers beyond 2^24, which no case of the suite has */
    case ACL_INT8: memcpy(&b, p, 1); return (float)b;
    case ACL_UINT8: return (float)*(const uint8_t *)p;
    case ACL_BOOL: return *(const uint8_t *)p ? 1.0f : 0.0f;
    case ACL_INT16: memcpy(&s, p, 2); return (float)s;
    case ACL_INT32: memcpy(&i, p, 4); return (float)i;
    case ACL_INT64: memcpy(&l, p, 8); return (float)l;
    default: return NAN; /* phase 1 lets no such dtype through */
    }
}

static void store(const emu_view *v, int64_t off, float f) {
    char *p = (char *)v->data + off * emu_itemsize(v->dtype);
    uint16_t h;
    double d;
    switch (v->dtype) {
    case ACL_FLOAT: memcpy(p, &f, 4); return;
    case ACL_FLOAT16: h = emu_float_to_half(f); memcpy(p, &h, 2); return;
    case ACL_BF16: h = emu_float_to_bf16(f); memcpy(p, &h, 2); return;
    case ACL_DOUBLE: d = f; memcpy(p, &d, 8); return;
    default: return; /* phase 1 lets no such dtype through (emu_storable) */
    }
}

/* Strides of view v laid over shape B (right-aligned), 0 along broadcast dimensions. */
static void bstrides(const emu_view *v, const int64_t *B, int64_t nb, int64_t *out) {
    for (int64_t i = 0; i < nb; i++) {
        int64_t j = i - (nb - v->ndim);
        out[i] = (j < 0 || (v->dims[j] == 1 && B[i] != 1)) ? 0 : v->strides[j];
    }
}

static void contiguous(emu_view *v) {
    for (int64_t i = v->ndim - 1, run = 1; i >= 0; i--) { v->strides[i] = run; run *= v->dims[i]; }
    v->offset = 0;
}

/* The next element of view `o` in C order: its index `cs` and its offset `at` (elements). */
static void next_element(const emu_view *o, int64_t *cs, int64_t *at) {
    for (int64_t d = o->ndim - 1; d >= 0; d--) {
        cs[d]++;
        *at += o->strides[d];
        if (cs[d] < o->dims[d]) return;
        *at -= o->strides[d] * o->dims[d];
        cs[d] = 0;
    }
}

/* ---- the elementwise driver ------------------------------------------------------------------ */
void emu_terms(aclOpExecutor *ex, emu_term_fn fn) {
    int nin = ex->nin, k;
    const int64_t nb = ex->bndim, *B = ex->bdims, n = emu_numel_dims(B, nb);
    emu_view v[EMU_MAX_INPUTS], o = effective(&ex->out);
    int64_t st[EMU_MAX_INPUTS + 1][EMU_MAX_RANK], off[EMU_MAX_INPUTS + 1], idx[EMU_MAX_RANK] = {0};
    float x[EMU_MAX_INPUTS] = {0};
    const int reduce = !same_dims(o.dims, o.ndim, B, nb);
    const int64_t nout = emu_numel_dims(o.dims, o.ndim);
    float *acc = reduce ? (float *)ex->ws_ptr : NULL;
    for (k = 0; k < nin; k++) {
        v[k] = effective(&ex->in[k]);
        if (v[k].present) bstrides(&v[k], B, nb, st[k]);
        else memset(st[k], 0, sizeof st[k]); /* an absent input is never read; its offset stays 0 */
        off[k] = v[k].offset;
    }
    if (reduce) { /* accumulate in the workspace, indexed by out's contiguous layout */
        emu_view c = ex->out;
        contiguous(&c);
        bstrides(&c, B, nb, st[nin]);
        off[nin] = 0;
        for (int64_t j = 0; j < nout; j++) acc[j] = 0.0f;
    } else {
        memcpy(st[nin], o.strides, nb * sizeof(int64_t));
        off[nin] = o.offset;
    }
    for (int64_t lin = 0; lin < n; lin++) {
        for (k = 0; k < nin; k++)
            if (v[k].present) x[k] = emu_round_to(ex->cast_in, load(&v[k], off[k]));
        float r = fn(ex, x);
        if (reduce) acc[off[nin]] += r;
#ifdef EMU_FAULT_SKIP_LAST
        else if (lin == n - 1) break;
#endif
        else store(&o, off[nin], emu_round_to(ex->result, r));
        for (int64_t d = nb - 1; d >= 0; d--) { /* next index of B in C order, offsets along */
            idx[d]++;
            for (k = 0; k <= nin; k++) off[k] += st[k][d];
            if (idx[d] < B[d]) break;
            for (k = 0; k <= nin; k++) off[k] -= st[k][d] * B[d];
            idx[d] = 0;
        }
    }
    if (reduce) {
        int64_t cs[EMU_MAX_RANK] = {0}, at = o.offset;
        for (int64_t j = 0; j < nout; j++) {
#ifdef EMU_FAULT_SKIP_LAST
            if (j == nout - 1) break;
#endif
            store(&o, at, emu_round_to(ex->result, acc[j]));
            next_element(&o, cs, &at);
        }
    }
}

void emu_fill(aclOpExecutor *ex, float v) {
    emu_view o = effective(&ex->out);
    int64_t cs[EMU_MAX_RANK] = {0}, at = o.offset, nout = emu_numel_dims(o.dims, o.ndim);
    for (int64_t j = 0; j < nout; j++) {
        store(&o, at, v);
        next_element(&o, cs, &at);
    }
}

/* ---- several outputs, gathered inputs ------------------------------------------------------------ */
/* Whether emu_terms_n sums into output k (the workspace holds its accumulators). */
static int output_summed(const aclOpExecutor *ex, int k) {
    const emu_view *o = output_of(ex, k);
    int mode = ex->outmode[k];
    return o->present && mode != EMU_OUT_NONE &&
           (mode == EMU_OUT_SUM || !same_dims(o->dims, o->ndim, ex->bdims, ex->bndim));
}

static int64_t load_index(const emu_view *v, int64_t off) {
    const char *p = (const char *)v->data + off * emu_itemsize(v->dtype);
    int8_t b;
    int16_t s;
    int32_t i;
    int64_t l;
    switch (v->dtype) {
    case ACL_INT8: memcpy(&b, p, 1); return b;
    case ACL_UINT8: case ACL_BOOL: return *(const uint8_t *)p;
    case ACL_INT16: memcpy(&s, p, 2); return s;
    case ACL_INT32: memcpy(&i, p, 4); return i;
    case ACL_INT64: memcpy(&l, p, 8); return l;
    default: return 0; /* not an integer input: ix[] is not its value */
    }
}

void emu_gather(aclOpExecutor *ex, int k, int64_t axis, int by) {
    ex->gby[k] = by + 1;
    ex->gaxis[k] = axis;
}

void emu_terms_n(aclOpExecutor *ex, emu_terms_n_fn fn, emu_finish_fn finish) {
    int nin = ex->nin, nout = ex->nout, k;
    const int nt = nin + nout;
    const int64_t nb = ex->bndim, *B = ex->bdims, n = emu_numel_dims(B, nb);
    emu_view v[EMU_MAX_INPUTS], o[EMU_MAX_OUTPUTS];
    int64_t st[EMU_MAX_INPUTS + EMU_MAX_OUTPUTS][EMU_MAX_RANK], off[EMU_MAX_INPUTS + EMU_MAX_OUTPUTS];
    int64_t idx[EMU_MAX_RANK] = {0}, gst[EMU_MAX_INPUTS] = {0}, glen[EMU_MAX_INPUTS] = {0}, ix[EMU_MAX_INPUTS] = {0};
    int64_t nel[EMU_MAX_OUTPUTS] = {0};
    float x[EMU_MAX_INPUTS] = {0}, r[EMU_MAX_OUTPUTS] = {0}, *acc[EMU_MAX_OUTPUTS] = {0};
    int written[EMU_MAX_OUTPUTS], summed[EMU_MAX_OUTPUTS];
    float *ws = (float *)ex->ws_ptr;
    for (k = 0; k < nin; k++) {
        v[k] = effective(&ex->in[k]);
        if (ex->gby[k] && v[k].present) { /* the gathered axis leaves the walk: the index steps along it */
            int64_t a = ex->gaxis[k];
            gst[k] = v[k].strides[a];
            glen[k] = v[k].dims[a];
            for (int64_t d = a; d + 1 < v[k].ndim; d++) {
                v[k].dims[d] = v[k].dims[d + 1];
                v[k].strides[d] = v[k].strides[d + 1];
            }
            v[k].ndim--;
        }
        if (v[k].present) bstrides(&v[k], B, nb, st[k]);
        else memset(st[k], 0, sizeof st[k]);
        off[k] = v[k].offset;
    }
    for (k = 0; k < nout; k++) {
        const int j = nin + k;
        o[k] = effective(output_of(ex, k));
        nel[k] = emu_numel_dims(o[k].dims, o[k].ndim);
        written[k] = o[k].present && ex->outmode[k] != EMU_OUT_NONE;
        summed[k] = output_summed(ex, k);
        memset(st[j], 0, sizeof st[j]);
        off[j] = 0;
        if (summed[k]) { /* accumulators in the workspace, indexed by the output's contiguous layout */
            emu_view c = *output_of(ex, k);
            contiguous(&c);
            bstrides(&c, B, nb, st[j]);
            acc[k] = ws;
            ws += nel[k];
            for (int64_t e = 0; e < nel[k]; e++) acc[k][e] = 0.0f;
        } else if (written[k]) {
            memcpy(st[j], o[k].strides, nb * sizeof(int64_t));
            off[j] = o[k].offset;
        }
    }
    for (int64_t lin = 0; lin < n; lin++) {
        for (k = 0; k < nin; k++) /* the walked inputs first: a gather's index is one of them */
            if (v[k].present && !ex->gby[k]) {
                x[k] = emu_round_to(ex->cast_in, load(&v[k], off[k]));
                ix[k] = load_index(&v[k], off[k]);
            }
        for (k = 0; k < nin; k++)
            if (v[k].present && ex->gby[k]) {
                int64_t i = ix[ex->gby[k] - 1];
                x[k] = (i >= 0 && i < glen[k]) ? emu_round_to(ex->cast_in, load(&v[k], off[k] + i * gst[k])) : 0.0f;
            }
        fn(ex, x, ix, r);
        for (k = 0; k < nout; k++) {
            if (!written[k]) continue;
            if (summed[k]) acc[k][off[nin + k]] += r[k];
#ifdef EMU_FAULT_SKIP_LAST
            else if (lin == n - 1) continue;
#endif
            else store(&o[k], off[nin + k], emu_round_to(ex->result, r[k]));
        }
        for (int64_t d = nb - 1; d >= 0; d--) { /* next index of B in C order, offsets along */
            idx[d]++;
            for (k = 0; k < nt; k++) off[k] += st[k][d];
            if (idx[d] < B[d]) break;
            for (k = 0; k < nt; k++) off[k] -= st[k][d] * B[d];
            idx[d] = 0;
        }
    }
    if (finish) finish(ex, acc);
    for (k = 0; k < nout; k++) {
        if (!summed[k]) continue;
        int64_t cs[EMU_MAX_RANK] = {0}, at = o[k].offset;
        for (int64_t e = 0; e < nel[k]; e++) {
#ifdef EMU_FAULT_SKIP_LAST
            if (e == nel[k] - 1) break;
#endif
            store(&o[k], at, emu_round_to(ex->result, acc[k][e]));
            next_element(&o[k], cs, &at);
        }
    }
}

/* ---- executor, workspace, launch --------------------------------------------------------------- */
aclOpExecutor *emu_executor(const emu_op *op, const aclTensor *const *in, int nin, const aclTensor *out,
                            const int64_t *B, int64_t nb) {
    if (nin > EMU_MAX_INPUTS) { /* an operator file's defect, not a call's */
        fprintf(stderr, "aclemu: %s has %d tensor inputs; the core holds at most %d\n", op->name, nin, EMU_MAX_INPUTS);
        abort();
    }
    aclOpExecutor *ex = calloc(1, sizeof *ex);
    ex->magic = EMU_EXEC_MAGIC;
    ex->op = op;
    ex->nin = nin;
    for (int i = 0; i < nin; i++) capture(&ex->in[i], in[i]);
    capture(&ex->out, out);
    memcpy(ex->bdims, B, nb * sizeof *B);
    ex->bndim = nb;
    ex->nout = 1;
    ex->cast_in = ex->result = EMU_NO_DTYPE;
    ex->empty = emu_numel(out) == 0;
    aclemu_count(EMU_EXECUTORS, 1);
    return ex;
}

aclOpExecutor *emu_executor_n(const emu_op *op, const aclTensor *const *in, int nin, const aclTensor *const *outs,
                              int nout, const int64_t *B, int64_t nb) {
    if (nout < 1 || nout > EMU_MAX_OUTPUTS || !outs[0]) { /* an operator file's defect, not a call's */
        fprintf(stderr, "aclemu: %s has %d outputs (out first, never NULL); the core holds 1 to %d\n", op->name,
                nout, EMU_MAX_OUTPUTS);
        abort();
    }
    aclOpExecutor *ex = emu_executor(op, in, nin, outs[0], B, nb);
    ex->nout = nout;
    for (int k = 1; k < nout; k++) capture(&ex->more[k - 1], outs[k]);
    return ex;
}

int emu_ready(aclOpExecutor *ex, uint64_t *workspaceSize, aclOpExecutor **executor) {
    const emu_view *o = &ex->out;
    for (int i = 0; i < ex->nin + ex->nout; i++) {
        const emu_view *v = i < ex->nin ? &ex->in[i] : output_of(ex, i - ex->nin);
        if (v->present && !view_in_storage(v)) {
            fprintf(stderr, "aclemu: %s: tensor %d: ViewShape overlap (the view reaches outside its storage "
                            "dims)\n", ex->op->name, i);
            aclDestroyAclOpExecutor(ex);
            return ACLNN_ERR_PARAM_INVALID;
        }
    }
    if (ex->nout > 1) { /* empty when no written output has an element; accumulators for each summed one */
        uint64_t ws = 0;
        int empty = 1;
        for (int k = 0; k < ex->nout; k++) {
            const emu_view *v = output_of(ex, k);
            if (v->present && ex->outmode[k] != EMU_OUT_NONE && emu_numel_dims(v->dims, v->ndim) > 0) empty = 0;
            if (output_summed(ex, k)) ws += (uint64_t)emu_numel_dims(v->dims, v->ndim) * sizeof(float);
        }
        ex->empty = empty;
        ex->workspace = empty ? 0 : ws;
    } else {
        ex->workspace = (!ex->empty && !same_dims(o->dims, o->ndim, ex->bdims, ex->bndim))
                            ? (uint64_t)emu_numel_dims(o->dims, o->ndim) * sizeof(float) : 0;
    }
    *workspaceSize = ex->workspace;
    *executor = ex;
    aclemu_trace("P", 0, 0);
    return ACLNN_SUCCESS;
}

/* What the kernel moves: every present input view and every present output at its dtype (logical
 * elements, as suite/perf/traffic.py counts them): its time on the emulated device clock. */
static uint64_t bytes_moved(const aclOpExecutor *ex) {
    uint64_t n = 0;
    for (int i = 0; i < ex->nin + ex->nout; i++) {
        const emu_view *v = i < ex->nin ? &ex->in[i] : output_of(ex, i - ex->nin);
        if (v->present) n += (uint64_t)emu_numel_dims(v->dims, v->ndim) * (uint64_t)emu_itemsize(v->dtype);
    }
    return n;
}

static void run_task(void *arg) {
    aclOpExecutor *ex = arg;
    int ws_ok = !ex->workspace || aclemu_in_device_memory(ex->ws_ptr, ex->workspace);
    if (!ex->empty && (first_view_outside(ex) >= 0 || !ws_ok)) { /* freed before the stream ran */
        fprintf(stderr, "aclemu: kernel ran after its memory was freed (missing synchronisation?)\n");
        aclemu_device_fault();
    } else if (!ex->empty && aclemu_kernel_may_run()) { /* else: the planted AI-core fault, or poisoned */
        ex->op->run(ex);
    }
    aclemu_kernel_ran(ex->out.data, bytes_moved(ex));
    ex->pending--;
    if (!ex->repeatable) aclDestroyAclOpExecutor(ex); /* a non-repeatable executor dies with its launch */
}

int emu_launch(const emu_op *op, void *workspace, uint64_t workspaceSize, aclOpExecutor *ex, void *stream) {
    int st = ACLNN_SUCCESS, bad;
    if (!ex) return ACLNN_ERR_PARAM_NULLPTR;
    if (ex->magic != EMU_EXEC_MAGIC || ex->op != op) return ACLNN_ERR_PARAM_INVALID;
    if (ex->pending && !ex->repeatable) return ACLNN_ERR_PARAM_INVALID; /* launched twice, never made repeatable */
    if (ex->workspace) {
        if (!workspace) st = ACLNN_ERR_PARAM_NULLPTR;
        else if (workspaceSize < ex->workspace) st = ACLNN_ERR_PARAM_INVALID;
        else if (!aclemu_in_device_memory(workspace, ex->workspace)) st = ACLNN_ERR_RUNTIME_ERROR;
    }
    if (!st && !ex->empty && (bad = first_view_outside(ex)) >= 0) {
        fprintf(stderr, "aclemu: tensor %d of the call reaches outside device memory\n", bad);
        st = ACLNN_ERR_RUNTIME_ERROR;
    }
    if (st) { if (!ex->repeatable) aclDestroyAclOpExecutor(ex); return st; }
    ex->ws_ptr = workspace;
    ex->pending++;
    aclemu_trace("K@%d", aclemu_stream_id(stream), 0);
    if (aclemu_enqueue(stream, run_task, ex)) {
        ex->pending--;
        if (!ex->repeatable) aclDestroyAclOpExecutor(ex);
        return ACLNN_ERR_RUNTIME_ERROR;
    }
    return ACLNN_SUCCESS;
}
