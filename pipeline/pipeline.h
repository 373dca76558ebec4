// The flow a model goes through (README.md, "Optimizing a model"), above
// both searches. Each step is a function of pipeline.cpp, in this order:
//
//   resolve   every default from the target and the installation (pipeline/defaults.h)
//   import    the rules (read first: a missing database is the cheapest error
//             to report), the model (with --convert-to converted to a half
//             type, optimizer/convert_precision.h), and the rule directions
//             that can ever match it
//   search    the search asked for (pipeline/search.h), with rules whose every
//             application is proved at the model's shapes; saturation's
//             extraction is part of it
//   decide    the best graph or the model as it came: by prediction
//             (OptimizeOptions::min_gain), then by measurement in the
//             target's runtime (OptimizeOptions::measure,
//             optimizer/measured_check.h)
//   export    weights folded, the model written (or copied when unchanged)
//   report    costs, rules applied, one-node models of unmeasured signatures
//
// The `optimize` tool (tools/optimize.cpp) and the Python package
// (python/bindings.cpp) are this plus argument parsing through one option
// table (pipeline/option_table.h); other programs call it the same way.
#pragma once

#include "pipeline/options.h"
#include "pipeline/report.h"

namespace tgr::pipeline {

// Reads options.model, writes options.output; throws on any error (missing
// rules database, a model the importer rejects, a file it cannot write).
OptimizeReport optimize_model(const OptimizeOptions& options);

}  // namespace tgr::pipeline
