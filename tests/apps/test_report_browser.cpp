// The report in a real browser: Debian's chromium, headless, opens the report `mantissa
// compare` wrote for the tiny GPT in four formats (the cli.compare_tiny_gpt fixture), takes a
// screenshot and dumps the DOM it parsed. The page must have rendered (a screenshot of the
// requested size, mostly not blank, each run's colour on it) and its charts must hold every
// run's series. Without chromium the program prints a SKIP line and exits 77, which ctest
// reports as skipped (SKIP_RETURN_CODE).
//   usage: report_browser_test REPORT.html
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

std::string g_report;    // absolute path of the report
std::string g_chromium;  // the browser found on PATH

constexpr int kWidth = 1240, kHeight = 2400;

std::string find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const fs::path candidate = fs::path(dir) / name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return "";
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs chromium headless on the report with extra arguments; its chatter goes to a log.
int chromium(const fs::path& work, const std::string& args, const std::string& stdout_to) {
  const std::string command = "'" + g_chromium +
                              "' --headless --no-sandbox --disable-gpu --hide-scrollbars "
                              "--no-first-run --user-data-dir='" +
                              (work / "profile").string() + "' " + args + " 'file://" + g_report +
                              "' > '" + stdout_to + "' 2>> '" + (work / "chromium.log").string() +
                              "'";
  return std::system(command.c_str());
}

struct Image {
  int width = 0, height = 0, channels = 0;
  std::vector<std::uint8_t> pixels;  // rows of width * channels bytes
};

std::uint32_t big_endian(const std::string& s, std::size_t at) {
  return (std::uint32_t(std::uint8_t(s[at])) << 24) |
         (std::uint32_t(std::uint8_t(s[at + 1])) << 16) |
         (std::uint32_t(std::uint8_t(s[at + 2])) << 8) | std::uint32_t(std::uint8_t(s[at + 3]));
}

int paeth(int a, int b, int c) {
  const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
  return pa <= pb && pa <= pc ? a : (pb <= pc ? b : c);
}

// An 8-bit RGB or RGBA, non-interlaced PNG (what chromium writes), decoded by the PNG
// specification: the IDAT stream inflated, each row unfiltered.
Image decode_png(const std::string& file) {
  Image img;
  if (file.size() < 8 || file.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0) return img;
  std::string idat;
  int depth = 0, colour = 0, interlace = 0;
  for (std::size_t at = 8; at + 8 <= file.size();) {
    const std::uint32_t length = big_endian(file, at);
    const std::string type = file.substr(at + 4, 4);
    if (type == "IHDR") {
      img.width = static_cast<int>(big_endian(file, at + 8));
      img.height = static_cast<int>(big_endian(file, at + 12));
      depth = std::uint8_t(file[at + 16]);
      colour = std::uint8_t(file[at + 17]);
      interlace = std::uint8_t(file[at + 20]);
    } else if (type == "IDAT") {
      idat += file.substr(at + 8, length);
    }
    at += 12 + length;
  }
  if (depth != 8 || (colour != 2 && colour != 6) || interlace != 0) return Image{};
  img.channels = colour == 6 ? 4 : 3;
  const std::size_t stride = static_cast<std::size_t>(img.width) * img.channels;
  std::vector<std::uint8_t> raw((stride + 1) * img.height);
  uLongf size = raw.size();
  if (uncompress(raw.data(), &size, reinterpret_cast<const Bytef*>(idat.data()), idat.size()) !=
          Z_OK ||
      size != raw.size()) {
    return Image{};
  }
  img.pixels.resize(stride * img.height);
  for (int y = 0; y < img.height; ++y) {
    const std::uint8_t filter = raw[y * (stride + 1)];
    const std::uint8_t* in = &raw[y * (stride + 1) + 1];
    std::uint8_t* out = &img.pixels[y * stride];
    const std::uint8_t* up = y > 0 ? out - stride : nullptr;
    for (std::size_t i = 0; i < stride; ++i) {
      const int a = i >= static_cast<std::size_t>(img.channels) ? out[i - img.channels] : 0;
      const int b = up ? up[i] : 0;
      const int c = up && i >= static_cast<std::size_t>(img.channels) ? up[i - img.channels] : 0;
      const int predictor = filter == 1   ? a
                            : filter == 2 ? b
                            : filter == 3 ? (a + b) / 2
                            : filter == 4 ? paeth(a, b, c)
                                          : 0;
      out[i] = static_cast<std::uint8_t>(in[i] + predictor);
    }
  }
  return img;
}

class ReportInBrowser : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    work_ = fs::temp_directory_path() / ("mantissa_browser_" + std::to_string(::getpid()));
    fs::remove_all(work_);
    fs::create_directories(work_);
  }
  static void TearDownTestSuite() { fs::remove_all(work_); }
  static fs::path work_;
};
fs::path ReportInBrowser::work_;

TEST_F(ReportInBrowser, TheScreenshotShowsThePage) {
  const fs::path shot = work_ / "report.png";
  ASSERT_EQ(chromium(work_,
                     "--window-size=" + std::to_string(kWidth) + "," + std::to_string(kHeight) +
                         " --screenshot='" + shot.string() + "'",
                     (work_ / "screenshot.out").string()),
            0)
      << read_file(work_ / "chromium.log");
  const Image img = decode_png(read_file(shot));
  ASSERT_EQ(img.width, kWidth) << "not a PNG chromium wrote";
  ASSERT_EQ(img.height, kHeight);
  // Count the pixels of each run's colour (report_runs.cpp's palette: float32 black, then
  // blue, vermilion, orange) and those that are not white.
  const std::vector<std::array<int, 3>> colours = {
      {0x00, 0x00, 0x00}, {0x00, 0x72, 0xB2}, {0xD5, 0x5E, 0x00}, {0xE6, 0x9F, 0x00}};
  std::vector<long> found(colours.size(), 0);
  long inked = 0;
  for (std::size_t p = 0; p < img.pixels.size(); p += img.channels) {
    const int r = img.pixels[p], g = img.pixels[p + 1], b = img.pixels[p + 2];
    inked += r < 250 || g < 250 || b < 250;
    for (std::size_t k = 0; k < colours.size(); ++k)
      found[k] += r == colours[k][0] && g == colours[k][1] && b == colours[k][2];
  }
  const long total = static_cast<long>(kWidth) * kHeight;
  EXPECT_GT(inked, total / 20) << "the page is (nearly) blank";
  EXPECT_LT(inked, total / 2) << "the page is mostly ink: not the report";
  for (std::size_t k = 0; k < colours.size(); ++k)
    EXPECT_GT(found[k], 500) << "run " << k << "'s colour barely appears";
}

TEST_F(ReportInBrowser, TheChartsHoldEverySeries) {
  const fs::path dom_file = work_ / "dom.html";
  ASSERT_EQ(chromium(work_, "--dump-dom", dom_file.string()), 0)
      << read_file(work_ / "chromium.log");
  const std::string dom = read_file(dom_file);
  ASSERT_NE(dom.find("<h1>mantissa precision report</h1>"), std::string::npos)
      << dom.substr(0, 500);
  auto chart = [&](const std::string& id) {
    const std::size_t start = dom.find("<svg id=\"" + id + "\"");
    return start == std::string::npos ? std::string()
                                      : dom.substr(start, dom.find("</svg>", start) - start);
  };
  auto has = [](const std::string& svg, const std::string& run, const std::string& kind) {
    const std::string head =
        "<g class=\"series\" data-run=\"" + run + "\" data-kind=\"" + kind + "\" data-points=\"";
    const std::size_t at = svg.find(head);
    return at != std::string::npos && svg.compare(at + head.size(), 2, "0\"") != 0;
  };
  for (const std::string f : {"float32", "bfloat16", "float16", "cbfloat16"}) {
    EXPECT_TRUE(has(chart("chart-loss"), f, "training")) << f;
    EXPECT_TRUE(has(chart("chart-loss"), f, "validation")) << f;
    EXPECT_TRUE(has(chart("chart-grad-norm"), f, "training")) << f;
    EXPECT_TRUE(has(chart("chart-learning-rate"), f, "training")) << f;
    EXPECT_NE(chart("chart-throughput").find("<g class=\"bar\" data-run=\"" + f + "\""),
              std::string::npos);
    EXPECT_NE(chart("chart-memory").find("<g class=\"bar\" data-run=\"" + f + "\""),
              std::string::npos);
    if (f != "float32") {
      EXPECT_TRUE(has(chart("chart-difference"), f, "training")) << f;
    }
  }
  // The tiny config scales the loss dynamically: float16 and cbfloat16 have a scaler;
  // float32 (mixed precision off) and bfloat16 have none.
  EXPECT_TRUE(has(chart("chart-loss-scale"), "float16", "loss scale"));
  EXPECT_TRUE(has(chart("chart-loss-scale"), "cbfloat16", "loss scale"));
  EXPECT_EQ(chart("chart-loss-scale").find("data-run=\"bfloat16\""), std::string::npos);
  for (const std::string table : {"final-metrics", "settings", "formats"})
    EXPECT_NE(dom.find("id=\"" + table + "\""), std::string::npos) << table;
  // Which layer loses what (the fixture samples every 2 steps): a heat map pair per run that
  // rounds, a row per rounding site, cells for the sampled steps 1, 2, 4 and 6; float32 rounds
  // nothing and has none.
  EXPECT_NE(dom.find("Nothing was rounded on the sampled steps (a float32 run)."),
            std::string::npos);
  for (int run = 1; run <= 3; ++run) {
    for (const std::string map : {"heat-snr-", "heat-flushed-"}) {
      const std::string svg = chart(map + std::to_string(run));
      ASSERT_FALSE(svg.empty()) << map << run;
      EXPECT_NE(svg.find("<g class=\"heat-row\" data-row=\"blocks.0.attn.qkv \u00b7 linear \u00b7 "
                         "weight\">"),
                std::string::npos)
          << map << run;
      for (const std::string step : {"1", "2", "4", "6"})
        EXPECT_NE(svg.find("data-column=\"" + step + "\""), std::string::npos) << step;
    }
    EXPECT_NE(dom.find("id=\"sites-" + std::to_string(run) + "\""), std::string::npos);
  }
  // The settings table has a row per precision key, the scaler's options among them.
  for (const std::string key : {"fp16_type", "matmul_route", "loss_scaling_factor", "growth_factor",
                                "backoff_factor", "hysteresis", "on_stuck"})
    EXPECT_NE(dom.find("<tr><td>" + key + "</td>"), std::string::npos) << key;
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s REPORT.html\n", argv[0]);
    return 2;
  }
  g_report = fs::absolute(argv[1]).string();
  g_chromium = find_on_path("chromium");
  if (g_chromium.empty()) {
    std::printf(
        "SKIP: chromium is not installed, so the report was not opened in a browser "
        "(scripts/install-deps.sh installs it: apt-get install chromium)\n");
    return 77;
  }
  if (!fs::exists(g_report)) {
    std::fprintf(stderr, "%s: no report (the cli.compare_tiny_gpt fixture writes it)\n", argv[1]);
    return 1;
  }
  return RUN_ALL_TESTS();
}
