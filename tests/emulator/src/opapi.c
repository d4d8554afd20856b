/* libopapi.so of the emulator: aclnnMseLossBackward and aclnnKlDivBackward, two phases each.
 *
 * Phase 1 validates exactly as docs/operators/MseLossBackward.md and KlDivBackward.md tabulate
 * (NULL -> 161001 first, then 161002 checks; dtypes per the SoC's product family), and captures
 * the views. Phase 2 checks the workspace and that every view lies inside device memory, then
 * queues the computation on the stream. The computation follows the pages' "How the vendor
 * kernel computes" sections in float32, reading inputs and writing out through strides + offset,
 * and rounds to out's dtype (RNE). KlDivBackward asks for a workspace (float32 accumulators)
 * whenever it must sum over broadcast dimensions.
 *
 * Fault builds (-D...): EMU_FAULT_IGNORE_STRIDES, EMU_FAULT_SKIP_LAST, EMU_FAULT_WRONG_STATUS,
 * EMU_FAULT_ACCEPT_RANK9, EMU_FAULT_MASK_TARGET, EMU_FAULT_MEAN_N_B, EMU_FAULT_NO_KL_SYMBOL.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "emu.h"

#ifdef EMU_FAULT_ACCEPT_RANK9
#define RANK_LIMIT 9
#else
#define RANK_LIMIT 8
#endif
#define OP_MSE 1
#define OP_KL 2

static int bf16_supported(void) {
    const char *soc = aclemu_soc();
    return strncmp(soc, "Ascend910B", 10) == 0 || strncmp(soc, "Ascend910_93", 12) == 0;
}

static int dtype_ok(int32_t d) {
    return d == ACL_FLOAT || d == ACL_FLOAT16 || (d == ACL_BF16 && bf16_supported());
}

static int64_t numel(const int64_t *dims, int64_t n) {
    int64_t k = 1;
    for (int64_t i = 0; i < n; i++) k *= dims[i];
    return k;
}

/* B := broadcast(B, dims); returns 0 when the shapes do not broadcast. */
static int bcast_into(int64_t *B, int64_t *nb, const int64_t *dims, int64_t nd) {
    int64_t n = *nb > nd ? *nb : nd, r[EMU_MAX_RANK];
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

static int same_shape(const int64_t *a, int64_t na, const int64_t *b, int64_t nb) {
    return na == nb && memcmp(a, b, na * sizeof *a) == 0;
}

static void capture(emu_view *v, const aclTensor *t) {
    v->present = 1;
    v->ndim = t->ndim;
    memcpy(v->dims, t->dims, t->ndim * sizeof(int64_t));
    memcpy(v->strides, t->strides, t->ndim * sizeof(int64_t));
    v->offset = t->offset;
    v->dtype = t->dtype;
    v->data = t->data;
}

/* An executor holding the validated call: the four views, the broadcast shape, the reduction. */
static aclOpExecutor *new_executor(int op, const aclTensor *grad, const aclTensor *self, const aclTensor *target,
                                   const aclTensor *out, const int64_t *B, int64_t nb, int64_t reduction) {
    aclOpExecutor *ex = calloc(1, sizeof *ex);
    ex->magic = EMU_EXEC_MAGIC;
    ex->op = op;
    capture(&ex->grad, grad);
    capture(&ex->self, self);
    capture(&ex->target, target);
    capture(&ex->out, out);
    memcpy(ex->bdims, B, nb * sizeof *B);
    ex->bndim = nb;
    ex->reduction = reduction;
    aclemu_count(EMU_EXECUTORS, 1);
    return ex;
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
    if (!v->present || numel(v->dims, v->ndim) == 0) return 1;
    int64_t lo = v->offset, hi = v->offset, isz = emu_itemsize(v->dtype);
    for (int64_t i = 0; i < v->ndim; i++) {
        int64_t span = (v->dims[i] - 1) * v->strides[i];
        if (span < 0) lo += span; else hi += span;
    }
    if (lo < 0 || !v->data) return 0;
    return aclemu_in_device_memory((char *)v->data + lo * isz, (size_t)((hi - lo + 1) * isz));
}

static float load(const emu_view *v, int64_t off) {
    const char *p = (const char *)v->data + off * emu_itemsize(v->dtype);
    uint16_t h;
    float f;
    switch (v->dtype) {
    case ACL_FLOAT: memcpy(&f, p, 4); return f;
    case ACL_FLOAT16: memcpy(&h, p, 2); return emu_half_to_float(h);
    default: memcpy(&h, p, 2); return emu_bf16_to_float(h);
    }
}

static void store(const emu_view *v, int64_t off, float f) {
    char *p = (char *)v->data + off * emu_itemsize(v->dtype);
    uint16_t h;
    switch (v->dtype) {
    case ACL_FLOAT: memcpy(p, &f, 4); return;
    case ACL_FLOAT16: h = emu_float_to_half(f); memcpy(p, &h, 2); return;
    default: h = emu_float_to_bf16(f); memcpy(p, &h, 2); return;
    }
}

/* Strides of view v laid over shape B (right-aligned), 0 along broadcast dimensions. */
static void bstrides(const emu_view *v, const int64_t *B, int64_t nb, int64_t *out) {
    for (int64_t i = 0; i < nb; i++) {
        int64_t j = i - (nb - v->ndim);
        out[i] = (j < 0 || (v->dims[j] == 1 && B[i] != 1)) ? 0 : v->strides[j];
    }
}

static void unravel(int64_t lin, const int64_t *dims, int64_t n, int64_t *idx) {
    for (int64_t i = n - 1; i >= 0; i--) { idx[i] = dims[i] ? lin % dims[i] : 0; lin = dims[i] ? lin / dims[i] : 0; }
}

static int64_t dot(const int64_t *idx, const int64_t *strides, int64_t n) {
    int64_t s = 0;
    for (int64_t i = 0; i < n; i++) s += idx[i] * strides[i];
    return s;
}

static void run_mse(aclOpExecutor *ex) {
    emu_view g = effective(&ex->grad), s = effective(&ex->self), t = effective(&ex->target), o = effective(&ex->out);
    int64_t nb = ex->bndim, *B = ex->bdims, n = numel(B, nb), idx[EMU_MAX_RANK];
    int64_t sg[EMU_MAX_RANK], ss[EMU_MAX_RANK], st[EMU_MAX_RANK];
    bstrides(&g, B, nb, sg);
    bstrides(&s, B, nb, ss);
    bstrides(&t, B, nb, st);
#ifdef EMU_FAULT_MEAN_N_B
    int64_t N = n;
#else
    int64_t N = numel(ex->self.dims, ex->self.ndim); /* numel(self) as passed, before broadcasting */
#endif
    float cof = ex->reduction == 1 ? 2.0f / (float)N : 2.0f;
    for (int64_t lin = 0; lin < n; lin++) {
#ifdef EMU_FAULT_SKIP_LAST
        if (lin == n - 1) break;
#endif
        unravel(lin, B, nb, idx);
        float gv = load(&g, g.offset + dot(idx, sg, nb));
        float sv = load(&s, s.offset + dot(idx, ss, nb));
        float tv = load(&t, t.offset + dot(idx, st, nb));
        float d = sv - tv;
        d = d * cof;
        float r = d * gv;
        store(&o, o.offset + dot(idx, o.strides, nb), r);
    }
}

static void run_kl(aclOpExecutor *ex) {
    emu_view g = effective(&ex->grad), t = effective(&ex->target), o = effective(&ex->out);
    const emu_view *s = &ex->self;
    int64_t nb = ex->bndim, *B = ex->bdims, n = numel(B, nb), ns = numel(s->dims, s->ndim);
    int64_t idx[EMU_MAX_RANK], sg[EMU_MAX_RANK], st[EMU_MAX_RANK], sacc[EMU_MAX_RANK], cs[EMU_MAX_RANK];
    int reduce = !same_shape(s->dims, s->ndim, B, nb);
    float cof = 1.0f, *acc = reduce ? (float *)ex->ws_ptr : NULL;
    bstrides(&g, B, nb, sg);
    bstrides(&t, B, nb, st);
    if (ex->reduction == 1) cof = (float)(1.0 / (double)n);
    else if (ex->reduction == 3 && nb > 0) cof = (float)(1.0 / (double)B[0]);
    if (reduce) { /* accumulate in the workspace, indexed by self's contiguous layout */
        emu_view cself = *s;
        for (int64_t i = s->ndim - 1, run = 1; i >= 0; i--) { cself.strides[i] = run; run *= s->dims[i]; }
        bstrides(&cself, B, nb, sacc);
        for (int64_t k = 0; k < ns; k++) acc[k] = 0.0f;
    }
    for (int64_t lin = 0; lin < n; lin++) {
#ifdef EMU_FAULT_SKIP_LAST
        if (!reduce && lin == n - 1) break;
#endif
        unravel(lin, B, nb, idx);
        float tv = load(&t, t.offset + dot(idx, st, nb));
        float gv = load(&g, g.offset + dot(idx, sg, nb));
        float e = ex->log_target ? expf(tv) : tv;
        float v = -e;
        v = v * gv;
        v = v * cof;
#ifdef EMU_FAULT_MASK_TARGET
        if (!ex->log_target && !(tv > 0.0f)) v = 0.0f; /* obsolete kernel: target > 0 ? ... : 0 */
#endif
        if (reduce) acc[dot(idx, sacc, nb)] += v;
        else store(&o, o.offset + dot(idx, o.strides, nb), v);
    }
    if (reduce) {
        for (int64_t k = 0; k < ns; k++) {
#ifdef EMU_FAULT_SKIP_LAST
            if (k == ns - 1) break;
#endif
            unravel(k, s->dims, s->ndim, cs);
            store(&o, o.offset + dot(cs, o.strides, s->ndim), acc[k]);
        }
    }
}

static int views_in_memory(const aclOpExecutor *ex) {
    emu_view v[4] = {effective(&ex->grad), effective(&ex->self), effective(&ex->target), effective(&ex->out)};
    for (int i = 0; i < 4; i++)
        if (!view_in_memory(&v[i])) return 0;
    return !ex->workspace || aclemu_in_device_memory(ex->ws_ptr, ex->workspace);
}

static void run_task(void *arg) {
    aclOpExecutor *ex = arg;
    if (!ex->empty && !views_in_memory(ex)) { /* freed before the stream ran: a device fault */
        fprintf(stderr, "aclemu: kernel ran after its memory was freed (missing synchronisation?)\n");
        aclemu_device_fault();
    } else if (!ex->empty) {
        if (ex->op == OP_MSE) run_mse(ex);
        else run_kl(ex);
    }
    aclDestroyAclOpExecutor(ex); /* a non-repeatable executor dies with its launch */
}

static int launch(void *workspace, uint64_t workspaceSize, aclOpExecutor *ex, void *stream, int op) {
    int st = ACLNN_SUCCESS;
    if (!ex) return ACLNN_ERR_PARAM_NULLPTR;
    if (ex->magic != EMU_EXEC_MAGIC || ex->op != op) return ACLNN_ERR_PARAM_INVALID;
    if (ex->workspace) {
        if (!workspace) st = ACLNN_ERR_PARAM_NULLPTR;
        else if (workspaceSize < ex->workspace) st = ACLNN_ERR_PARAM_INVALID;
        else if (!aclemu_in_device_memory(workspace, ex->workspace)) st = ACLNN_ERR_RUNTIME_ERROR;
    }
    if (!st && !ex->empty) {
        emu_view v[4] = {effective(&ex->grad), effective(&ex->self), effective(&ex->target), effective(&ex->out)};
        for (int i = 0; i < 4; i++)
            if (!view_in_memory(&v[i])) {
                fprintf(stderr, "aclemu: tensor %d of the call reaches outside device memory\n", i);
                st = ACLNN_ERR_RUNTIME_ERROR;
            }
    }
    if (st) { aclDestroyAclOpExecutor(ex); return st; }
    ex->ws_ptr = workspace;
    if (aclemu_enqueue(stream, run_task, ex)) { aclDestroyAclOpExecutor(ex); return ACLNN_ERR_RUNTIME_ERROR; }
    return ACLNN_SUCCESS;
}

EMU_EXPORT int aclnnMseLossBackwardGetWorkspaceSize(const aclTensor *gradOutput, const aclTensor *self,
                                                    const aclTensor *target, int64_t reduction, aclTensor *out,
                                                    uint64_t *workspaceSize, aclOpExecutor **executor) {
    int64_t B[EMU_MAX_RANK], nb = 0;
    if (!gradOutput || !self || !target || !out || !workspaceSize || !executor) return ACLNN_ERR_PARAM_NULLPTR;
    if (!dtype_ok(self->dtype) || gradOutput->dtype != self->dtype || target->dtype != self->dtype) return ACLNN_ERR_PARAM_INVALID;
    if (!dtype_ok(out->dtype)) return ACLNN_ERR_PARAM_INVALID;
    if (reduction < 0 || reduction > 2) {
#ifdef EMU_FAULT_WRONG_STATUS
        return ACLNN_ERR_PARAM_NULLPTR;
#else
        return ACLNN_ERR_PARAM_INVALID;
#endif
    }
    if (gradOutput->ndim > RANK_LIMIT || self->ndim > RANK_LIMIT || target->ndim > RANK_LIMIT) return ACLNN_ERR_PARAM_INVALID;
    if (!bcast_into(B, &nb, gradOutput->dims, gradOutput->ndim) || !bcast_into(B, &nb, self->dims, self->ndim) ||
        !bcast_into(B, &nb, target->dims, target->ndim))
        return ACLNN_ERR_PARAM_INVALID;
    if (!same_shape(out->dims, out->ndim, B, nb)) return ACLNN_ERR_PARAM_INVALID;
    aclOpExecutor *ex = new_executor(OP_MSE, gradOutput, self, target, out, B, nb, reduction);
    ex->empty = numel(gradOutput->dims, gradOutput->ndim) == 0 || numel(self->dims, self->ndim) == 0 ||
                numel(target->dims, target->ndim) == 0;
    *workspaceSize = 0;
    *executor = ex;
    return ACLNN_SUCCESS;
}

EMU_EXPORT int aclnnMseLossBackward(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, void *stream) {
    return launch(workspace, workspaceSize, executor, stream, OP_MSE);
}

#ifndef EMU_FAULT_NO_KL_SYMBOL
EMU_EXPORT int aclnnKlDivBackwardGetWorkspaceSize(const aclTensor *gradOutput, const aclTensor *self,
                                                  const aclTensor *target, int64_t reduction, _Bool logTarget,
                                                  aclTensor *out, uint64_t *workspaceSize, aclOpExecutor **executor) {
    int64_t B[EMU_MAX_RANK], nb = 0, G[EMU_MAX_RANK], ng;
    if (!gradOutput || !self || !target || !out || !workspaceSize || !executor) return ACLNN_ERR_PARAM_NULLPTR;
    if (!dtype_ok(gradOutput->dtype) || !dtype_ok(self->dtype) || !dtype_ok(target->dtype) || !dtype_ok(out->dtype))
        return ACLNN_ERR_PARAM_INVALID; /* floats all cast to each other: no separate cast check needed */
    if (gradOutput->ndim > RANK_LIMIT || self->ndim > RANK_LIMIT || target->ndim > RANK_LIMIT || out->ndim > RANK_LIMIT)
        return ACLNN_ERR_PARAM_INVALID;
    if (!bcast_into(B, &nb, self->dims, self->ndim) || !bcast_into(B, &nb, target->dims, target->ndim))
        return ACLNN_ERR_PARAM_INVALID;
    memcpy(G, B, nb * sizeof *B);
    ng = nb;
    if (!bcast_into(G, &ng, gradOutput->dims, gradOutput->ndim) || !same_shape(G, ng, B, nb)) return ACLNN_ERR_PARAM_INVALID;
    if (!same_shape(out->dims, out->ndim, self->dims, self->ndim)) return ACLNN_ERR_PARAM_INVALID;
    /* reduction values outside 0..3 behave as none, like the vendor code */
    aclOpExecutor *ex = new_executor(OP_KL, gradOutput, self, target, out, B, nb, reduction);
    ex->log_target = logTarget ? 1 : 0;
    ex->empty = numel(self->dims, self->ndim) == 0;
    ex->workspace = (!ex->empty && !same_shape(self->dims, self->ndim, B, nb))
                        ? (uint64_t)numel(self->dims, self->ndim) * sizeof(float) : 0;
    *workspaceSize = ex->workspace;
    *executor = ex;
    return ACLNN_SUCCESS;
}

EMU_EXPORT int aclnnKlDivBackward(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, void *stream) {
    return launch(workspace, workspaceSize, executor, stream, OP_KL);
}
#endif
