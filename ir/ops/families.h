// Each file in ir/ops/ defines one family of operators and registers it here.
#pragma once

namespace tgr {
class OpTable;
void register_elementwise_ops(OpTable& table);    // elementwise.cpp
void register_linear_algebra_ops(OpTable& table);  // matmul.cpp
void register_convolution_ops(OpTable& table);     // conv.cpp
void register_pooling_ops(OpTable& table);         // pool.cpp
void register_layout_ops(OpTable& table);          // layout.cpp
void register_constant_ops(OpTable& table);        // constants.cpp
void register_comparison_ops(OpTable& table);      // compare.cpp
void register_normalization_ops(OpTable& table);   // normalization.cpp
void register_reduction_ops(OpTable& table);       // reduce.cpp
void register_indexing_ops(OpTable& table);        // indexing.cpp
}  // namespace tgr
