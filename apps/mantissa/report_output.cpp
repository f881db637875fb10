// Writing the precision report of run directories to an HTML file (report_output.hpp).
#include "report_output.hpp"

#include <filesystem>
#include <fstream>

#include "mantissa/error.hpp"
#include "mantissa/train/metrics.hpp"

namespace mantissa::app {

void write_report(const std::vector<std::string>& run_dirs, const std::string& out,
                  const train::ReportOptions& options) {
  std::vector<train::RunLog> logs;
  for (const std::string& dir : run_dirs) logs.push_back(train::read_run_log(dir));
  const std::string page = train::render_report(logs, options);
  namespace fs = std::filesystem;
  const fs::path path(out);
  std::error_code ec;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  const fs::path temporary = path.string() + ".tmp";
  {
    std::ofstream f(temporary, std::ios::binary | std::ios::trunc);
    f << page;
    if (!f) throw Error(out + ": cannot write the report");
  }
  fs::rename(temporary, path, ec);
  if (ec) throw Error(out + ": cannot write the report (" + ec.message() + ")");
}

}  // namespace mantissa::app
