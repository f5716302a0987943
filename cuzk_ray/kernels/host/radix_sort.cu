// Radix sort of 64-bit keys on a range of bits only, by CUB's DeviceRadixSort (the CUDA
// toolkit's library), as a host-callable shared library: cuda/sort.py loads it with ctypes
// and passes CuPy's device pointers and stream. Built by `python -m cuzk_ray.kernels.build`
// (nvcc -shared; NVRTC cannot build host code), so it is optional: without it cuda/sort.py
// falls back to CuPy's sort of all 64 bits.
//
// Why: the MSM's digit entries are (bucket key << 32 | point), and only the key's bits need
// sorting (a bucket's points may come in any order). CuPy's sort orders all 64 bits, 8 passes
// of 8 bits over the 2^27 x 13 entries of a 2^27 MSM (98 ms); the key is ~23 bits, 3 passes.
// Cost: ceil((end_bit - begin_bit) / 8) passes (CUB's onesweep: one read + one write of the
// keys each, plus one histogram pass), and n more 8-byte words of device memory (the double
// buffer) and a small temporary.
#include <cstdint>
#include <cub/device/device_radix_sort.cuh>

extern "C" {

// Bytes of CUB temporary storage for n keys on bits [begin_bit, end_bit). Returns a cudaError_t.
int cuzk_sort_temp_bytes(uint64_t n, int begin_bit, int end_bit, size_t* bytes) {
    cub::DoubleBuffer<unsigned long long> buf(nullptr, nullptr);
    *bytes = 0;
    return (int)cub::DeviceRadixSort::SortKeys(nullptr, *bytes, buf, (int64_t)n, begin_bit, end_bit);
}

// Sorts keys[0..n) (by bits [begin_bit, end_bit); the other bits ride along, in no particular
// order within equal ranges) using alt[0..n) as the second buffer, on `stream` of `device`.
// *selector = 0: the result is in keys; 1: in alt. Returns a cudaError_t.
int cuzk_sort_keys(int device, void* temp, size_t temp_bytes, unsigned long long* keys, unsigned long long* alt,
                   uint64_t n, int begin_bit, int end_bit, void* stream, int* selector) {
    cudaError_t err = cudaSetDevice(device);
    if (err != cudaSuccess) return (int)err;
    cub::DoubleBuffer<unsigned long long> buf(keys, alt);
    err = cub::DeviceRadixSort::SortKeys(temp, temp_bytes, buf, (int64_t)n, begin_bit, end_bit,
                                         (cudaStream_t)stream);
    *selector = buf.selector;
    return (int)err;
}

// The CUDA runtime's text for an error code (for the Python side's one-line error).
const char* cuzk_sort_error(int err) { return cudaGetErrorString((cudaError_t)err); }
}
