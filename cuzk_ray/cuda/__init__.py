"""The device layer: CuPy wrappers named file for file after the kernels they drive.

device (checks, host-side table helpers, per-device caches, release_device_memory),
ntt <-> kernels/ntt.cu (NTT, H), msm <-> msm.cu / msm_g2.cu (G1 and G2 MSM),
spmv <-> spmv.cu (a, b, c from resident constraint matrices), setup <-> setup.cu (the dev
setup's scalars), fixed_base <-> fixed_base.cu (the dev setup's points). CuPy is imported lazily:
importing these modules needs no GPU.
"""
