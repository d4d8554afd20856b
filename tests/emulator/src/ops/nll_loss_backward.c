/* aclnnNLLLossBackward in the emulator (docs/operators/NLLLossBackward.md).
 *
 * Phase 1, in the order of the op API code (the page's rows 1-15): gradOutput, self, target, weight,
 * totalWeight, out NULL -> 161001; then 161002 for weight, gradOutput or totalWeight of another
 * dtype than self, self not castable to out (an integral or BOOL out), self's dtype outside the
 * product's list, target not INT64/UINT8/INT32, a reduction outside 0..2, self of rank 0 or above
 * 2, target of rank above 1, target's length not self's dim 0 (unless 1-D self and 0-d target),
 * weight not [C], totalWeight not one element, gradOutput not [N] (none, 2-D self) or not one
 * element of rank <= 1 (otherwise), out not of self's shape. workspaceSize or executor NULL is
 * outside the contract (the op API writes through them): 161001 here.
 *
 * The kernel on B = self's shape, C order: every element +0, except where the class (the element's
 * position along the last axis) equals the sample's target and the target is not ignoreIndex:
 * -(q * w[t]) with q = g / W (mean, in float32, the quotient first) or g; one rounding to BFLOAT16
 * for BFLOAT16 inputs, then to out's dtype. self's values are never read. The target reaches the
 * terms as a column [N, 1] (its view reshaped at phase 1: stride 0 along the classes), gradOutput
 * [N] likewise, totalWeight as a 0-d view; integer targets load exactly (below 2^24).
 *
 * @fault nllb_no_ignore EMU_FAULT_NLLB_NO_IGNORE ignoreIndex is never compared (ignored samples are written)
 */
#include "emu.h"

enum { GRAD, SELF, TARGET, WEIGHT, TOTAL, NIN };
enum { CLASSES, REDUCTION, IGNORE }; /* i64 slots */

static void run(aclOpExecutor *ex);
static const emu_op OP = {"NLLLossBackward", run};

/* The position of the term emu_terms asks for next: it walks B in C order, one term per element,
 * so the class is that position modulo C. Reset by run() before each walk (runs do not overlap). */
static int64_t position;

static float term(const aclOpExecutor *ex, const float *x) {
    int64_t c = position++ % ex->i64[CLASSES];
    float t = x[TARGET];
    if (t != (float)c) return 0.0f;
#ifndef EMU_FAULT_NLLB_NO_IGNORE
    if ((int64_t)t == ex->i64[IGNORE]) return 0.0f;
#endif
    float q = ex->i64[REDUCTION] == 1 ? x[GRAD] / x[TOTAL] : x[GRAD];
    return -(q * x[WEIGHT]);
}

static void run(aclOpExecutor *ex) {
    position = 0;
    emu_terms(ex, term);
}

static int is_target_dtype(int32_t d) { return d == ACL_INT64 || d == ACL_UINT8 || d == ACL_INT32; }

/* A captured view seen as a column [n, 1] (stride 0 along the classes), or as 0-d. */
static void as_column(emu_view *v) {
    v->dims[1] = 1;
    v->strides[1] = 0;
    v->ndim = 2;
}
static void as_scalar(emu_view *v) { v->ndim = 0; }

EMU_EXPORT int aclnnNLLLossBackwardGetWorkspaceSize(const aclTensor *gradOutput, const aclTensor *self,
                                                    const aclTensor *target, const aclTensor *weight,
                                                    int64_t reduction, int64_t ignoreIndex,
                                                    const aclTensor *totalWeight, aclTensor *out,
                                                    uint64_t *workspaceSize, aclOpExecutor **executor) {
    if (!gradOutput || !self || !target || !weight || !totalWeight || !out || !workspaceSize || !executor)
        return ACLNN_ERR_PARAM_NULLPTR;
    int32_t x = self->dtype;
    if (weight->dtype != x || gradOutput->dtype != x || totalWeight->dtype != x) return ACLNN_ERR_PARAM_INVALID;
    if (!emu_can_cast(x, out->dtype)) return ACLNN_ERR_PARAM_INVALID;
    if (!emu_listed(x)) return ACLNN_ERR_PARAM_INVALID;
    if (!is_target_dtype(target->dtype)) return ACLNN_ERR_PARAM_INVALID;
    if (reduction < 0 || reduction > 2) return ACLNN_ERR_PARAM_INVALID;
    if (self->ndim < 1 || self->ndim > 2) return ACLNN_ERR_PARAM_INVALID;
    if (target->ndim > 1) return ACLNN_ERR_PARAM_INVALID;
    if (!(self->ndim == 1 && target->ndim == 0) && (target->ndim == 0 || self->dims[0] != target->dims[0]))
        return ACLNN_ERR_PARAM_INVALID;
    int64_t C = self->dims[self->ndim - 1];
    if (weight->ndim != 1 || weight->dims[0] != C) return ACLNN_ERR_PARAM_INVALID;
    if (emu_numel(totalWeight) != 1) return ACLNN_ERR_PARAM_INVALID;
    if (reduction == 0 && self->ndim == 2) {
        if (gradOutput->ndim != 1 || gradOutput->dims[0] != self->dims[0]) return ACLNN_ERR_PARAM_INVALID;
    } else if (gradOutput->ndim > 1 || emu_numel(gradOutput) != 1) {
        return ACLNN_ERR_PARAM_INVALID;
    }
    if (!emu_same_shape(out, self)) return ACLNN_ERR_PARAM_INVALID;
    if (!emu_storable(out->dtype)) return ACLNN_ERR_INNER_NULLPTR;
    const aclTensor *in[NIN] = {gradOutput, self, target, weight, totalWeight};
    aclOpExecutor *ex = emu_executor(&OP, in, NIN, out, self->dims, self->ndim);
    if (self->ndim == 2) {
        as_column(&ex->in[TARGET]);
        if (gradOutput->ndim == 1 && reduction == 0) as_column(&ex->in[GRAD]);
        else as_scalar(&ex->in[GRAD]);
    } else {
        as_scalar(&ex->in[TARGET]); /* one sample: its (only) target */
        as_scalar(&ex->in[GRAD]);
    }
    as_scalar(&ex->in[TOTAL]);
    ex->in[SELF].present = 0; /* never read */
    ex->i64[CLASSES] = C > 0 ? C : 1;
    ex->i64[REDUCTION] = reduction;
    ex->i64[IGNORE] = ignoreIndex;
    ex->result = x == ACL_BF16 ? ACL_BF16 : EMU_NO_DTYPE;
    return emu_ready(ex, workspaceSize, executor);
}

EMU_EXPORT int aclnnNLLLossBackward(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, void *stream) {
    return emu_launch(&OP, workspace, workspaceSize, executor, stream);
}
