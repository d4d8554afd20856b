/* aclnnBinaryCrossEntropy in the emulator (docs/operators/BinaryCrossEntropy.md).
 *
 * Phase 1: a NULL self, target or out is 561103 (ACLNN_ERR_INNER_NULLPTR, the op API's CheckNotNull
 * status); with a weight given, out's dtype must be self's; target must have self's shape (both
 * checked here, before the descriptor); then the descriptor (emu.h's generic entry): every dtype
 * listed (the weight if given), target and the weight of self's dtype, the reduction 0..2, B is
 * self's shape (a weight must fit it), out is B for none and one element for mean and sum. An
 * empty self: none writes nothing, mean fills NaN, sum 0.
 *
 * The kernel (the TBE kernel of the four products), in float32: x = max(x, 1e-12f); a = ln(x) * y;
 * x1 = max(x * -1 + 1, 1e-12f); b = ln(x1) * (y * -1 + 1); r = (a + b) * -1; r = r * w (skipped for
 * a NULL weight); mean: r * (float)(1.0 / N); the terms summed in float32 for mean and sum.
 *
 * @fault bce_fwd_no_clamp EMU_FAULT_BCE_FWD_NO_CLAMP ln x and ln(1 - x) are not clamped (self at 0 or 1 gives 0 * -inf = NaN)
 */
#include <math.h>
#include "emu.h"

enum { SELF, TARGET, WEIGHT };
enum { REDUCTION }; /* i64 slots */
enum { SCALE };     /* f32 slots */

static float clamp(float v) {
#ifdef EMU_FAULT_BCE_FWD_NO_CLAMP
    return v;
#else
    const float eps = (float)1e-12; /* 9.99999996e-13 */
    return (v == v && !(v > eps)) ? eps : v; /* numpy's maximum: a NaN stays NaN */
#endif
}

static float term(const aclOpExecutor *ex, const float *x) {
    const float s = clamp(x[SELF]), y = x[TARGET];
    float a = logf(s) * y;
    float x1 = clamp(s * -1.0f + 1.0f);
    float b = logf(x1) * (y * -1.0f + 1.0f);
    float r = (a + b) * -1.0f;
    if (ex->in[WEIGHT].present) r = r * x[WEIGHT];
    return ex->i64[REDUCTION] == 1 ? r * ex->f32[SCALE] : r;
}

static void setup(aclOpExecutor *ex, const aclTensor *const *in) {
    int64_t N = emu_numel(in[SELF]);
    ex->f32[SCALE] = N ? (float)(1.0 / (double)N) : 1.0f;
    ex->fill = ex->i64[REDUCTION] != 0 && N == 0; /* the op API's fill kernel */
    ex->fill_value = ex->i64[REDUCTION] == 1 ? NAN : 0.0f;
}

static const emu_entry OP = {
    .op = {"BinaryCrossEntropy", emu_entry_run}, .params = "tt?io", .self = SELF, .term = term, .setup = setup,
    .listed = EMU_INPUTS | EMU_OUT_BIT, .same = EMU_INPUTS, .promote = 1, .reductions = 3,
    .rank = EMU_INPUTS | EMU_OUT_BIT, .from = EMU_IN(SELF), .out_shape = EMU_SHAPE_REDUCED_ONE,
};

EMU_EXPORT int aclnnBinaryCrossEntropyGetWorkspaceSize(const aclTensor *self, const aclTensor *target,
                                                       const aclTensor *weight, int64_t reduction, aclTensor *out,
                                                       uint64_t *workspaceSize, aclOpExecutor **executor) {
    if (!self || !target || !out) return ACLNN_ERR_INNER_NULLPTR;
    if (weight && out->dtype != self->dtype && emu_listed(out->dtype) && emu_listed(self->dtype))
        return ACLNN_ERR_PARAM_INVALID;
    if (!emu_same_shape(self, target)) return ACLNN_ERR_PARAM_INVALID;
    return emu_entry_call(&OP, workspaceSize, executor, self, target, weight, reduction, out);
}

EMU_EXPORT int aclnnBinaryCrossEntropy(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                       void *stream) {
    return emu_launch(&OP.op, workspace, workspaceSize, executor, stream);
}
