"""Proving keys for built-in circuits: made once by the development setup, cached on disk as
native bundles under ``<cache_dir>/keys/<circuit id>-setup<seed>/``."""

from __future__ import annotations

import json
import logging
import shutil
import time
from pathlib import Path

from .formats.native import VERSION as BUNDLE_VERSION
from .formats.native import load_bundle
from .groth16.setup import dev_setup_bundle

log = logging.getLogger(__name__)


def insecure_line(key: str, setup_seed: int | None) -> str:
    """The line every run with a development key prints (the batch job, the client of a service,
    and the service on every load of such a key, a cached one's too)."""
    return (f"INSECURE: {key} comes from the development setup (setup_seed={setup_seed}): anyone who knows the "
            f"seed can forge its proofs; use a ceremony key (circuit=snarkjs) for anything real")


def dev_key_path(circuit, cache_dir, setup_seed: int = 0) -> Path:
    """Where the dev key of ``circuit`` made with ``setup_seed`` is cached (a bundle directory)."""
    return Path(cache_dir).expanduser() / "keys" / f"{circuit.circuit_id}-setup{setup_seed}"


def dev_key_cached(circuit, cache_dir, setup_seed: int = 0) -> bool:
    """True when the bundle is on disk (its manifest is written last) in the current layout: a
    bundle of an older version (dense key, CSR matrices: ~75 % larger at 2^27) is made again."""
    mf = dev_key_path(circuit, cache_dir, setup_seed) / "manifest.json"
    try:
        return json.loads(mf.read_text()).get("version") == BUNDLE_VERSION
    except (OSError, ValueError):
        return False


def ensure_dev_key(circuit, cache_dir, setup_seed: int = 0, setup_backend: str = "auto"):
    """(pk, cs, path, created): load the cached bundle or run the dev setup (on the GPU when
    setup_backend resolves to cuda), streamed into its bundle on disk as it is computed (the
    2^27 key and matrices are ~52 GiB); the bundle is memory-mapped back, so the host keeps only
    what it touches."""
    path = dev_key_path(circuit, cache_dir, setup_seed)
    if dev_key_cached(circuit, cache_dir, setup_seed):
        pk, cs = load_bundle(path)
        if cs is not None:
            return pk, cs, path, False
    if path.exists():  # an older layout or no matrices: made again (deterministic), its disk freed first
        log.warning("dev key %s is of an older layout; making it again", path)
        shutil.rmtree(path)
    t0 = time.perf_counter()
    cs = circuit.build()
    built = time.perf_counter() - t0
    # streamed into the bundle as it is computed: the host never holds the whole key (44 GiB at 2^27);
    # a GPU setup gives its device memory back before returning (groth16.setup.generate_key)
    dev_setup_bundle(path, cs, setup_seed, meta={"circuit_id": circuit.circuit_id, "build_seconds": round(built, 3)},
                     backend=setup_backend)
    del cs
    log.info("dev key for %s written to %s in %.1f s", circuit.circuit_id, path, time.perf_counter() - t0)
    pk, cs = load_bundle(path, verify_hashes=False)
    return pk, cs, path, True
