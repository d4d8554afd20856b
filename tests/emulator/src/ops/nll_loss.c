/* aclnnNLLLoss in the emulator (docs/operators/NLLLoss.md): two outputs, out and totalWeightOut.
 *
 * Phase 1, in the order of the op API code (the page's rows 1-14): self, target, weight, out,
 * totalWeightOut NULL -> 161001; then 161002 for weight of another dtype than self, self not
 * castable to out, nor to totalWeightOut (CanCast: an integral or BOOL output), self's dtype outside
 * the product's list, target not INT64/UINT8/INT32, a reduction outside 0..2, self of rank 0 or
 * above 2, target of rank above 1, neither (1-D self, 0-d target) nor (2-D self, 1-D target of
 * self's N), weight not [C], out not [N] (none, 2-D self) or not one element of rank <= 1
 * (otherwise), totalWeightOut not one element, and an empty self with C == 0 whose target has
 * elements. workspaceSize or executor NULL is outside the contract (the op API writes through
 * them): 161001 here. An output dtype the core cannot store (complex): 561103.
 *
 * The kernel, as the four families' op API runs it: on B = [N] (2-D self) or [] (1-D self, a batch
 * of one), each sample reads its target t exactly; a sample whose t is ignoreIndex takes no part
 * (term +0, weight 0, and neither self nor weight is read there); otherwise v = w[t] and
 * l = -(v * x[n, t]) in float32 (self and weight gathered along their class axis by the target,
 * through the core's emu_gather). none: out[n] = l, totalWeightOut never written. sum: out = the
 * float32 sum of l in sample order, totalWeightOut the float32 sum of v. mean: the same two sums,
 * then out = sum(l) / sum(v), one float32 division (an all-left-out or empty batch: 0/0, NaN, and
 * totalWeightOut 0; the empty path writes the same values). FLOAT16 inputs are computed from FLOAT;
 * BFLOAT16 results are rounded to BFLOAT16 before each output's dtype. Targets outside [0, C) that
 * are not ignoreIndex are outside the contract: they read as 0 here.
 *
 * @fault nll_mean_by_count EMU_FAULT_NLL_MEAN_BY_COUNT mean divides by the number of samples taking part, not by their weight sum
 * @fault nll_no_ignore EMU_FAULT_NLL_NO_IGNORE ignoreIndex is never compared (left-out samples take part)
 */
#include "emu.h"

enum { SELF, TARGET, WEIGHT, NIN };
enum { OUT, TOTAL, NOUT };
enum { REDUCTION, IGNORE }; /* i64 slots */

void emu_nll_run(aclOpExecutor *ex); /* NLLLoss2d's too (nll_loss2d.c): the same kernel */
static const emu_op OP = {"NLLLoss", emu_nll_run};

#ifdef EMU_FAULT_NLL_MEAN_BY_COUNT
static float taking_part; /* the planted divisor: samples counted (runs do not overlap) */
#endif

static void term(const aclOpExecutor *ex, const float *x, const int64_t *ix, float *r) {
#ifndef EMU_FAULT_NLL_NO_IGNORE
    if (ix[TARGET] == ex->i64[IGNORE]) {
        r[OUT] = 0.0f;
        r[TOTAL] = 0.0f;
        return;
    }
#endif
#ifdef EMU_FAULT_NLL_MEAN_BY_COUNT
    taking_part += 1.0f;
#endif
    r[TOTAL] = x[WEIGHT];
    r[OUT] = -(x[WEIGHT] * x[SELF]);
}

static void mean(const aclOpExecutor *ex, float *const *sums) {
#ifdef EMU_FAULT_NLL_MEAN_BY_COUNT
    sums[OUT][0] = sums[OUT][0] / taking_part;
#else
    sums[OUT][0] = sums[OUT][0] / sums[TOTAL][0];
#endif
}

void emu_nll_run(aclOpExecutor *ex) {
#ifdef EMU_FAULT_NLL_MEAN_BY_COUNT
    taking_part = 0.0f;
#endif
    emu_terms_n(ex, term, ex->i64[REDUCTION] == 1 ? mean : NULL);
}

static int is_target_dtype(int32_t d) { return d == ACL_INT64 || d == ACL_UINT8 || d == ACL_INT32; }

EMU_EXPORT int aclnnNLLLossGetWorkspaceSize(const aclTensor *self, const aclTensor *target, const aclTensor *weight,
                                            int64_t reduction, int64_t ignoreIndex, aclTensor *out,
                                            aclTensor *totalWeightOut, uint64_t *workspaceSize,
                                            aclOpExecutor **executor) {
    if (!self || !target || !weight || !out || !totalWeightOut || !workspaceSize || !executor)
        return ACLNN_ERR_PARAM_NULLPTR;
    int32_t x = self->dtype;
    if (weight->dtype != x) return ACLNN_ERR_PARAM_INVALID;
    if (!emu_can_cast(x, out->dtype) || !emu_can_cast(x, totalWeightOut->dtype)) return ACLNN_ERR_PARAM_INVALID;
    if (!emu_listed(x)) return ACLNN_ERR_PARAM_INVALID;
    if (!is_target_dtype(target->dtype)) return ACLNN_ERR_PARAM_INVALID;
    if (reduction < 0 || reduction > 2) return ACLNN_ERR_PARAM_INVALID;
    if (self->ndim < 1 || self->ndim > 2) return ACLNN_ERR_PARAM_INVALID;
    if (target->ndim > 1) return ACLNN_ERR_PARAM_INVALID;
    if (!(self->ndim == 1 && target->ndim == 0) &&
        !(self->ndim == 2 && target->ndim == 1 && target->dims[0] == self->dims[0]))
        return ACLNN_ERR_PARAM_INVALID;
    int64_t C = self->dims[self->ndim - 1], N = self->ndim == 2 ? self->dims[0] : 1;
    if (weight->ndim != 1 || weight->dims[0] != C) return ACLNN_ERR_PARAM_INVALID;
    if (reduction == 0 && self->ndim == 2) {
        if (out->ndim != 1 || out->dims[0] != N) return ACLNN_ERR_PARAM_INVALID;
    } else if (out->ndim > 1 || emu_numel(out) != 1) {
        return ACLNN_ERR_PARAM_INVALID;
    }
    if (emu_numel(totalWeightOut) != 1) return ACLNN_ERR_PARAM_INVALID;
    if (emu_numel(self) == 0 && C == 0 && emu_numel(target) > 0) return ACLNN_ERR_PARAM_INVALID;
    if (!emu_storable(out->dtype) || !emu_storable(totalWeightOut->dtype)) return ACLNN_ERR_INNER_NULLPTR;
    const aclTensor *in[NIN] = {self, target, weight}, *outs[NOUT] = {out, totalWeightOut};
    aclOpExecutor *ex = emu_executor_n(&OP, in, NIN, outs, NOUT, target->dims, target->ndim); /* B: the samples */
    emu_gather(ex, SELF, self->ndim - 1, TARGET);
    emu_gather(ex, WEIGHT, 0, TARGET);
    ex->i64[REDUCTION] = reduction;
    ex->i64[IGNORE] = ignoreIndex;
    if (reduction == 0) {
        ex->outmode[OUT] = EMU_OUT_AUTO;  /* [N]: one term each; a 1-D self's one element: its term */
        ex->outmode[TOTAL] = EMU_OUT_NONE; /* the op API copies it back only when reduction != 0 */
    } else {
        ex->outmode[OUT] = ex->outmode[TOTAL] = EMU_OUT_SUM;
    }
    ex->result = x == ACL_BF16 ? ACL_BF16 : EMU_NO_DTYPE;
    return emu_ready(ex, workspaceSize, executor);
}

EMU_EXPORT int aclnnNLLLoss(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, void *stream) {
    return emu_launch(&OP, workspace, workspaceSize, executor, stream);
}
