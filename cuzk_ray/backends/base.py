"""The backend contract: what the prover and the engine's worker may call on a compute backend.

Two implementations: ``cpu.CpuBackend`` (numpy, numba, py-arkworks) and ``cuda.CudaBackend``
(the device layer, cuzk_ray.cuda). Where the CPU has nothing to do (staging, device time, VRAM),
its method is a no-op with the same signature; callers never probe with getattr.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..field import FrVector
from ..groth16.keys import ProvingKey
from ..r1cs import ConstraintSystem
from ..timing import StageTimes
from ..witness import Witness


@dataclass
class DeviceTime:
    """Kernel seconds of one partition on a device, and when it held the device (epoch seconds);
    ``sections``: the same seconds by what held the device ("h", "msm_h", ...), so a profile of
    the prover itself says where a partition's GPU time goes, not a standalone kernel bench."""

    seconds: float = 0.0
    spans: list[tuple[float, float]] = field(default_factory=list)
    sections: dict[str, float] = field(default_factory=dict)


@runtime_checkable
class Backend(Protocol):
    name: str  # "cpu" | "cuda"
    qaps: tuple[str, ...]  # the H conventions compute_h_from_witness computes ("snarkjs", "bellperson")
    split_g2: bool  # the prover cuts the G2 MSM and H's in two halves (two CPU threads share each;
    # msm_g1 and msm_g2 then take a start: where the half's bases begin)
    # optional msm_before_h (bool, False when absent): the prover submits the witness's MSMs before
    # it asks for H (groth16.prover.submit_witness_msms; the CPU backend sets it)

    def warm_up(self, pk: ProvingKey) -> None:
        """Compile or load what the first partition would otherwise wait for."""

    def load_key(self, pk: ProvingKey) -> Any:
        """The key's bases resident in the backend's form (kept for every later proof)."""

    def load_cs(self, cs: ConstraintSystem) -> Any:
        """The constraint matrices resident (VRAM on the cuda backend)."""

    def unload(self, pk: ProvingKey, cs: ConstraintSystem | None) -> None:
        """Drop what load_key / load_cs made resident for this key (a prover pool evicting it)."""

    def stage(self, witness: Witness, modulus: int = ...) -> FrVector:
        """The witness as an FrVector where the kernels read it, from either form: a CompactWitness
        (what synthesis makes; cpu: expanded on the host; cuda: its bitmaps and values uploaded and
        expanded on the device) or an FrVector (cpu: as it is; cuda: uploaded). ``modulus``: the
        r of the key's curve (BLS12-381's unless given): cuda checks raw limbs below it."""

    def account(self) -> AbstractContextManager[DeviceTime | None]:
        """A context whose kernels are counted in the DeviceTime it yields (None without a device)."""

    @property
    def vram_peak(self) -> int | None:
        """Highest device bytes in use seen after a kernel (None without a device)."""

    def compute_h(self, a: FrVector, b: FrVector, c: FrVector) -> Any:
        """h in the snarkjs convention from a, b, c on the domain: numpy ``uint64[n, 4]`` limbs
        (an oracle-facing entry point; the prover's path is compute_h_from_witness)."""

    def compute_h_from_witness(self, cs: ConstraintSystem, witness: FrVector,
                               times: StageTimes | None = None, qap: str = "snarkjs") -> FrVector:
        """h from the witness (a, b, c evaluated first, on the device for cuda; an FrVector there);
        ``qap`` "bellperson": bellperson's H, m - 1 coefficients (passed only for such a key)."""

    def gather(self, key: Any, wires: str, scalars: FrVector) -> FrVector:
        """The scalars of the wires that have a point in the key's queries of density ``wires``
        ("a_wires": a_query; "b_wires": b_g1_query and b_g2_query), in the order of the points:
        ``scalars[pk.<wires>]`` (cuda: on the device); the scalars as they are when the key is
        dense there (``pk.<wires>`` is None). An FrVector stays one (its rows were checked)."""

    def msm_g1(self, key: Any, query: str, scalars: FrVector) -> Any:
        """sum scalars[i] * key.query[i] in G1, as an arkworks point."""

    def msm_g2(self, key: Any, query: str, scalars: FrVector, start: int | None = None) -> Any:
        """sum scalars[i] * key.query[start + i] in G2, as an arkworks point."""

    def submit(self, fn, *args):
        """Run fn(*args) on the backend's worker threads; returns a Future."""
