// gather and gather_elements (negative indices count from the end; an index
// out of range reads 0, where the CPU reference raises an error).
#include "runtime/cuda/dependent_launch.cuh"
#include "runtime/cuda/launch_util.cuh"

namespace tgr::gpu {
namespace {

__device__ inline int64_t wrap(int64_t index, int64_t size) { return index < 0 ? index + size : index; }

template <class T>
__global__ void gather_kernel(const T* data, const int64_t* indices, T* out, int64_t outer, int64_t axis_size,
                              int64_t count, int64_t inner) {
  await_previous_grid();
  TGR_GRID_STRIDE(i, outer * count * inner) {
    const int64_t in = i % inner, k = i / inner % count, o = i / (inner * count);
    const int64_t j = wrap(indices[k], axis_size);
    out[i] = (j >= 0 && j < axis_size) ? data[(o * axis_size + j) * inner + in] : T(0);
  }
}

template <class T>
__global__ void gather_elements_kernel(const T* data, Dims data_dims, const int64_t* indices, Dims index_dims, int axis,
                                       T* out) {
  await_previous_grid();
  TGR_GRID_STRIDE(i, index_dims.count()) {
    int64_t rest = i, offset = 0, stride = 1;
    bool ok = true;
    for (int d = index_dims.rank - 1; d >= 0; --d) {
      int64_t c = rest % index_dims.size[d];
      rest /= index_dims.size[d];
      if (d == axis) {
        c = wrap(indices[i], data_dims.size[d]);
        ok = ok && c >= 0 && c < data_dims.size[d];
      }
      offset += c * stride;
      stride *= data_dims.size[d];
    }
    out[i] = ok ? data[offset] : T(0);
  }
}

}  // namespace

void launch_gather(const void* data, const int64_t* indices, void* out, int64_t outer, int64_t axis_size,
                   int64_t count, int64_t inner, int elem_bytes, cudaStream_t stream) {
  const unsigned grid = grid_for(outer * count * inner);
  if (elem_bytes == 2)
    launch_kernel(gather_kernel<uint16_t>, grid, kBlock, 0, stream, static_cast<const uint16_t*>(data), indices,
                  static_cast<uint16_t*>(out), outer, axis_size, count, inner);
  else if (elem_bytes == 4)
    launch_kernel(gather_kernel<float>, grid, kBlock, 0, stream, static_cast<const float*>(data), indices,
                  static_cast<float*>(out), outer, axis_size, count, inner);
  else
    launch_kernel(gather_kernel<int64_t>, grid, kBlock, 0, stream, static_cast<const int64_t*>(data), indices,
                  static_cast<int64_t*>(out), outer, axis_size, count, inner);
}

void launch_gather_elements(const void* data, const Dims& data_dims, const int64_t* indices, const Dims& index_dims,
                            int axis, void* out, int elem_bytes, cudaStream_t stream) {
  const unsigned grid = grid_for(index_dims.count());
  if (elem_bytes == 2)
    launch_kernel(gather_elements_kernel<uint16_t>, grid, kBlock, 0, stream, static_cast<const uint16_t*>(data),
                  data_dims, indices, index_dims, axis, static_cast<uint16_t*>(out));
  else if (elem_bytes == 4)
    launch_kernel(gather_elements_kernel<float>, grid, kBlock, 0, stream, static_cast<const float*>(data), data_dims,
                  indices, index_dims, axis, static_cast<float*>(out));
  else
    launch_kernel(gather_elements_kernel<int64_t>, grid, kBlock, 0, stream, static_cast<const int64_t*>(data),
                  data_dims, indices, index_dims, axis, static_cast<int64_t*>(out));
}

}  // namespace tgr::gpu
