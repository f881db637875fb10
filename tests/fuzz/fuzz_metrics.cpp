// libFuzzer harness: the metrics reader and the precision report drawn from what it reads.
// The input is metrics.jsonl text, optionally followed by a line "%%" and throughput.jsonl
// text (the interleaved throughput `mantissa compare` writes). The metrics go through
// report::parse_metrics and, when they parse, into report::render_report (the run alone, with
// its throughput when that parses, and twice over, so that the differences from a reference
// run are drawn); the whole input also goes through report::parse_throughput. Every input
// must end in a result or a mantissa::Error; anything else (a crash, a sanitizer report,
// another exception) is a finding, and so is a page that is not well-formed UTF-8 or holds a
// control character other than a tab or a newline or a noncharacter (the page declares
// UTF-8; an HTML parser reports the others), or an SVG coordinate that is not a number.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mantissa/error.hpp"
#include "mantissa/report/metrics.hpp"
#include "mantissa/report/report.hpp"
#include "mantissa/utf8_text.hpp"

namespace {

// Attributes whose values are numbers or lists of numbers in the report's SVG.
constexpr std::string_view kNumericAttributes[] = {
    " x=\"",  " y=\"", " x1=\"",    " x2=\"",     " y1=\"",     " y2=\"", " cx=\"",
    " cy=\"", " r=\"", " width=\"", " height=\"", " points=\"", " d=\""};

bool page_is_sound(const std::string& page) {
  // Well-formed UTF-8 without control characters (C0 but tab and newline, DEL, C1) or
  // noncharacters, which an HTML parser reports.
  for (std::size_t i = 0; i < page.size();) {
    const std::optional<mantissa::CodePoint> c = mantissa::code_point_at(page, i);
    if (!c) return false;
    const std::uint32_t v = c->value;
    if ((v < 0x20 && v != '\n' && v != '\t') || (v >= 0x7f && v <= 0x9f) ||
        (v >= 0xfdd0 && v <= 0xfdef) || (v & 0xfffe) == 0xfffe) {
      return false;
    }
    i += c->bytes;
  }
  for (std::string_view attribute : kNumericAttributes) {
    for (std::size_t at = page.find(attribute); at != std::string::npos;
         at = page.find(attribute, at + 1)) {
      const std::size_t from = at + attribute.size();
      const std::string_view value =
          std::string_view(page).substr(from, page.find('"', from) - from);
      if (value.find("nan") != std::string_view::npos ||
          value.find("inf") != std::string_view::npos) {
        return false;
      }
    }
  }
  return true;
}

void render(const std::vector<mantissa::report::RunLog>& logs,
            const mantissa::report::ReportOptions& options) {
  try {
    if (!page_is_sound(mantissa::report::render_report(logs, options))) __builtin_trap();
  } catch (const mantissa::Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::size_t cut = input.find("\n%%\n");
  const std::string_view metrics = input.substr(0, cut);
  try {
    mantissa::report::parse_throughput(input, "fuzz-throughput.jsonl");
  } catch (const mantissa::Error&) {
  }
  mantissa::report::RunLog log;
  try {
    log = mantissa::report::parse_metrics(metrics, "fuzz/metrics.jsonl");
  } catch (const mantissa::Error&) {
    return 0;
  }
  mantissa::report::ReportOptions options;
  if (cut != std::string_view::npos) {
    try {
      options.throughput =
          mantissa::report::parse_throughput(input.substr(cut + 4), "fuzz/throughput.jsonl");
    } catch (const mantissa::Error&) {
    }
  }
  render({log}, options);
  mantissa::report::RunLog again = log;  // the same run from another directory
  again.source = "fuzz-again/metrics.jsonl";
  render({log, again}, {});
  return 0;
}
