/* aclnnNLLLoss2dBackward in the emulator (docs/operators/NLLLoss2dBackward.md): NLLLossBackward's
 * terms on B = self [N, C, H, W]: out[n, c, h, w] = -(q * w[c]) where c = target[n, h, w] is not
 * ignoreIndex (q = g / totalWeight under mean, g otherwise), +0 elsewhere; target and gradOutput
 * (under none) read as [N, 1, H, W], weight as [1, C, 1, 1], self never read. BFLOAT16 results are
 * rounded to BFLOAT16 before out's dtype.
 *
 * Phase 1, in the order of the op API code (the page's rows 1-15): gradOutput, self, target, weight,
 * out, totalWeight NULL -> 161001; then 161002 for self's dtype outside the list, gradOutput, weight,
 * out or totalWeight of another dtype than self, target not INT64/UINT8/INT32, gradOutput not
 * target's shape (none) or not one element of rank <= 1, self not 4-D, target not 3-D or not
 * [N, H, W], weight without C elements, out not self's shape, totalWeight not one element, and last
 * a reduction outside 0..2. workspaceSize or executor NULL: 161001 here (outside the contract).
 */
#include "emu.h"

enum { GRAD, SELF, TARGET, WEIGHT, TOTAL, NIN };
enum { CLASSES, REDUCTION, IGNORE, PLANE }; /* i64 slots */

static void run(aclOpExecutor *ex);
static const emu_op OP = {"NLLLoss2dBackward", run};

static int64_t position; /* of the term asked for next: emu_terms walks B in C order (reset by run) */

static float term(const aclOpExecutor *ex, const float *x) {
    int64_t c = position++ / ex->i64[PLANE] % ex->i64[CLASSES];
    float t = x[TARGET];
    if (t != (float)c || (int64_t)t == ex->i64[IGNORE]) return 0.0f;
    float q = ex->i64[REDUCTION] == 1 ? x[GRAD] / x[TOTAL] : x[GRAD];
    return -(q * x[WEIGHT]);
}

static void run(aclOpExecutor *ex) {
    position = 0;
    emu_terms(ex, term);
}

/* [N, H, W] seen as [N, 1, H, W]; [C] as [1, C, 1, 1] (stride 0 on the added axes). */
static void as_pixels(emu_view *v) {
    int64_t d[3] = {v->dims[0], v->dims[1], v->dims[2]}, s[3] = {v->strides[0], v->strides[1], v->strides[2]};
    v->ndim = 4;
    v->dims[0] = d[0], v->dims[1] = 1, v->dims[2] = d[1], v->dims[3] = d[2];
    v->strides[0] = s[0], v->strides[1] = 0, v->strides[2] = s[1], v->strides[3] = s[2];
}
static void as_classes(emu_view *v) {
    int64_t c = v->dims[0], s = v->strides[0];
    v->ndim = 4;
    v->dims[0] = v->dims[2] = v->dims[3] = 1, v->dims[1] = c;
    v->strides[0] = v->strides[2] = v->strides[3] = 0, v->strides[1] = s;
}

EMU_EXPORT int aclnnNLLLoss2dBackwardGetWorkspaceSize(const aclTensor *gradOutput, const aclTensor *self,
                                                      const aclTensor *target, const aclTensor *weight,
                                                      int64_t reduction, int64_t ignoreIndex,
                                                      const aclTensor *totalWeight, aclTensor *out,
                                                      uint64_t *workspaceSize, aclOpExecutor **executor) {
    if (!gradOutput || !self || !target || !weight || !totalWeight || !out || !workspaceSize || !executor)
        return ACLNN_ERR_PARAM_NULLPTR;
    int32_t x = self->dtype, t = target->dtype;
    if (!emu_listed(x) || gradOutput->dtype != x || weight->dtype != x || out->dtype != x || totalWeight->dtype != x)
        return ACLNN_ERR_PARAM_INVALID;
    if (t != ACL_INT64 && t != ACL_UINT8 && t != ACL_INT32) return ACLNN_ERR_PARAM_INVALID;
    if (reduction == 0) {
        if (!emu_same_shape(gradOutput, target)) return ACLNN_ERR_PARAM_INVALID;
    } else if (gradOutput->ndim > 1 || emu_numel(gradOutput) != 1) {
        return ACLNN_ERR_PARAM_INVALID;
    }
    if (self->ndim != 4 || target->ndim != 3) return ACLNN_ERR_PARAM_INVALID;
    if (target->dims[0] != self->dims[0] || target->dims[1] != self->dims[2] || target->dims[2] != self->dims[3])
        return ACLNN_ERR_PARAM_INVALID;
    int64_t C = self->dims[1];
    if (emu_numel(weight) != C || !emu_same_shape(out, self) || emu_numel(totalWeight) != 1)
        return ACLNN_ERR_PARAM_INVALID;
    if (reduction < 0 || reduction > 2) return ACLNN_ERR_PARAM_INVALID;
    const aclTensor *in[NIN] = {gradOutput, self, target, weight, totalWeight};
    aclOpExecutor *ex = emu_executor(&OP, in, NIN, out, self->dims, self->ndim);
    as_pixels(&ex->in[TARGET]);
    if (reduction == 0) as_pixels(&ex->in[GRAD]);
    else ex->in[GRAD].ndim = 0;
    as_classes(&ex->in[WEIGHT]);
    ex->in[TOTAL].ndim = 0;
    ex->in[SELF].present = 0; /* never read */
    ex->i64[CLASSES] = C > 0 ? C : 1;
    ex->i64[PLANE] = self->dims[2] * self->dims[3] > 0 ? self->dims[2] * self->dims[3] : 1;
    ex->i64[REDUCTION] = reduction;
    ex->i64[IGNORE] = ignoreIndex;
    ex->result = x == ACL_BF16 ? ACL_BF16 : EMU_NO_DTYPE;
    return emu_ready(ex, workspaceSize, executor);
}

EMU_EXPORT int aclnnNLLLoss2dBackward(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, void *stream) {
    return emu_launch(&OP, workspace, workspaceSize, executor, stream);
}
