"""The pairing-friendly curves cuzk-ray proves over, one frozen description each (issue 31).

A curve is read from a file (the primes in a zkey / wtns / r1cs header: ``curve_of_prime``) and
carried by the key (``ProvingKey.meta["curve"]``, a ``Curve.name``); nothing guesses it.

Both curves have y^2 = x^3 + b over Fp, a sextic twist y^2 = x^3 + b' over Fp2 = Fp[i]/(i^2 + 1)
carrying G2, 4-limb scalars, and Fr roots of unity generated as snarkjs's ffjavascript does: the
smallest quadratic non-residue g of Fr, omega_(2^s) = g^((r-1)/2^s), s the 2-adicity of r - 1.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Curve:
    """One curve's constants (standard form). ``root_generators``: the Fr element whose
    ((r-1)/2^s)-th power is the primitive 2^s-th root of each root convention."""

    name: str  # the project's name ("bls12381", "bn254"): ProvingKey.meta["curve"]
    snarkjs_name: str  # the "curve" field of snarkjs's JSON ("bls12381", "bn128")
    p: int  # base field Fp
    r: int  # scalar field Fr (the order of G1 and G2)
    fp_limbs: int  # 64-bit limbs per Fp element (the point arrays' last axis)
    b: int  # G1: y^2 = x^3 + b
    b2: tuple[int, int]  # G2 (the twist): y^2 = x^3 + b2, b2 in Fp2
    twist: str  # "M" (b2 = b * xi) or "D" (b2 = b / xi)
    xi: tuple[int, int]  # the non-residue of Fp2 the sextic twist is built on (Fp6 = Fp2[v]/(v^3 - xi))
    g1: tuple[int, int]
    g2: tuple[int, int, int, int]  # x.c0, x.c1, y.c0, y.c1
    g1_cofactor: int
    g2_cofactor: int
    two_adicity: int
    root_generators: dict  # root convention -> generator (see the class docstring)

    fr_limbs: int = 4

    @property
    def fp_bytes(self) -> int:
        return 8 * self.fp_limbs

    @property
    def fr_bytes(self) -> int:
        return 8 * self.fr_limbs

    def montgomery_r(self, modulus: int) -> int:
        """R mod modulus for this curve's limb count of that field (2^(64 * limbs))."""
        limbs = self.fp_limbs if modulus == self.p else self.fr_limbs
        return pow(2, 64 * limbs, modulus)

    @property
    def fp_r(self) -> int:
        return self.montgomery_r(self.p)

    @property
    def fr_r(self) -> int:
        return self.montgomery_r(self.r)

    def two_adic_root(self, convention: str = "snarkjs") -> int:
        """The primitive 2^two_adicity-th root of unity of Fr in the named convention."""
        try:
            g = self.root_generators[convention]
        except KeyError:
            raise ValueError(f"unknown root convention {convention!r}; use one of "
                             f"{sorted(self.root_generators)}") from None
        return pow(g, (self.r - 1) >> self.two_adicity, self.r)


BLS12_381 = Curve(
    name="bls12381", snarkjs_name="bls12381",
    p=0x1A0111EA397FE69A4B1BA7B6434BACD764774B84F38512BF6730D2A0F6B0F6241EABFFFEB153FFFFB9FEFFFFFFFFAAAB,
    r=0x73EDA753299D7D483339D80809A1D80553BDA402FFFE5BFEFFFFFFFF00000001,
    fp_limbs=6, b=4, b2=(4, 4), twist="M", xi=(1, 1),
    g1=(0x17F1D3A73197D7942695638C4FA9AC0FC3688C4F9774B905A14E3A3F171BAC586C55E83FF97A1AEFFB3AF00ADB22C6BB,
        0x08B3F481E3AAA0F1A09E30ED741D8AE4FCF5E095D5D00AF600DB18CB2C04B3EDD03CC744A2888AE40CAA232946C5E7E1),
    g2=(0x024AA2B2F08F0A91260805272DC51051C6E47AD4FA403B02B4510B647AE3D1770BAC0326A805BBEFD48056C8C121BDB8,
        0x13E02B6052719F607DACD3A088274F65596BD0D09920B61AB5DA61BBDC7F5049334CF11213945D57E5AC7D055D042B7E,
        0x0CE5D527727D6E118CC9CDC6DA2E351AADFD9BAA8CBDD3A76D429A695160D12C923AC9CC3BACA289E193548608B82801,
        0x0606C4A02EA734CC32ACD2B02BC28B99CB3E287E85A763AF267492AB572E99AB3F370D275CEC1DA1AAA9075FF05F79BE),
    g1_cofactor=0x396C8C005555E1568C00AAAB0000AAAB,
    g2_cofactor=0x5D543A95414E7F1091D50792876A202CD91DE4547085ABAA68A205B2E5A7DDFA628F1CB4D9E82EF21537E293A6691AE1616EC6E786F0C70CF1C38E31C7238E5,
    two_adicity=32,
    # snarkjs: 5 (a non-residue); native (arkworks / bellman): 7, Fr's multiplicative generator
    root_generators={"snarkjs": 5, "native": 7},
)

# BN254 (alt_bn128, circom's and Ethereum's "bn128"): EIP-196/197 and arkworks' ark-bn254.
BN254 = Curve(
    name="bn254", snarkjs_name="bn128",
    p=21888242871839275222246405745257275088696311157297823662689037894645226208583,
    r=21888242871839275222246405745257275088548364400416034343698204186575808495617,
    fp_limbs=4, b=3,
    b2=(19485874751759354771024239261021720505790618469301721065564631296452457478373,
        266929791119991161246907387137283842545076965332900288569378510910307636690),
    twist="D", xi=(9, 1),
    g1=(1, 2),
    g2=(10857046999023057135944570762232829481370756359578518086990519993285655852781,
        11559732032986387107991004021392285783925812861821192530917403151452391805634,
        8495653923123431417604973247489272438418190587263600148770280649306958101930,
        4082367875863433681332203403145435568316851327593401208105741076214120093531),
    g1_cofactor=1,
    g2_cofactor=21888242871839275222246405745257275088844257914179612981679871602714643921549,
    two_adicity=28,
    # 5 is Fr's smallest quadratic non-residue (snarkjs) and arkworks' multiplicative generator
    root_generators={"snarkjs": 5, "native": 5},
)

CURVES = {c.name: c for c in (BLS12_381, BN254)}
_BY_SNARKJS_NAME = {c.snarkjs_name: c for c in CURVES.values()}


def curve_named(name: str) -> Curve:
    """The curve of a project name ("bls12381", "bn254") or a snarkjs JSON name ("bn128")."""
    curve = CURVES.get(name) or _BY_SNARKJS_NAME.get(name)
    if curve is None:
        raise ValueError(f"unknown curve {name!r}; supported: {', '.join(sorted(CURVES))} (snarkjs: bls12381, bn128)")
    return curve


def curve_of_prime(prime: int) -> Curve | None:
    """The curve whose base field p or scalar field r is ``prime`` (None: no supported curve)."""
    for c in CURVES.values():
        if prime in (c.p, c.r):
            return c
    return None


def key_curve(meta: dict) -> Curve:
    """The curve a key's meta names (keys made before issue 31 carry none: they are BLS12-381)."""
    return curve_named(meta.get("curve", BLS12_381.name))
