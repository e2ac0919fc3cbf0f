//===- Progress.h - Training progress on stderr -----------------*- C++ -*-===//
//
// On a terminal, one line redrawn in place at most ~10 times a second:
//
//   epoch 1/3 [########.........]  45% 27008/60000 loss 0.5234 12345/s ETA 0:12
//
// Otherwise (a log file, a pipe) a plain line at every tenth of an epoch:
//
//   epoch 1/3: 10% (6016/60000), loss 0.8123, 12000 samples/s, ETA 0:45
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TOOLS_PROGRESS_H
#define CLEAVE_TOOLS_PROGRESS_H

#include "TrainOptions.h"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace cleave::train {

/// "m:ss" or "h:mm:ss"; "?" for a negative or non-finite duration.
std::string formatDuration(double seconds);

class Progress {
public:
  /// `mode` Auto picks Bar if `out` is a terminal, Lines otherwise.
  Progress(ProgressMode mode, std::FILE *out);
  /// Removes a bar still shown (training stopped by an error).
  ~Progress() { endEpoch(); }
  Progress(const Progress &) = delete;
  Progress &operator=(const Progress &) = delete;

  ProgressMode mode() const { return mode_; }

  /// Starts epoch `epoch` (1-based) of `epochs`, of `total` samples, of which
  /// `done` are already done (a resumed epoch).
  void beginEpoch(int64_t epoch, int64_t epochs, int64_t total, int64_t done);
  /// `done` samples of the epoch are trained; `loss` is their mean loss and
  /// `rate` the samples per second of this process.
  void update(int64_t done, double loss, double rate);
  /// Removes the bar, so that the epoch's result line replaces it.
  void endEpoch();

private:
  void drawBar(int64_t done, double loss, double rate);
  int terminalWidth() const;

  ProgressMode mode_;
  std::FILE *out_;
  int64_t epoch_ = 0, epochs_ = 0, total_ = 0;
  int nextTenth_ = 1;
  bool barShown_ = false;
  std::chrono::steady_clock::time_point lastDraw_;
};

} // namespace cleave::train

#endif // CLEAVE_TOOLS_PROGRESS_H
