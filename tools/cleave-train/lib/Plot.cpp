//===- Plot.cpp - Drawing a metrics file with cleave-plot -----------------===//

#include "Plot.h"

#include "Error.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

extern char **environ;

namespace cleave::train {

namespace {

std::string findPlotTool() {
  if (const char *tool = std::getenv(kPlotToolEnv); tool && *tool)
    return tool;
  std::error_code ec;
  std::filesystem::path self =
      std::filesystem::read_symlink("/proc/self/exe", ec);
  std::filesystem::path beside = self.parent_path() / "cleave-plot";
  if (ec || ::access(beside.c_str(), X_OK) != 0)
    throw tools::Error("--plot: cannot find cleave-plot beside " +
                       (ec ? std::string("this program") : self.string()) +
                       " (set " + kPlotToolEnv + " to its path)");
  return beside.string();
}

} // namespace

void plotMetrics(const std::string &metricsPath,
                 const std::string &outputPath) {
  const std::string tool = findPlotTool();
  std::vector<std::string> args = {tool, metricsPath, "-o", outputPath};
  std::vector<char *> argv;
  for (std::string &a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (int err = ::posix_spawn(&pid, tool.c_str(), nullptr, nullptr, argv.data(),
                              environ))
    throw tools::Error("--plot: cannot run " + tool + " (" +
                       std::strerror(err) + ")");
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      throw tools::Error("--plot: cannot wait for " + tool + " (" +
                         std::strerror(errno) + ")");
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
    return;
  throw tools::Error(
      "--plot: " + tool + " failed to draw " + outputPath + " (" +
      (WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                         : "signal " + std::to_string(WTERMSIG(status))) +
      "; its message is above)");
}

} // namespace cleave::train
