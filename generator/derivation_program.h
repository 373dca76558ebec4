// Programs of stages (generator/derivation.h): the index algebra and the
// stage surgery the derivation rules share. Internal to generator/.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "generator/derivation.h"
#include "util/strings.h"

namespace tgr::gen::detail {

using util::cat;

// One affine term (scale 1) first, then the others; constants folded.
expr::Index normalize(const expr::Index& idx);
// `idx` with old iterator x replaced by repl[x]; none when a replacement
// that is not affine lands inside a floordiv or mod.
std::optional<expr::Index> substitute(const expr::Index& idx, const std::vector<expr::Index>& repl);
// The same for every index of `e`; false (e partly rewritten) when one fails.
bool substitute_all(expr::TensorExpr& e, const std::vector<expr::Index>& repl);
// Iterators 0..rank-1 in order.
std::vector<expr::Index> identity(int rank);

// A stage that only moves elements: one term of one factor, no summation, no unary.
bool is_layout(const expr::TensorExpr& e);
// A sum of two or more reads, no summation, no unary (what split-summation adds).
bool is_sum_of_reads(const expr::TensorExpr& e);
bool is_compute(const expr::TensorExpr& e);  // neither
// A stage with a summation: what merging and dropping iterators reshape
// toward a product's form (elementwise stages reshaped save nothing).
bool is_reduction(const expr::TensorExpr& e);
std::vector<expr::Iterator> out_iterators(const expr::TensorExpr& e);

// A stage that adds the given reads (tensor, index) over `out`.
Stage sum_stage(const Program& p, const std::vector<expr::Iterator>& out,
                const std::vector<std::pair<int, std::vector<expr::Index>>>& reads);
// The same as a balanced tree of two-term sums (the table's add); the
// inner sums become new stages of `p`, the top one is returned.
Stage sum_tree(Program& p, const std::vector<expr::Iterator>& out,
               std::vector<std::pair<int, std::vector<expr::Index>>> reads);
// Stages no longer reachable from the output removed; reads renumbered.
void compact(Program& p);
// When `stage` is the output, a layout stage reading it with its present
// axes becomes the output (re-indexed with the other readers afterwards).
void keep_output_axes(Program& p, int stage);
// Every access to `stage` re-indexed by `reindex`; the readers see `shape`.
void reindex_readers(Program& p, int stage, const Shape& shape,
                     const std::function<std::vector<expr::Index>(const std::vector<expr::Index>&)>& reindex);

}  // namespace tgr::gen::detail
