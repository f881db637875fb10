#include <fmt/format.h>

#include <string>
#include <utility>
#include <vector>

#include "commands.hpp"
#include "mantissa/error.hpp"
#include "mantissa/kernels/gemm_route.hpp"
#include "mantissa/numerics/cpu_features.hpp"
#include "mantissa/numerics/format.hpp"
#include "mantissa/numerics/format_report.hpp"

namespace mantissa::app {

Action register_formats_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "formats", "Show the number formats: layout, bias, max, min normal, min subnormal, epsilon");
  auto value = std::make_shared<std::string>();
  auto bits = std::make_shared<std::string>();
  auto format = std::make_shared<std::string>();
  auto* value_opt = cmd->add_option("--value", *value,
                                    "Show X's nearest value in every format, per rounding mode")
                        ->type_name("X");
  auto* bits_opt =
      cmd->add_option("--bits", *bits, "Decode a bit pattern (0x..., 0b... or decimal)")
          ->type_name("PATTERN");
  auto* format_opt = cmd->add_option("--format", *format,
                                     "Format of --bits: " + std::string(numerics::format_names()))
                         ->type_name("NAME");
  auto remeasure = std::make_shared<bool>(false);
  auto* remeasure_opt = cmd->add_flag(
      "--remeasure", *remeasure,
      "Forget this machine's cached matrix-product routes (every shape: runs measure them "
      "again on first use) and measure the sample products now; for a cache written while the "
      "machine was busy");
  remeasure_opt->excludes(value_opt);
  remeasure_opt->excludes(bits_opt);
  value_opt->excludes(bits_opt);
  bits_opt->needs(format_opt);
  format_opt->needs(bits_opt);

  return [cmd, value, bits, format, remeasure]() -> int {
    if (!cmd->parsed()) return -1;
    if (!value->empty()) {
      fmt::print("{}", numerics::value_report(*value));
    } else if (!bits->empty()) {
      const numerics::Format f = numerics::parse_format_or_throw(*format, "--format");
      fmt::print("{}", numerics::bits_report(*bits, f));
    } else {
      fmt::print("{}", numerics::format_table_report());
      fmt::print("\nrounding: nearest_even (default), toward_zero, stochastic (seeded)\n");
      fmt::print("bulk conversion path: {} (cpu: {})\n",
                 numerics::simd_path_name(numerics::active_simd_path()),
                 numerics::describe(numerics::cpu_features()));
      fmt::print("\nmatrix products on this CPU (matmul_route: automatic, POL 1):\n");
      for (numerics::Format f : {numerics::Format::float32, numerics::Format::bfloat16,
                                 numerics::Format::float16, numerics::Format::cbfloat16}) {
        fmt::print("  {}\n", kernels::describe_route(f, 1, precision::MatmulRoute::automatic));
      }
      // fp8 linear layers (precision.fp8): e4m3 / e5m2 operands, bf16 values, one pass.
      fmt::print("  fp8 linear layers: {}\n",
                 kernels::describe_route(numerics::Format::float8_e4m3, 1,
                                         precision::MatmulRoute::automatic));
      // A sample product per format and POL, timed on every route this CPU has (or read from
      // this machine's route cache): what automatic takes for a product of this size.
      if (*remeasure) {
        const std::string removed = kernels::forget_cached_routes();
        fmt::print("\nroute cache: {}\n",
                   removed.empty() ? std::string("nothing cached to forget")
                                   : "forgot " + removed + "; every shape is measured again");
      }
      std::vector<kernels::RouteRecord> sample;
      for (const auto& [f, pol] :
           {std::pair{numerics::Format::float32, 1}, std::pair{numerics::Format::bfloat16, 1},
            std::pair{numerics::Format::float16, 1}, std::pair{numerics::Format::float16, 2},
            std::pair{numerics::Format::cbfloat16, 1},
            std::pair{numerics::Format::float8_e4m3, 1}}) {
        sample.push_back(kernels::sample_route(f, precision::matmul_passes(f, pol), 1024));
      }
      fmt::print("\n{}", kernels::route_table_text(sample));
    }
    return 0;
  };
}

}  // namespace mantissa::app
