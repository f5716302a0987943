"""The evaluation domain of the QAP: its size and roots of unity, validated once (``Domain``).

``Domain(n, convention)`` is the multiplicative subgroup of the n-th roots of unity of Fr in one
of the two root conventions (cuzk_ray.field.ROOT_GENERATORS: "snarkjs" for what snarkjs zkeys
assume, "native" for arkworks / bellman). It owns what every NTT and H computation needs:

  log_n                  n = 2^log_n
  omega, omega_inv       a primitive n-th root of unity and its inverse
  omega_2n, omega_2n_inv a primitive 2n-th root (omega_2n^2 = omega): the coset shift of the
                         snarkjs H (its odd 2n-th roots)
  n_inv                  1 / n mod r

The CPU reference (cuzk_ray.ref), the fast CPU path (cuzk_ray.fast) and the device layer
(cuzk_ray.cuda, whose twiddle tables are cached per device and domain) take a Domain instead of
a convention string. Domains are frozen and compare (and hash) by (n, convention).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from .field import FR_TWO_ADICITY, R_MOD, ROOT_GENERATORS, root_of_unity

MAX_LOG_N = FR_TWO_ADICITY - 1  # omega_2n must exist: 2n <= 2^32


def domain_size(n_constraints: int, n_public: int) -> int:
    """Smallest power of two strictly greater than n_constraints + n_public (the QAP's domain:
    m constraint rows and p + 1 public-input rows)."""
    return 1 << (n_constraints + n_public).bit_length()


@dataclass(frozen=True)
class Domain:
    """The n-th roots of unity of Fr in a root convention (see the module docstring)."""

    n: int
    convention: str = "snarkjs"
    log_n: int = field(init=False, compare=False, repr=False)
    omega: int = field(init=False, compare=False, repr=False)
    omega_inv: int = field(init=False, compare=False, repr=False)
    omega_2n: int = field(init=False, compare=False, repr=False)
    omega_2n_inv: int = field(init=False, compare=False, repr=False)
    n_inv: int = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        n = self.n
        log_n = n.bit_length() - 1 if isinstance(n, int) else -1
        if log_n < 0 or n != 1 << log_n or log_n > MAX_LOG_N:
            raise ValueError(f"Domain: size {n!r} is not a power of two between 1 and 2^{MAX_LOG_N}")
        if self.convention not in ROOT_GENERATORS:
            raise ValueError(f"unknown root convention {self.convention!r}; use one of {sorted(ROOT_GENERATORS)}")
        w, w2 = root_of_unity(n, self.convention), root_of_unity(2 * n, self.convention)
        for name, value in (("log_n", log_n), ("omega", w), ("omega_inv", pow(w, -1, R_MOD)),
                            ("omega_2n", w2), ("omega_2n_inv", pow(w2, -1, R_MOD)),
                            ("n_inv", pow(n, -1, R_MOD))):
            object.__setattr__(self, name, value)

    @classmethod
    def of(cls, n: int, convention: str = "snarkjs") -> Domain:
        """The (memoized) Domain of size n: what the functions that take ``domain=None`` use."""
        return _domain(n, convention)

    def double(self) -> Domain:
        """The domain of size 2n in the same convention (its omega is this omega_2n)."""
        return _domain(2 * self.n, self.convention)

    def check_size(self, n: int, what: str) -> None:
        """Raise ValueError unless a vector of length n lives on this domain."""
        if n != self.n:
            raise ValueError(f"{what}: length {n} on a domain of size {self.n}")


@functools.lru_cache(maxsize=64)
def _domain(n: int, convention: str) -> Domain:
    return Domain(n, convention)


def resolve(domain: Domain | str | None, n: int, what: str) -> Domain:
    """The Domain a public function works on: ``domain`` checked against the length n; a convention
    name ("snarkjs", "native") or None (snarkjs) for the memoized domain of size n."""
    if domain is None or isinstance(domain, str):
        return Domain.of(n, domain or "snarkjs")
    if not isinstance(domain, Domain):
        raise TypeError(f"{what}: expected a Domain or a root convention name, got {type(domain).__name__}")
    domain.check_size(n, what)
    return domain
