"""Montgomery multi-limb arithmetic in numba, generic over the modulus and the limb count.

numba has no 128-bit integer, so the 64 x 64 -> 128-bit multiply-accumulate and the carry and
borrow chains are three tiny LLVM-IR intrinsics (mac, adc, sbb); the word-wise Montgomery
multiplication (CIOS) is written on top of them by a small code generator (loops over limbs
written out), so LLVM keeps every limb in a register and every modulus limb is an immediate.

``field_namespace(modulus, limbs)`` compiles one field's scalar operations:
  mont_mul, mod_add, mod_sub, reduce_once   on unpacked limbs (a0, .., a(k-1), b0, ..): fr_kernels'
                                            BLS12-381 Fr NTT calls these
  mul, add, sub, neg, is_zero, eq           on limb tuples: the BN254 NTT and curve kernels call these
Elements are little-endian 64-bit limbs, reduced (< modulus); mul(a, b) = a b 2^(-64 k) mod p.

``instantiate(templates, namespace, module)`` turns plain-Python kernel templates into numba
kernels bound to one field's (or group's) namespace: a copy of each function with that namespace
as its globals. The copy keeps its source file, so ``cache=True`` works, and its module name
(``__name__`` in the namespace: one per field, with the modulus's hash) keeps each field's cache
entries apart. So one source serves BLS12-381's Fr, BN254's Fr and Fp, and Fp2 over BN254's Fp.
"""

from __future__ import annotations

import hashlib
import sys
import types as pytypes

import numpy as np
from llvmlite import ir
from numba import njit
from numba.core import types
from numba.extending import intrinsic

KERNEL_OPTIONS = dict(nogil=True, cache=True, boundscheck=False)


# 64 x 64 -> 128-bit products and carry chains, written in LLVM IR (numba has no 128-bit type);
# LLVM turns them into one mul and add/adc pairs.
def _i128_op(builder, args, op):
    i64, i128 = ir.IntType(64), ir.IntType(128)
    wide = [builder.zext(v, i128) for v in args]
    s = op(builder, *wide)
    return builder.trunc(s, i64), builder.trunc(builder.lshr(s, ir.Constant(i128, 64)), i64)


def _u64_intrinsic(nargs, op, hi_bit=False):
    def typer(typingctx, *args):
        sig = types.UniTuple(types.uint64, 2)(*([types.uint64] * nargs))

        def codegen(context, builder, signature, llargs):
            lo, hi = _i128_op(builder, llargs, op)
            if hi_bit:  # borrow: 1 if the 128-bit difference went negative
                hi = builder.lshr(hi, ir.Constant(ir.IntType(64), 63))
            return context.make_tuple(builder, signature.return_type, (lo, hi))

        return sig, codegen

    return typer


@intrinsic
def mac(typingctx, t, a, b, c):
    """(lo, hi) of t + a * b + c < 2^128."""
    return _u64_intrinsic(4, lambda bld, t, a, b, c: bld.add(bld.add(bld.mul(a, b), t), c))(typingctx, t, a, b, c)


@intrinsic
def adc(typingctx, a, b, c):
    """(a + b + c mod 2^64, carry)."""
    return _u64_intrinsic(3, lambda bld, a, b, c: bld.add(bld.add(a, b), c))(typingctx, a, b, c)


@intrinsic
def sbb(typingctx, a, b, br):
    """(a - b - br mod 2^64, borrow)."""
    return _u64_intrinsic(3, lambda bld, a, b, br: bld.sub(bld.sub(a, b), br), hi_bit=True)(typingctx, a, b, br)


# ------------------------------------------------------------------------------------------------
# the generator: source text of one field's scalar operations


def _names(prefix: str, nl: int) -> str:
    return ", ".join(f"{prefix}{i}" for i in range(nl))


def _gen_cond_sub(v: str, carry: str, nl: int) -> list[str]:
    """Return v - p if (carry, v) >= p else v (carry: 0 or 1, the bit above v's top limb).

    Branch-free (a mask selects): the branch would be taken at random and mispredict."""
    lines = ["    br = Z"]
    for j in range(nl):
        lines.append(f"    d{j}, br = sbb({v}{j}, P{j}, br)")
    lines.append(f"    keep = Z - (br & (ONE - {carry}))  # all ones: v < p, keep v")
    return lines + ["    return " + ", ".join(f"(d{j} & ~keep) | ({v}{j} & keep)" for j in range(nl))]


def _gen_mont_mul_no_carry(nl: int) -> str:
    """CIOS without the two extra words, for a modulus whose top limb is below 2^63 - 1 (gnark's
    "no-carry" condition: BN254's p and r, BLS12-381's r): the product row and the reduction row
    run in one loop and nothing carries out of the top word (t < 2p all along). ~12 % faster."""
    lines = [f"def mont_mul({_names('a', nl)}, {_names('b', nl)}):"]
    lines += [f"    t{j} = Z" for j in range(nl)]
    for i in range(nl):
        lines.append(f"    t0, A = mac(t0, a0, b{i}, Z)")
        lines.append("    m = t0 * INV64")
        lines.append("    _, C = mac(t0, m, P0, Z)")
        for j in range(1, nl):
            lines.append(f"    t{j}, A = mac(t{j}, a{j}, b{i}, A)")
            lines.append(f"    t{j - 1}, C = mac(t{j}, m, P{j}, C)")
        lines.append(f"    t{nl - 1} = C + A")
    return "\n".join(lines + _gen_cond_sub("t", "Z", nl))


def _gen_mont_mul(nl: int) -> str:
    """CIOS Montgomery multiplication a * b * 2^(-64 nl) mod p (a, b < p; p < 2^(64 nl - 1), so the
    running value stays below 2p and one conditional subtraction ends it)."""
    lines = [f"def mont_mul({_names('a', nl)}, {_names('b', nl)}):"]
    lines += [f"    t{j} = Z" for j in range(nl + 2)]
    for i in range(nl):
        lines.append("    c = Z")
        for j in range(nl):
            lines.append(f"    t{j}, c = mac(t{j}, a{j}, b{i}, c)")
        lines.append(f"    t{nl}, t{nl + 1} = adc(t{nl}, c, Z)")
        lines.append("    m = t0 * INV64")
        lines.append("    _, c = mac(t0, m, P0, Z)")
        for j in range(1, nl):
            lines.append(f"    t{j - 1}, c = mac(t{j}, m, P{j}, c)")
        lines.append(f"    t{nl - 1}, c = adc(t{nl}, c, Z)")
        lines.append(f"    t{nl} = t{nl + 1} + c")
    return "\n".join(lines + _gen_cond_sub("t", f"t{nl}", nl))


def _gen_add(nl: int) -> str:
    lines = [f"def mod_add({_names('a', nl)}, {_names('b', nl)}):", "    c = Z"]
    lines += [f"    t{j}, c = adc(a{j}, b{j}, c)" for j in range(nl)]
    return "\n".join(lines + _gen_cond_sub("t", "c", nl))


def _gen_sub(nl: int) -> str:
    """a - b, plus p where that borrowed (added under a mask, no branch)."""
    lines = [f"def mod_sub({_names('a', nl)}, {_names('b', nl)}):", "    br = Z"]
    lines += [f"    t{j}, br = sbb(a{j}, b{j}, br)" for j in range(nl)]
    lines += ["    mask = Z - br", "    c = Z"]
    lines += [f"    t{j}, c = adc(t{j}, P{j} & mask, c)" for j in range(nl)]
    return "\n".join(lines + [f"    return {_names('t', nl)}"])


def _gen_reduce(nl: int) -> str:
    return "\n".join([f"def reduce_once({_names('a', nl)}):"] + _gen_cond_sub("a", "Z", nl))


def _gen_tuple_ops(nl: int) -> str:
    """The tuple-argument forms: mul(a, b), add, sub, neg, is_zero, eq."""
    ua = ", ".join(f"a[{i}]" for i in range(nl))
    ub = ", ".join(f"b[{i}]" for i in range(nl))
    zero = ", ".join(["Z"] * nl)
    return "\n".join([
        "def mul(a, b):", f"    return mont_mul({ua}, {ub})",
        "def add(a, b):", f"    return mod_add({ua}, {ub})",
        "def sub(a, b):", f"    return mod_sub({ua}, {ub})",
        "def neg(a):", f"    return mod_sub({zero}, {ua})",
        "def is_zero(a):", "    return " + " and ".join(f"a[{i}] == Z" for i in range(nl)),
        "def eq(a, b):", "    return " + " and ".join(f"a[{i}] == b[{i}]" for i in range(nl)),
    ])


FIELD_OPS = ("mont_mul", "mod_add", "mod_sub", "reduce_once", "mul", "add", "sub", "neg", "is_zero", "eq")


def limbs_of(value: int, nl: int) -> list[int]:
    """value as nl little-endian 64-bit limbs."""
    return [(value >> (64 * i)) & ((1 << 64) - 1) for i in range(nl)]


def field_namespace(modulus: int, nl: int) -> dict:
    """The scalar operations (FIELD_OPS, numba functions without cache: they are compiled into the
    kernels that call them) and constants of Z/modulus on nl limbs, as a dict of globals.

    Constants: P0.. (the modulus's limbs), INV64 (-p^-1 mod 2^64), MONT_ONE (2^(64 nl) mod p),
    MONT_R2 (2^(128 nl) mod p) as limb tuples, MODULUS (the int), NL."""
    if not (modulus % 2 and modulus.bit_length() < 64 * nl):
        raise ValueError(f"field_namespace: the modulus must be odd and below 2^{64 * nl - 1}")
    u = np.uint64
    ns = {"Z": u(0), "ONE": u(1), "INV64": u((-pow(modulus, -1, 1 << 64)) % (1 << 64)),
          "mac": mac, "adc": adc, "sbb": sbb, "MODULUS": modulus, "NL": nl,
          **{f"P{i}": u(p) for i, p in enumerate(limbs_of(modulus, nl))}}
    ns["MONT_ONE"] = tuple(u(x) for x in limbs_of(pow(2, 64 * nl, modulus), nl))
    ns["MONT_R2"] = tuple(u(x) for x in limbs_of(pow(2, 128 * nl, modulus), nl))
    no_carry = modulus >> (64 * (nl - 1)) < (1 << 63) - 1
    mont_mul_src = _gen_mont_mul_no_carry(nl) if no_carry else _gen_mont_mul(nl)
    for src in (mont_mul_src, _gen_add(nl), _gen_sub(nl), _gen_reduce(nl), _gen_tuple_ops(nl)):
        exec(compile(src, f"<limb_arith {nl}-limb field>", "exec"), ns)
    for name in FIELD_OPS:
        ns[name] = njit(ns[name])
    return ns


with open(__file__, "rb") as _f:
    # numba checks a cached kernel against its own source file only: the generator's source goes
    # into every instance's name, so a change here compiles the kernels again
    _GENERATOR_HASH = hashlib.sha256(_f.read()).hexdigest()


def module_name(base: str, *constants) -> str:
    """A per-instance module name: ``base`` plus a hash of the constants it was built over and of
    this generator's source."""
    return f"{base}_{hashlib.sha256((repr(constants) + _GENERATOR_HASH).encode()).hexdigest()[:12]}"


def instantiate(templates, namespace: dict, module: str, cached=(), **options) -> pytypes.SimpleNamespace:
    """numba functions compiled from the templates (plain functions, or numba functions whose
    ``py_func`` is used) with ``namespace`` as their globals, under the module name ``module``.

    Templates named in ``cached`` are kernels (KERNEL_OPTIONS plus ``options``: cached on disk,
    the GIL released); the others are helpers, compiled into the kernels that call them. Every
    function is also put into the namespace, so templates calling each other by name get this
    instance's versions."""
    # A registered module: numba finds the functions' globals through it (sys.modules), when it
    # compiles and when it loads a cached kernel's environment in a later process.
    mod = sys.modules.get(module) or pytypes.ModuleType(module)
    mod.__dict__.update(namespace)
    sys.modules[module] = mod
    ns = mod.__dict__
    tag = module.rsplit(".", 1)[-1]
    out = {}
    for t in templates:
        f = getattr(t, "py_func", t)
        copy = pytypes.FunctionType(f.__code__, ns, f.__name__, f.__defaults__, f.__closure__)
        copy.__module__, copy.__doc__ = module, f.__doc__
        # numba names a cache entry after the source file and the qualified name: the instance's
        # tag in the name keeps each field's kernels apart from the template's own (same code)
        copy.__qualname__ = f"{tag}.{f.__qualname__}"
        out[f.__name__] = ns[f.__name__] = (njit(**KERNEL_OPTIONS, **options)(copy) if f.__name__ in cached
                                            else njit(copy))
    return pytypes.SimpleNamespace(**out, ns=ns)
