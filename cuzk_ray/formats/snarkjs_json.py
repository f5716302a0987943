"""snarkjs JSON: ``proof.json``, ``public.json``, ``verification_key.json`` (write and read).

Coordinates are decimal strings of the standard form, affine with z = 1 (DESIGN.md section 4).
Readers raise JsonFormatError with a one-line message naming the file and the field. The curve
is the file's "curve" field ("bls12381" or "bn128"; absent: bls12381); the writers take it from
the arrays' limb count (cuzk_ray.groth16.verifier.vk_curve).
"""

from __future__ import annotations

import copy
import json
import os
import re
import tempfile
from pathlib import Path

import numpy as np

from ..curve_groups import groups_for
from ..curves import BLS12_381, Curve, curve_named
from ..field import R_MOD, ints_to_limbs
from ..groth16.keys import Proof, VerifyingKey
from ..groth16.verifier import vk_curve


class JsonFormatError(ValueError):
    """A snarkjs JSON file is malformed; the message names the file and the field."""


def _curve_of(arr) -> Curve:
    """The curve of a point array, from its limb count (6: BLS12-381, 4: BN254)."""
    return BLS12_381 if arr.shape[-1] == BLS12_381.fp_limbs else curve_named("bn254")


def _g1_json(arr) -> list[str]:
    g = groups_for(_curve_of(arr))
    c = g.g1_coords(g.g1_points(arr)[0])
    return ["0", "1", "0"] if c is None else [str(c[0]), str(c[1]), "1"]


def _g2_json(arr) -> list[list[str]]:
    g = groups_for(_curve_of(arr))
    c = g.g2_coords(g.g2_points(arr)[0])
    if c is None:
        return [["0", "0"], ["1", "0"], ["0", "0"]]
    return [[str(c[0]), str(c[1])], [str(c[2]), str(c[3])], ["1", "0"]]


def proof_json(proof: Proof) -> dict:
    return {"pi_a": _g1_json(proof.a), "pi_b": _g2_json(proof.b), "pi_c": _g1_json(proof.c),
            "protocol": "groth16", "curve": _curve_of(proof.a).snarkjs_name}


def public_json(public) -> list[str]:
    return [str(int(x)) for x in public]


_ALPHABETA: dict[tuple, list] = {}  # (curve, alpha, beta) -> e(alpha, beta): a run writes its key's twice


def _alphabeta_key(vk: VerifyingKey) -> tuple:
    return vk_curve(vk).name, np.asarray(vk.alpha_g1).tobytes(), np.asarray(vk.beta_g2).tobytes()


def vk_alphabeta(vk: VerifyingKey) -> list:
    """e(alpha, beta) in snarkjs's nesting: Fp12 = [Fp6, Fp6], Fp6 = [Fp2] * 3, Fp2 = [c0, c1].
    A pairing in Python ints (~0.1 s for BN254): computed once per key and process (and kept with
    a converted zkey on disk: formats.zkey_cache hands it back through remember_alphabeta)."""
    key = _alphabeta_key(vk)
    if key not in _ALPHABETA:
        g = groups_for(vk_curve(vk))
        _ALPHABETA[key] = g.alphabeta(g.g1_points(vk.alpha_g1)[0], g.g2_points(vk.beta_g2)[0])
    return copy.deepcopy(_ALPHABETA[key])


def remember_alphabeta(vk: VerifyingKey, value) -> bool:
    """Take ``value`` as the key's e(alpha, beta) (one stored with the key's conversion) when it
    has snarkjs's shape, 2 x 3 x 2 decimal strings; False (nothing kept: it is computed when
    needed) for anything else."""
    ok = (isinstance(value, list) and len(value) == 2
          and all(isinstance(h, list) and len(h) == 3 for h in value)
          and all(isinstance(f, list) and len(f) == 2 and all(isinstance(v, str) and v.isdigit() for v in f)
                  for h in value for f in h))
    if ok:
        _ALPHABETA[_alphabeta_key(vk)] = copy.deepcopy(value)
    return ok


def verification_key_json(vk: VerifyingKey) -> dict:
    return {
        "protocol": "groth16", "curve": vk_curve(vk).snarkjs_name, "nPublic": vk.n_public,
        "vk_alpha_1": _g1_json(vk.alpha_g1), "vk_beta_2": _g2_json(vk.beta_g2),
        "vk_gamma_2": _g2_json(vk.gamma_g2), "vk_delta_2": _g2_json(vk.delta_g2),
        "vk_alphabeta_12": vk_alphabeta(vk),
        "IC": [_g1_json(vk.ic[i : i + 1]) for i in range(len(vk.ic))],
    }


def json_bytes(obj) -> bytes:
    """The bytes every JSON output is written as (indent 1, a final newline): what a recorded
    SHA-256 is taken over."""
    return (json.dumps(obj, indent=1) + "\n").encode()


def write_bytes_atomic(path, data: bytes, fsync: bool = False) -> None:
    """Write ``data`` to a temporary file in the same directory, then rename it over ``path``, so a
    reader never sees half a file. ``fsync``: flush the file and the directory to the disk first
    (outputs a crash must not lose)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            if fsync:
                f.flush()
                os.fsync(f.fileno())
        umask = os.umask(0)
        os.umask(umask)
        # mkstemp makes 0600; outputs are readable files, never group/world-writable whatever
        # the umask (issue 15: 0644 or tighter)
        os.chmod(tmp, 0o644 & ~umask)
        os.replace(tmp, path)
        if fsync:
            dfd = os.open(path.parent, os.O_RDONLY)
            try:
                os.fsync(dfd)  # the rename itself is durable only once the directory is
            finally:
                os.close(dfd)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path, obj) -> None:
    """Write JSON to a temporary file in the same directory, then rename over ``path``."""
    write_bytes_atomic(path, json_bytes(obj))


# ---------------------------------------------------------------------------------------------
# Readers


# Decimal strings as snarkjs writes them; at most 160 digits (q < 10^116), so a huge string is
# refused before int() spends time on it.
_DECIMAL = re.compile(r"[0-9]{1,160}")


def _no_constant(name):
    raise ValueError(f"{name} is not a JSON number")  # json.loads accepts NaN/Infinity by default


def load_json(path) -> object:
    """Parse a JSON file strictly: JsonFormatError naming the file for invalid JSON, NaN/Infinity,
    nesting too deep for the parser, or a file that cannot be read."""
    try:
        return json.loads(Path(path).read_text(), parse_constant=_no_constant)
    except FileNotFoundError:
        raise JsonFormatError(f"{path}: file not found") from None
    except RecursionError:
        raise JsonFormatError(f"{path}: not valid JSON (nested too deeply)") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise JsonFormatError(f"{path}: not valid JSON ({e})") from None
    except ValueError as e:  # from _no_constant
        raise JsonFormatError(f"{path}: not valid JSON ({e})") from None
    except OSError as e:  # a directory, no permission
        raise JsonFormatError(f"{path}: cannot be read ({e.strerror})") from None


def _int(path, field, s, modulus) -> int:
    # snarkjs wants decimal strings: a JSON number (even an integral one) or any other form
    # (sign, spaces, underscores, hex) is refused, not converted.
    if not isinstance(s, str) or not _DECIMAL.fullmatch(s):
        shown = repr(s) if len(repr(s)) <= 40 else repr(s)[:37] + "..."
        what = "a JSON number" if isinstance(s, int | float) and not isinstance(s, bool) else shown
        raise JsonFormatError(f"{path}: {field} is {what}, expected a decimal string")
    v = int(s)
    if not v < modulus:
        raise JsonFormatError(f"{path}: {field} = {v} is out of range [0, {'q' if modulus in _BASE_PRIMES else 'r'})")
    return v


_BASE_PRIMES = {BLS12_381.p, curve_named("bn254").p}


def _g1_arr(path, field, v, curve: Curve) -> np.ndarray:
    if not (isinstance(v, list) and len(v) == 3):
        raise JsonFormatError(f"{path}: {field} must be a list [x, y, z] of 3 decimal strings")
    k = curve.fp_limbs
    x, y, z = (_int(path, f"{field}[{i}]", v[i], curve.p) for i in range(3))
    if z == 0:
        return np.zeros((1, 2, k), dtype=np.uint64)
    if z != 1:
        raise JsonFormatError(f"{path}: {field} has z = {z}; only affine points (z = 1) are supported")
    return ints_to_limbs([x, y], k).reshape(1, 2, k)


def _g2_arr(path, field, v, curve: Curve) -> np.ndarray:
    if not (isinstance(v, list) and len(v) == 3 and all(isinstance(c, list) and len(c) == 2 for c in v)):
        raise JsonFormatError(f"{path}: {field} must be [[x0, x1], [y0, y1], [z0, z1]]")
    k = curve.fp_limbs
    vals = [_int(path, f"{field}[{i}][{j}]", v[i][j], curve.p) for i in range(3) for j in range(2)]
    if vals[4:] == [0, 0]:
        return np.zeros((1, 2, 2, k), dtype=np.uint64)
    if vals[4:] != [1, 0]:
        raise JsonFormatError(f"{path}: {field} is not affine (z must be [1, 0])")
    return ints_to_limbs(vals[:4], k).reshape(1, 2, 2, k)


def _check_curve(path, obj) -> Curve:
    if not isinstance(obj, dict):
        raise JsonFormatError(f"{path}: expected a JSON object")
    if obj.get("protocol", "groth16") != "groth16":
        raise JsonFormatError(f"{path}: protocol {obj.get('protocol')!r}, only groth16 is supported")
    curve = obj.get("curve", "bls12381")
    if curve not in ("bls12381", "bn128"):
        raise JsonFormatError(f"{path}: curve {curve!r}, only bls12381 and bn128 are supported")
    return curve_named(curve)


def read_proof(path) -> Proof:
    return proof_from_json(load_json(path), path)


def proof_from_json(obj, source) -> Proof:
    """A proof.json object (already parsed; ``source`` names it in errors) as a Proof."""
    curve = _check_curve(source, obj)
    for k in ("pi_a", "pi_b", "pi_c"):
        if k not in obj:
            raise JsonFormatError(f"{source}: field {k} is missing")
    return Proof(a=_g1_arr(source, "pi_a", obj["pi_a"], curve), b=_g2_arr(source, "pi_b", obj["pi_b"], curve),
                 c=_g1_arr(source, "pi_c", obj["pi_c"], curve))


def read_public(path) -> list[int]:
    return public_from_json(load_json(path), path)


def public_from_json(obj, source) -> list[int]:
    """A public.json list (already parsed; ``source`` names it in errors) as ints."""
    if not isinstance(obj, list):
        raise JsonFormatError(f"{source}: expected a JSON list of decimal strings")
    return [_int(source, f"[{i}]", s, R_MOD) for i, s in enumerate(obj)]


def read_verification_key(path) -> VerifyingKey:
    return verification_key_from_json(load_json(path), path)


def verification_key_from_json(obj, source) -> VerifyingKey:
    """A verification_key.json object (already parsed; ``source`` names it in errors)."""
    path = source
    curve = _check_curve(path, obj)
    for k in ("vk_alpha_1", "vk_beta_2", "vk_gamma_2", "vk_delta_2", "IC"):
        if k not in obj:
            raise JsonFormatError(f"{path}: field {k} is missing")
    if not isinstance(obj["IC"], list) or not obj["IC"]:
        raise JsonFormatError(f"{path}: IC must be a non-empty list of G1 points")
    if "nPublic" in obj and type(obj["nPublic"]) is not int:  # (bool is an int subclass: refused too)
        raise JsonFormatError(f"{path}: nPublic is {obj['nPublic']!r}, expected an integer")
    if "nPublic" in obj and obj["nPublic"] != len(obj["IC"]) - 1:
        raise JsonFormatError(f"{path}: nPublic = {obj['nPublic']} but IC has {len(obj['IC'])} points")
    ic = np.concatenate([_g1_arr(path, f"IC[{i}]", p, curve) for i, p in enumerate(obj["IC"])])
    return VerifyingKey(alpha_g1=_g1_arr(path, "vk_alpha_1", obj["vk_alpha_1"], curve),
                        beta_g2=_g2_arr(path, "vk_beta_2", obj["vk_beta_2"], curve),
                        gamma_g2=_g2_arr(path, "vk_gamma_2", obj["vk_gamma_2"], curve),
                        delta_g2=_g2_arr(path, "vk_delta_2", obj["vk_delta_2"], curve), ic=ic)
