// The report drawn from hostile metrics files (the tenth audit, fuzz_metrics): strings with
// control bytes and paths that are not UTF-8 make a page that is still well-formed UTF-8
// without control characters, and numbers at the ends of a double's range draw no NaN pixels.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "mantissa/report/metrics.hpp"
#include "mantissa/report/report.hpp"

namespace mantissa::report {
namespace {

std::string run_line(const std::string& model, const std::string& cpu) {
  return R"({"run":{"format":"float32","loss_scaling":"none","model":")" + model +
         R"(","parameters":10,"unit":"tokens","items_per_step":4,"start_step":0,"max_steps":4,)"
         R"("seed":1,"cpu":")" +
         cpu + R"(","settings":[["k\u0007","v\u001b]0;title\u0007"]]}})" + "\n";
}

std::string window(int step, const std::string& loss, const std::string& rate = "10.0") {
  return R"({"step":)" + std::to_string(step) + R"(,"loss":)" + loss +
         R"(,"lr":0.1,"skipped_steps":0,"grad_norm":1.0,"tokens_per_s":)" + rate + "}\n";
}

// The length of the UTF-8 sequence a byte starts; 0 for a byte that starts none.
std::size_t sequence_length(unsigned char b) {
  if (b < 0x80) return 1;
  if (b >= 0xc2 && b <= 0xdf) return 2;
  if (b >= 0xe0 && b <= 0xef) return 3;
  if (b >= 0xf0 && b <= 0xf4) return 4;
  return 0;
}

// The bytes of the page that a browser's HTML parser reports: control characters but tab
// and newline (C1's U+0080..U+009F included: C2 80..C2 9F), and every byte that does not
// start a sequence or whose sequence is cut short.
std::string refused_bytes(const std::string& page) {
  std::string out;
  for (std::size_t i = 0; i < page.size();) {
    const auto b = static_cast<unsigned char>(page[i]);
    const std::size_t n = sequence_length(b);
    bool ok = n > 0 && i + n <= page.size();
    for (std::size_t k = 1; ok && k < n; ++k)
      ok = (static_cast<unsigned char>(page[i + k]) & 0xc0) == 0x80;
    const bool control = (b < 0x20 && b != '\t' && b != '\n') || b == 0x7f ||
                         (ok && b == 0xc2 && static_cast<unsigned char>(page[i + 1]) < 0xa0);
    if (!ok || control) out += page.substr(i, 1);
    i += ok ? n : 1;
  }
  return out;
}

TEST(ReportHostile, ControlBytesAndPathsThatAreNotUtf8AreShownAsBytes) {
  const std::string text =
      run_line("gpt\\u0000<b>", "CPU \\u0085 \\u001b[31m") + window(2, "2.0") + window(4, "1.0") +
      R"({"end":4,"outcome":"error","skipped_steps":0,"signal":"","checkpoint":"","message":"bad\r\nline\u0000"})" +
      "\n";
  const RunLog log = parse_metrics(text, "runs/\xff\xfe/metrics.jsonl");
  const std::string page = render_report({log});
  EXPECT_EQ(refused_bytes(page), "");
  EXPECT_NE(page.find("gpt\\x00&lt;b&gt;, 10 parameters"), std::string::npos);
  EXPECT_NE(page.find("on CPU \\xc2\\x85 \\x1b[31m"), std::string::npos);
  EXPECT_NE(page.find("bad\\x0d\nline\\x00"), std::string::npos);
  EXPECT_NE(page.find("<code>runs/\\xff\\xfe/metrics.jsonl</code>"), std::string::npos);
  EXPECT_NE(page.find("v\\x1b]0;title\\x07"), std::string::npos);
}

TEST(ReportHostile, NumbersAtTheEndsOfTheRangeDrawNoNanPixels) {
  const std::string text = run_line("gpt", "CPU") + window(1, "1e308", "1e300") +
                           window(2, "-1.7976931348623157e308", "5e-324") + window(3, "2.0") +
                           window(4, "3.0");
  const std::string page = render_report({parse_metrics(text, "runs/x/metrics.jsonl")});
  const std::size_t loss = page.find("<svg id=\"chart-loss\"");
  ASSERT_NE(loss, std::string::npos);
  const std::string chart = page.substr(loss, page.find("</svg>", loss) - loss);
  // Steps 3 and 4 only, on an x axis from 0 to 4 (every step's x counts) and a y axis from 2
  // to 3: (3, 2.0) at (72 + 3 / 4 * 490, 290), (4, 3.0) at (562, 72).
  EXPECT_NE(chart.find("data-points=\"2\"><path d=\"M439.5 290.0L562.0 72.0\""), std::string::npos)
      << chart;
  // No path, point or box anywhere on the page at a coordinate that is not a number.
  for (const char* attribute : {" d=\"", " x=\"", " y=\"", " cx=\"", " cy=\"", " width=\""}) {
    for (std::size_t at = page.find(attribute); at != std::string::npos;
         at = page.find(attribute, at + 1)) {
      const std::size_t from = at + std::string(attribute).size();
      const std::string value = page.substr(from, page.find('"', from) - from);
      EXPECT_EQ(value.find("nan"), std::string::npos) << attribute << value;
      EXPECT_EQ(value.find("inf"), std::string::npos) << attribute << value;
    }
  }
}

// The tenth audit (fuzz_metrics, finding-huge-rate): a rate past 2^63 tokens/s was rounded
// to a long long (llround's -2^63) and grouped by negating it, which overflowed. Rates past
// 10^15 are written in exponent form.
TEST(ReportHostile, RatesPastALongLongAreWrittenInExponentForm) {
  const std::string text = run_line("gpt", "CPU") + window(1, "2.0", "10.0") +
                           window(2, "2.0", "9.3e18") + window(3, "2.0", "9.3e18");
  const std::string page = render_report({parse_metrics(text, "runs/x/metrics.jsonl")});
  EXPECT_NE(page.find("<td>9.3e+18 tokens/s &dagger;</td>"), std::string::npos);
  EXPECT_EQ(page.find("-9,223,372,036,854,775,808"), std::string::npos);
}

// The tenth audit (by hand): a metrics file of 4,000 sampled steps, each with a site of its
// own (0.8 MB), made maps of 4,000 x 4,000 cells: 130 s, 20 GB of memory, a page of 6.8 GB.
// The maps draw 60 sampled steps, evenly spaced from the first to the last, and the first 400
// sites, and say so.
TEST(ReportHostile, ManySampledStepsAndSitesMakeBoundedMaps) {
  std::string text = run_line("gpt", "CPU");
  for (int step = 1; step <= 1000; ++step) {
    text += R"({"precision_stats":)" + std::to_string(step) + R"(,"sites":[{"layer":"l)" +
            std::to_string(step) +
            R"(","op":"matmul","role":"input","format":"float16","elements":10,"flushed":1,)"
            R"("subnormal":0,"saturated":0,"overflowed":0,"nonfinite":0,"snr_db":50.0}]})" +
            "\n";
  }
  const std::string page = render_report({parse_metrics(text, "runs/x/metrics.jsonl")});
  EXPECT_NE(page.find("The maps draw 60 of the 1000 sampled steps, evenly spaced from the first "
                      "to the last."),
            std::string::npos);
  EXPECT_NE(page.find("The maps draw the first 400 of the 1000 rounding sites; the table below "
                      "lists the sites that lose most."),
            std::string::npos);
  EXPECT_LT(page.size(), 20000000u);
  // The first map's columns: 60 steps from 1 to 1000, 999 / 59 (16.9) apart.
  const std::size_t map = page.find("<svg id=\"heat-snr-0\"");
  ASSERT_NE(map, std::string::npos);
  const std::string row =
      page.substr(map, page.find("</g>", page.find("class=\"heat-row\"", map)) - map);
  std::vector<int> steps;
  const std::string attribute = "data-column=\"";
  for (std::size_t at = row.find(attribute); at != std::string::npos;
       at = row.find(attribute, at + 1)) {
    steps.push_back(std::stoi(row.substr(at + attribute.size())));
  }
  ASSERT_EQ(steps.size(), 60u);
  EXPECT_EQ(steps.front(), 1);
  EXPECT_EQ(steps.back(), 1000);
  for (std::size_t k = 1; k < steps.size(); ++k) {
    EXPECT_GE(steps[k] - steps[k - 1], 16) << k;
    EXPECT_LE(steps[k] - steps[k - 1], 17) << k;
  }
  std::size_t rows = 0;
  for (std::size_t at = page.find("class=\"heat-row\""); at != std::string::npos;
       at = page.find("class=\"heat-row\"", at + 1)) {
    ++rows;
  }
  EXPECT_EQ(rows, 2u * 400);  // two maps
}

// The tenth audit (by hand, then kept in fuzz_metrics' corpus: finding-start-at-the-last-step):
// a run record resuming at step 2^63 - 1 after a window at step 5 made the question "was every
// step logged?" compute 2^63 - 1 + 1, which overflowed. The window is kept (it came before that
// start) and is the curve's one point.
TEST(ReportHostile, ARunResumedAtTheLastStepIsDrawn) {
  std::string resumed = run_line("gpt", "CPU");
  resumed.replace(resumed.find("\"start_step\":0,\"max_steps\":4"), 28,
                  "\"start_step\":9223372036854775807,\"max_steps\":9223372036854775807");
  const std::string text = run_line("gpt", "CPU") + window(5, "2.0") + resumed;
  const RunLog log = parse_metrics(text, "runs/x/metrics.jsonl");
  ASSERT_EQ(log.windows.size(), 1u);
  const std::string page = render_report({log});
  EXPECT_NE(page.find("A curve here has only 1 logged point"), std::string::npos);
}

}  // namespace
}  // namespace mantissa::report
