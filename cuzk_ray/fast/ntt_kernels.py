"""fast/fr_kernels.py's NTT array kernels over any 4-limb scalar field (BN254's Fr), by
fast/limb_arith.py's ``instantiate``: the same source, this field's Montgomery constants.

``kernels_for(modulus)`` gives an object with fr_kernels' kernel names (mul_table,
reduce_in_place, powers_mont, dif_stage, dit_stage, dif, dit, h_combine, BLOCK): fr_kernels
itself for BLS12-381's r, an instance compiled (and cached on disk) per field otherwise.
"""

from __future__ import annotations

import functools

from ..field import R_MOD
from . import fr_kernels as K
from .limb_arith import field_namespace, instantiate, module_name

KERNELS = ("mul_table", "reduce_in_place", "powers_mont", "dif_stage", "dit_stage", "dif", "dit", "h_combine")
HELPERS = ("load_row", "store_row")


@functools.lru_cache(maxsize=4)
def kernels_for(modulus: int):
    """The NTT kernels over Z/modulus (4 limbs of 64 bits, modulus < 2^255)."""
    if modulus == R_MOD:
        return K
    ns = field_namespace(modulus, K.NL)
    ns["BLOCK"] = K.BLOCK
    ns["REDUCTIONS"] = (1 << 256) // modulus  # enough subtractions for any 256-bit value
    templates = [getattr(K, name) for name in HELPERS + KERNELS]
    out = instantiate(templates, ns, module_name(__name__ + ".fr", modulus), cached=KERNELS)
    out.BLOCK, out.NL, out.MODULUS = K.BLOCK, K.NL, modulus
    return out
