/* aclnnSoftMarginLoss in the emulator (docs/operators/SoftMarginLoss.md).
 *
 * Phase 1: the descriptor (emu.h's generic entry). Every dtype listed, P = promote(self, target);
 * no reduction check (reductions 0): out is B for none and 0-d for any other value, which the op
 * API computes as sum.
 *
 * The kernel, in float32 on B after the casts to P: t = target * self; the 950 kernel's stable form
 * max(0, -t) + log(1 + exp(-|t|)), with log1p where the kernel takes log(1 + e) (the suite's
 * contract: the page's "Where the suite and the kernels differ"); for mean each term times
 * (float)(1.0 / N), N = numel(B); none stores each term rounded to P; otherwise one float32 sum
 * over B rounded to P once; the op API then casts P to out's dtype. Empty inputs: none writes
 * nothing, mean fills NaN, sum 0 (another reduction value: outside the contract, 0 here).
 *
 * @fault sml_log_one_plus EMU_FAULT_SML_LOG_ONE_PLUS log(1 + exp(-|t|)) as the vendor's kernels write it: exp(-|t|) below float32's epsilon is lost
 * @fault sml_naive_exp EMU_FAULT_SML_NAIVE_EXP log(1 + exp(-t)) as the TBE kernel computes it: inf once -t passes 88.7
 */
#include <math.h>
#include "emu.h"

enum { SELF, TARGET };
enum { REDUCTION }; /* i64 slots */
enum { SCALE };     /* f32 slots */

static float term(const aclOpExecutor *ex, const float *x) {
    float t = x[TARGET] * x[SELF];
#if defined(EMU_FAULT_SML_NAIVE_EXP)
    float l = logf(1.0f + expf(-t));
#elif defined(EMU_FAULT_SML_LOG_ONE_PLUS)
    float l = (-t > 0.0f ? -t : 0.0f) + logf(1.0f + expf(-fabsf(t)));
#else
    float l = (-t > 0.0f ? -t : 0.0f) + log1pf(expf(-fabsf(t))); /* a NaN t stays NaN through log1pf */
#endif
    return ex->i64[REDUCTION] == 1 ? l * ex->f32[SCALE] : l;
}

static void setup(aclOpExecutor *ex, const aclTensor *const *in) {
    (void)in;
    int64_t N = emu_numel_dims(ex->bdims, ex->bndim), reduction = ex->i64[REDUCTION];
    ex->f32[SCALE] = N ? (float)(1.0 / (double)N) : 1.0f;
    ex->fill = (reduction == 1 || reduction == 2) && N == 0; /* the op API's fill kernels */
    ex->fill_value = reduction == 1 ? NAN : 0.0f;
}

static const emu_entry OP = {
    .op = {"SoftMarginLoss", emu_entry_run}, .params = "ttio", .self = SELF, .term = term, .setup = setup,
    .listed = EMU_INPUTS | EMU_OUT_BIT, .promote = 1, .reductions = 0, .rank = EMU_INPUTS, .from = EMU_INPUTS,
    .out_shape = EMU_SHAPE_REDUCED_0D,
};
EMU_ENTRY(SoftMarginLoss, OP, (const aclTensor *self, const aclTensor *target, int64_t reduction, aclTensor *out),
          self, target, reduction, out)
