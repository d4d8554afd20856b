/* aclnnBinaryCrossEntropyWithLogits in the emulator (docs/operators/BinaryCrossEntropyWithLogits.md).
 *
 * Phase 1: a NULL self, target or out is 161001; self's, target's and out's dtypes listed, out of
 * target's dtype; the reduction 0..2; ranks <= 8; target of self's shape (checked here, before the
 * descriptor); B is self's shape and each weight given must broadcast to it; out is B for none
 * and one element otherwise. An empty self skips the weights' broadcast (they are passed on as
 * NULL once their ranks are checked): none writes nothing, mean fills NaN, sum 0.
 *
 * The kernel (the 950's DAG), in float32 after the casts to P = promote(self, target): m = min(x,
 * 0); ls = m - ln(exp(-|x|) + 1); ls = ls * ((pw - 1) * y + 1) (skipped for a NULL posWeight);
 * r = (1 - y) * x - ls; r = r * w (skipped for a NULL weight); mean: r * (float)(1.0 / N); the
 * result FLOAT (the l0 op's), summed in float32, cast once to out's dtype.
 *
 * @fault bce_logits_no_pos_weight EMU_FAULT_BCE_LOGITS_NO_POS_WEIGHT posWeight is ignored
 */
#include <math.h>
#include "emu.h"

enum { SELF, TARGET, WEIGHT, POS };
enum { REDUCTION }; /* i64 slots */
enum { SCALE };     /* f32 slots */

static float term(const aclOpExecutor *ex, const float *x) {
    const float s = x[SELF], y = x[TARGET];
    float ls = fminf(s, 0.0f) - logf(expf(-fabsf(s)) + 1.0f);
#ifndef EMU_FAULT_BCE_LOGITS_NO_POS_WEIGHT
    if (ex->in[POS].present) ls = ls * ((x[POS] - 1.0f) * y + 1.0f);
#endif
    float r = (1.0f - y) * s - ls;
    if (ex->in[WEIGHT].present) r = r * x[WEIGHT];
    return ex->i64[REDUCTION] == 1 ? r * ex->f32[SCALE] : r;
}

static void setup(aclOpExecutor *ex, const aclTensor *const *in) {
    int64_t N = emu_numel(in[SELF]);
    ex->cast_in = emu_promote(in[SELF]->dtype, in[TARGET]->dtype); /* the weights cast to P */
    ex->result = EMU_NO_DTYPE; /* the l0 op's result is FLOAT, cast once to out's dtype */
    ex->f32[SCALE] = N ? (float)(1.0 / (double)N) : 1.0f;
    ex->fill = ex->i64[REDUCTION] != 0 && N == 0; /* the op API's fill kernel */
    ex->fill_value = ex->i64[REDUCTION] == 1 ? NAN : 0.0f;
}

static const emu_entry OP = {
    .op = {"BinaryCrossEntropyWithLogits", emu_entry_run}, .params = "tt??io", .self = SELF, .term = term,
    .setup = setup, .listed = EMU_IN(SELF) | EMU_IN(TARGET) | EMU_OUT_BIT, .promote = 1, .reductions = 3,
    .rank = EMU_INPUTS, .from = EMU_IN(SELF), .out_shape = EMU_SHAPE_REDUCED_ONE,
};

EMU_EXPORT int aclnnBinaryCrossEntropyWithLogitsGetWorkspaceSize(const aclTensor *self, const aclTensor *target,
                                                                 const aclTensor *weight, const aclTensor *posWeight,
                                                                 int64_t reduction, aclTensor *out,
                                                                 uint64_t *workspaceSize, aclOpExecutor **executor) {
    if (!self || !target || !out) return ACLNN_ERR_PARAM_NULLPTR;
    if (out->dtype != target->dtype) return ACLNN_ERR_PARAM_INVALID;
    if (emu_rank_ok(self) && emu_rank_ok(target) && !emu_same_shape(self, target)) return ACLNN_ERR_PARAM_INVALID;
    if (emu_numel(self) == 0 && (!weight || emu_rank_ok(weight)) && (!posWeight || emu_rank_ok(posWeight)))
        weight = posWeight = NULL;
    return emu_entry_call(&OP, workspaceSize, executor, self, target, weight, posWeight, reduction, out);
}

EMU_EXPORT int aclnnBinaryCrossEntropyWithLogits(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                                 void *stream) {
    return emu_launch(&OP.op, workspace, workspaceSize, executor, stream);
}
