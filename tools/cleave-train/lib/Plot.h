//===- Plot.h - Drawing a metrics file with cleave-plot ---------*- C++ -*-===//
//
// cleave-train --plot hands the metrics file to cleave-plot (a Python script
// on matplotlib, tools/cleave-plot) rather than drawing itself: the trainer
// stays free of a plotting library, and the same script draws the metrics
// of runs that are finished, failed or still going.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TOOLS_PLOT_H
#define CLEAVE_TOOLS_PLOT_H

#include <string>

namespace cleave::train {

/// Environment variable naming the cleave-plot to run; by default the one
/// beside the running executable (build/bin and the install's bin/).
inline constexpr const char *kPlotToolEnv = "CLEAVE_PLOT";

/// Runs `cleave-plot METRICS -o OUTPUT` and waits for it; its messages go to
/// this process's stderr. Throws tools::Error if it cannot be found or run,
/// or fails.
void plotMetrics(const std::string &metricsPath, const std::string &outputPath);

} // namespace cleave::train

#endif // CLEAVE_TOOLS_PLOT_H
