"""The one table from the SoC name a device reports to the product family it is held to.

Why one table: the family decides which cases run and what status a dtype gets (a 910 of the first
generation rejects bfloat16 with 161002). A backend that guesses the family from a prefix holds the
device to the wrong contract and fails, or passes, the wrong cases. So exact names come first, a few
prefix rules (a family's prefix followed by a digit, or for the 950 anything: a chip variant not yet
listed) after them, and every other name is an error that names the SoC, never a guessed family.

The names are the ones the runtime reports (aclrtGetSocName, torch.npu.get_device_name), which are
the names of CANN's platform configuration files (<toolkit>/data/platform_config/<SoC>.ini):
  [TORCH-NPU]  github Ascend/pytorch @00acf37e, torch_npu/csrc/core/npu/NpuVariables.cpp
               (socVersionMap: Ascend910PremiumA/ProA/A/ProB/B, Ascend310P1-4, Ascend910B1/B2/B2C/B3/
               B4/B4-1, Ascend310B1-4, Ascend910_9391/9392/9381/9382/9372/9361; IsBF16Supported is
               `>= Ascend910B1`: the bare "Ascend910B" is a first-generation 910, without bfloat16)
               and NpuVariables.h @37d762bb (Ascend310P5/P7, Ascend910_9362)
  [OPS-NN]     github hicann/ops-nn @e5c3fa93, the op_api dtype lists: ASCEND910 and ASCEND310P take
               FLOAT and FLOAT16; ASCEND910B and ASCEND910_93 (DAV_2201) and the regbase Ascend 950
               (DAV_3510, `IsRegbase` in common/inc/op_api/aclnn_util.h) add BFLOAT16; every other chip,
               the Ascend310B (Atlas 200I/500 A2) among them, gets the two-dtype list or none
               (docs/aclnn-status.md, "Product families")
  [ASC-950]    github cannmirror/asc-devkit @0da921b9, impl/utils/tiling/platform/platform_ascendc.cpp
               (the "Ascend950" and "Ascend310B" short SoC versions) and ops-nn's build docs
               ("ascend950" for Ascend 950PR/950DT: names such as Ascend950PR_9599, Ascend950DT_95A)
  [ATLAS-200I] Ascend310B1-4: Atlas 200I/500 A2 inference products (TORCH-NPU's socVersionMap)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional, Tuple

from suite.contract import PRODUCTS

# family -> whether its chips (and so the operators' dtype lists) take bfloat16 [TORCH-NPU] [OPS-NN]
BFLOAT16 = {"atlas-training": False, "atlas-inference": False, "atlas-a2": True, "atlas-a3": True,
            "ascend-950": True, "atlas-200i-500-a2": False}

TRAINING, INFERENCE, A2, A3, A950, A200I = PRODUCTS

# name -> family
EXACT: Dict[str, str] = {
    # Atlas training series: first-generation 910, dav-c100 (the bare "Ascend910B" is one of them)
    "Ascend910A": TRAINING, "Ascend910B": TRAINING, "Ascend910ProA": TRAINING, "Ascend910ProB": TRAINING,
    "Ascend910PremiumA": TRAINING,
    # Atlas inference series: 310P, dav-m200
    "Ascend310P1": INFERENCE, "Ascend310P2": INFERENCE, "Ascend310P3": INFERENCE, "Ascend310P4": INFERENCE,
    "Ascend310P5": INFERENCE, "Ascend310P7": INFERENCE,
    # Atlas A2: 910B1-B4, dav-c220
    "Ascend910B1": A2, "Ascend910B2": A2, "Ascend910B2C": A2, "Ascend910B3": A2, "Ascend910B4": A2,
    "Ascend910B4-1": A2,
    # Atlas A3: 910_93xx, dav-c220 per die
    "Ascend910_9391": A3, "Ascend910_9392": A3, "Ascend910_9381": A3, "Ascend910_9382": A3,
    "Ascend910_9372": A3, "Ascend910_9362": A3, "Ascend910_9361": A3,
    # Ascend 950PR/950DT: NPU architecture 3510 (DAV_3510), regbase, split [ASC-950] (other variants:
    # the prefix rule)
    "Ascend950PR_9599": A950,
    # Atlas 200I/500 A2 inference products: 310B1-B4, NPU architecture 3002, coupled AI Core [ATLAS-200I]
    "Ascend310B1": A200I, "Ascend310B2": A200I, "Ascend310B3": A200I, "Ascend310B4": A200I,
}

# (prefix, a digit must follow, family), tried in order after the exact names. The digit keeps
# "Ascend910B" itself (exact: training) and made-up names such as "Ascend910Bx" out of the A2 rule.
# What follows the prefix may hold only letters, digits, '-' and '_' (as every listed name does).
PREFIXES: Tuple[Tuple[str, bool, str], ...] = (
    ("Ascend950", False, A950),
    ("Ascend910_93", True, A3),
    ("Ascend910B", True, A2),
    ("Ascend310P", True, INFERENCE),
    ("Ascend310B", True, A200I),
)


class UnknownSoc(ValueError):
    """A SoC name the table does not hold."""

    def __init__(self, soc: str, why: str) -> None:
        self.soc = soc
        super().__init__(f"SoC {soc!r}: {why}; no product family is guessed. If this is a simulator or "
                         f"emulator, pass --backend-opt product=<{'|'.join(PRODUCTS)}>")


@dataclass(frozen=True)
class Match:
    """How a name was resolved: the family and the rule that said so."""
    soc: str
    family: str
    rule: str  # "exact" or "prefix <P>"


def match(soc: str) -> Optional[Match]:
    """The table's entry for `soc`, or None when no exact name or prefix rule holds it."""
    if soc in EXACT:
        return Match(soc, EXACT[soc], "exact")
    for prefix, digit, family in PREFIXES:
        rest = soc[len(prefix):]
        if soc.startswith(prefix) and (not digit or rest[:1] in _DIGITS) and all(c in _NAME_CHARS for c in rest):
            return Match(soc, family, f"prefix {prefix}")
    return None


_DIGITS = frozenset("0123456789")
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")


def family_of(soc: str) -> str:
    """The product family `soc` is held to; UnknownSoc (naming it) when there is none."""
    m = match(soc)
    if m is None:
        raise UnknownSoc(soc, "not a SoC name CANN's platform configurations list")
    return m.family


def has_bfloat16(soc: str) -> bool:
    """Whether the operators take bfloat16 on `soc` (False for a name without a family)."""
    m = match(soc)
    return bool(m and BFLOAT16[m.family])


def c_header() -> str:
    """The table as C, for the host emulator's build (tests/emulator): one source of truth."""
    lines = ["/* Generated from suite/backends/soc.py by tests/emulator/build.py: do not edit. */",
             "#define EMU_FAMILY_NONE (-1)",
             "static const char *const EMU_FAMILIES[] = {" + ", ".join(f'"{p}"' for p in PRODUCTS) + "};",
             "static const int EMU_FAMILY_BF16[] = {" + ", ".join(str(int(BFLOAT16[p])) for p in PRODUCTS) + "};",
             "typedef struct { const char *name; int digit; int family; } emu_soc_rule;",
             "static const emu_soc_rule EMU_SOC_EXACT[] = {"]

    def idx(f: str) -> str:
        return str(PRODUCTS.index(f))
    lines += [f'    {{"{n}", 0, {idx(f)}}},' for n, f in EXACT.items()]
    lines += ["};", "static const emu_soc_rule EMU_SOC_PREFIX[] = {"]
    lines += [f'    {{"{p}", {int(d)}, {idx(f)}}},' for p, d, f in PREFIXES]
    lines += ["};", ""]
    return "\n".join(lines)
