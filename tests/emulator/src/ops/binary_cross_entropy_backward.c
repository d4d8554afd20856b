/* aclnnBinaryCrossEntropyBackward in the emulator (docs/operators/BinaryCrossEntropyBackward.md;
 * the specification is suite/ops/binary_cross_entropy_backward.py: `check`, `reference_terms`).
 *
 * Phase 1, in the order of the op API code (CheckParams, then CheckPromoteType): gradOutput, self,
 * target, out NULL -> 161001 (weightOptional may be NULL: all ones); then 161002 for out of rank > 8
 * (only out's rank is checked; an input of rank > 8 fails the shape checks), a dtype outside the
 * product's list (self, gradOutput, target, out, then the weight if given), and, unless self is
 * empty, out not of self's shape, then target, the weight (if given) and gradOutput each not
 * broadcasting to self's shape (their broadcast with self must be self's shape); then a reduction
 * outside 0..2 (an empty self too). The inputs are cast to P = promote(promote(promote(self,
 * target), gradOutput), weight) (the weight only when given; it cannot fail after the list check).
 * An empty self succeeds with workspace 0 and computes nothing, whatever the other shapes.
 * workspaceSize and executor are not checked by the vendor (a NULL is undefined behaviour); the
 * emulator answers 161001 rather than crash.
 *
 * The kernel (the TBE kernel of the four products), in float32 on self's shape after the casts to
 * P, every input broadcast to self's shape: a = x - t; b = max(x * ((-x) + 1), 1e-12f) (NaN stays
 * NaN, as numpy's maximum); r = a / b; r = w * r (skipped for a NULL weight: ones); r = g * r; mean:
 * r = r * cof, cof = 1.0f / d0 / d1 / ... over self's dims in float32; rounded to P, then to out's
 * dtype. Nothing is summed: out has self's shape.
 *
 * @fault bce_no_clamp EMU_FAULT_BCE_NO_CLAMP x * (1 - x) is not clamped to 1e-12 (x at 0, 1 or outside [0, 1] divides by 0 or a negative number)
 */
#include "emu.h"

enum { GRAD, SELF, TARGET, WEIGHT, NIN };
enum { COF };  /* f32 slots */
enum { MEAN }; /* flag slots */

static void run(aclOpExecutor *ex);
static const emu_op OP = {"BinaryCrossEntropyBackward", run};

static float term(const aclOpExecutor *ex, const float *x) {
    const float s = x[SELF];
    float a = s - x[TARGET];
    float b = s * (-s + 1.0f);
#ifndef EMU_FAULT_BCE_NO_CLAMP
    const float eps = (float)1e-12; /* 9.99999996e-13, as numpy's float32(1e-12) */
    if (b == b && !(b > eps)) b = eps; /* numpy's maximum: a NaN stays NaN */
#endif
    float r = a / b;
    if (ex->in[WEIGHT].present) r = x[WEIGHT] * r; /* a NULL weight is ones: nothing to multiply */
    r = x[GRAD] * r;
    if (ex->flag[MEAN]) r = r * ex->f32[COF];
    return r;
}

static void run(aclOpExecutor *ex) { emu_terms(ex, term); }

/* t broadcasts to self's shape: broadcast(self, t) is self's shape. */
static int to_self(const aclTensor *self, const aclTensor *t) {
    int64_t B[EMU_MAX_RANK], nb = self->ndim;
    memcpy(B, self->dims, nb * sizeof *B);
    return emu_bcast(B, &nb, t) && emu_shape_is(self, B, nb);
}

EMU_EXPORT int aclnnBinaryCrossEntropyBackwardGetWorkspaceSize(const aclTensor *gradOutput, const aclTensor *self,
                                                               const aclTensor *target,
                                                               const aclTensor *weightOptional, int64_t reduction,
                                                               aclTensor *out, uint64_t *workspaceSize,
                                                               aclOpExecutor **executor) {
    const aclTensor *w = weightOptional;
    if (!gradOutput || !self || !target || !out) return ACLNN_ERR_PARAM_NULLPTR;
    if (!workspaceSize || !executor) return ACLNN_ERR_PARAM_NULLPTR; /* unchecked by the vendor */
    if (!emu_rank_ok(out)) return ACLNN_ERR_PARAM_INVALID;
    if (!emu_listed(self->dtype) || !emu_listed(gradOutput->dtype) || !emu_listed(target->dtype) ||
        !emu_listed(out->dtype) || (w && !emu_listed(w->dtype)))
        return ACLNN_ERR_PARAM_INVALID;
    const int empty = emu_numel(self) == 0;
    if (!empty) {
        if (!emu_same_shape(out, self)) return ACLNN_ERR_PARAM_INVALID;
        if (!to_self(self, target) || (w && !to_self(self, w)) || !to_self(self, gradOutput))
            return ACLNN_ERR_PARAM_INVALID;
    }
    if (reduction < 0 || reduction > 2) return ACLNN_ERR_PARAM_INVALID;
    int32_t p = emu_promote(emu_promote(self->dtype, target->dtype), gradOutput->dtype);
    if (w) p = emu_promote(p, w->dtype);
    if (p == EMU_NO_DTYPE || !emu_can_cast(p, out->dtype)) return ACLNN_ERR_PARAM_INVALID; /* unreachable */
    aclOpExecutor *ex;
    if (empty) { /* nothing to compute; the shapes may be anything (even past the core's rank), so no
                  * view is captured but out (rank <= 8) */
        const aclTensor *none[NIN] = {NULL, NULL, NULL, NULL};
        int64_t B[1] = {0};
        ex = emu_executor(&OP, none, NIN, out, B, 0);
        ex->empty = 1;
        return emu_ready(ex, workspaceSize, executor);
    }
    const aclTensor *in[NIN] = {gradOutput, self, target, w};
    ex = emu_executor(&OP, in, NIN, out, self->dims, self->ndim); /* B: self's shape */
    ex->cast_in = ex->result = p;
    ex->flag[MEAN] = reduction == 1;
    ex->f32[COF] = 1.0f;
    for (int64_t i = 0; i < self->ndim; i++) ex->f32[COF] = ex->f32[COF] / (float)self->dims[i];
    return emu_ready(ex, workspaceSize, executor);
}

EMU_EXPORT int aclnnBinaryCrossEntropyBackward(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                               void *stream) {
    return emu_launch(&OP, workspace, workspaceSize, executor, stream);
}
