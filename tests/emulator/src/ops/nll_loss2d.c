/* aclnnNLLLoss2d in the emulator (docs/operators/NLLLoss2d.md): NLLLoss's kernel (nll_loss.c's
 * emu_nll_run, its faults too) on self [N, C, H, W] gathered along axis 1 by target [N, H, W].
 *
 * Phase 1, in the order of the op API code (the page's rows 1-13): self, target, weight, out,
 * totalWeightOut NULL -> 161001; then 161002 for self's dtype outside the product's list, weight of
 * another dtype, self not castable to out or to totalWeightOut, target not INT64/UINT8/INT32, a
 * reduction outside 0..2, self not 4-D, weight's dimension 0 not C, target not 3-D or not
 * [N, H, W], out not target's shape (none) or not one element (otherwise), totalWeightOut not one
 * element. workspaceSize or executor NULL: 161001 here (outside the contract). An empty self: the
 * walk over target's elements gives the op API's fills (mean 0/0 NaN, sum 0, totalWeightOut 0).
 */
#include "emu.h"

void emu_nll_run(aclOpExecutor *ex);
static const emu_op OP = {"NLLLoss2d", emu_nll_run};

enum { SELF, TARGET, WEIGHT, NIN };
enum { OUT, TOTAL, NOUT };
enum { REDUCTION, IGNORE };

EMU_EXPORT int aclnnNLLLoss2dGetWorkspaceSize(const aclTensor *self, const aclTensor *target, const aclTensor *weight,
                                              int64_t reduction, int64_t ignoreIndex, aclTensor *out,
                                              aclTensor *totalWeightOut, uint64_t *workspaceSize,
                                              aclOpExecutor **executor) {
    if (!self || !target || !weight || !out || !totalWeightOut || !workspaceSize || !executor)
        return ACLNN_ERR_PARAM_NULLPTR;
    int32_t x = self->dtype, t = target->dtype;
    if (!emu_listed(x) || weight->dtype != x) return ACLNN_ERR_PARAM_INVALID;
    if (!emu_can_cast(x, out->dtype) || !emu_can_cast(x, totalWeightOut->dtype)) return ACLNN_ERR_PARAM_INVALID;
    if (t != ACL_INT64 && t != ACL_UINT8 && t != ACL_INT32) return ACLNN_ERR_PARAM_INVALID;
    if (reduction < 0 || reduction > 2 || self->ndim != 4) return ACLNN_ERR_PARAM_INVALID;
    if (weight->ndim < 1 || weight->dims[0] != self->dims[1] || target->ndim != 3) return ACLNN_ERR_PARAM_INVALID;
    if (target->dims[0] != self->dims[0] || target->dims[1] != self->dims[2] || target->dims[2] != self->dims[3])
        return ACLNN_ERR_PARAM_INVALID;
    if (reduction == 0) {
        if (out->ndim != 3) return ACLNN_ERR_PARAM_INVALID;
        for (int d = 0; d < 3; d++)
            if (out->dims[d] != target->dims[d]) return ACLNN_ERR_PARAM_INVALID;
    } else if (emu_numel(out) != 1) {
        return ACLNN_ERR_PARAM_INVALID;
    }
    if (emu_numel(totalWeightOut) != 1) return ACLNN_ERR_PARAM_INVALID;
    if (!emu_storable(out->dtype) || !emu_storable(totalWeightOut->dtype)) return ACLNN_ERR_INNER_NULLPTR;
    const aclTensor *in[NIN] = {self, target, weight}, *outs[NOUT] = {out, totalWeightOut};
    aclOpExecutor *ex = emu_executor_n(&OP, in, NIN, outs, NOUT, target->dims, target->ndim); /* B: the pixels */
    emu_gather(ex, SELF, 1, TARGET);
    emu_gather(ex, WEIGHT, 0, TARGET);
    ex->i64[REDUCTION] = reduction;
    ex->i64[IGNORE] = ignoreIndex;
    if (reduction == 0) {
        ex->outmode[OUT] = EMU_OUT_AUTO;
        ex->outmode[TOTAL] = EMU_OUT_NONE; /* the op API copies it back only when reduction != 0 */
    } else {
        ex->outmode[OUT] = ex->outmode[TOTAL] = EMU_OUT_SUM;
    }
    ex->result = x == ACL_BF16 ? ACL_BF16 : EMU_NO_DTYPE;
    return emu_ready(ex, workspaceSize, executor);
}

EMU_EXPORT int aclnnNLLLoss2d(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, void *stream) {
    return emu_launch(&OP, workspace, workspaceSize, executor, stream);
}
