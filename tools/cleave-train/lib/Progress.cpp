//===- Progress.cpp - Training progress on stderr -------------------------===//

#include "Progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>

namespace cleave::train {

namespace {

/// Redraws of the bar are at least this far apart.
constexpr std::chrono::milliseconds kBarInterval(100);

std::string format(const char *fmt, double a) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, a);
  return buf;
}

} // namespace

std::string formatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0)
    return "?";
  long long s = std::llround(seconds);
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof(buf), "%lld:%02lld:%02lld", s / 3600, s / 60 % 60,
                  s % 60);
  else
    std::snprintf(buf, sizeof(buf), "%lld:%02lld", s / 60, s % 60);
  return buf;
}

Progress::Progress(ProgressMode mode, std::FILE *out) : mode_(mode), out_(out) {
  if (mode_ == ProgressMode::Auto)
    mode_ = ::isatty(::fileno(out_)) ? ProgressMode::Bar : ProgressMode::Lines;
}

int Progress::terminalWidth() const {
  struct winsize ws;
  if (::ioctl(::fileno(out_), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
    return ws.ws_col;
  return 80;
}

void Progress::beginEpoch(int64_t epoch, int64_t epochs, int64_t total,
                          int64_t done) {
  epoch_ = epoch;
  epochs_ = epochs;
  total_ = std::max<int64_t>(total, 1);
  // Tenths already passed (a resumed epoch) are not reported again.
  nextTenth_ = int(done * 10 / total_) + 1;
  lastDraw_ = {};
}

void Progress::update(int64_t done, double loss, double rate) {
  if (mode_ == ProgressMode::Bar) {
    auto now = std::chrono::steady_clock::now();
    if (now - lastDraw_ < kBarInterval && done < total_)
      return;
    lastDraw_ = now;
    drawBar(done, loss, rate);
    return;
  }
  if (mode_ != ProgressMode::Lines || done * 10 < nextTenth_ * total_)
    return;
  int tenth = int(done * 10 / total_);
  nextTenth_ = tenth + 1;
  if (tenth >= 10)
    return; // The epoch's result line follows.
  double eta = rate > 0 ? double(total_ - done) / rate : NAN;
  std::fprintf(out_,
               "epoch %lld/%lld: %d%% (%lld/%lld), loss %.4f, %.0f samples/s, "
               "ETA %s\n",
               (long long)epoch_, (long long)epochs_, tenth * 10,
               (long long)done, (long long)total_, loss, rate,
               formatDuration(eta).c_str());
  std::fflush(out_);
}

void Progress::drawBar(int64_t done, double loss, double rate) {
  double eta = rate > 0 ? double(total_ - done) / rate : NAN;
  std::string head =
      "epoch " + std::to_string(epoch_) + "/" + std::to_string(epochs_) + " ";
  std::string tail = format(" %3.0f%% ", 100.0 * double(done) / total_) +
                     std::to_string(done) + "/" + std::to_string(total_) +
                     format(" loss %.4f", loss) + format(" %.0f/s", rate) +
                     " ETA " + formatDuration(eta);
  // Leave the last column free: some terminals wrap when it is written.
  int width = terminalWidth() - 1;
  int barWidth = width - int(head.size() + tail.size()) - 2;
  std::string line = head;
  if (barWidth >= 10) {
    int filled = int(int64_t(barWidth) * done / total_);
    line += "[" + std::string(size_t(filled), '#') +
            std::string(size_t(barWidth - filled), '.') + "]";
  }
  line += tail;
  if (int(line.size()) > width)
    line.resize(size_t(std::max(width, 0)));
  // \r and erase-to-end-of-line: redraw in place.
  std::fprintf(out_, "\r%s\x1b[K", line.c_str());
  std::fflush(out_);
  barShown_ = true;
}

void Progress::endEpoch() {
  if (barShown_) {
    std::fputs("\r\x1b[K", out_);
    std::fflush(out_);
    barShown_ = false;
  }
}

} // namespace cleave::train
