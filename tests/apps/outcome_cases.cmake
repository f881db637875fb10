# Issue 27's run outcomes and report honesty, through the `mantissa` program (hostile_case from
# hostile_cases.cmake): how a run ended is in its metrics and its report, the POL identity is
# said, compare logs enough points, measures throughput interleaved and draws seeds as a band.
# No semicolon or unpaired square bracket in a regex or THEN here: CMake's lists would split
# (or fail to split) the arguments there.

# A float16 run whose scaled gradients overflow from the first step: the scale starts at 2^41
# with its floor at 2^40, so step 1 halves it to the floor and step 2 finds it stuck. Both
# skipped steps name where the backward went non-finite: the scaling op itself (a scale past
# float16's 65504).
set(stuck_precision "trainer.init.precision={fp16_type: float16, loss_scaling_factor: dynamic, initial_loss_scale: 2199023255552, min_loss_scale: 1099511627776, max_loss_scale: 2199023255552, on_stuck:")
hostile_case(loss_scale_floor_records_why_and_the_last_skip 2
  "skipped step 1: non-finite gradients at loss scale 2\\^41, first in the backward of scale at the model.s top level .reached 17 parameters.*skipped step 2: non-finite gradients at loss scale 2\\^40, first in the backward of scale .*mantissa: error: loss scale stuck at its minimum 2\\^40: gradients keep overflowing"
  THEN "grep -q '\"first_nonfinite\":{\"gradient\":\"input_grad\",\"layer\":\"\",\"op\":\"scale\"},\"loss_scale\":1099511627776.0,\"overflowed\":.\"[a-z]' @D@/run/metrics.jsonl && tail -n 1 @D@/run/metrics.jsonl | grep -Eq '^\\{\"checkpoint\":\"\",\"end\":2,\"last_skipped_step\":2,\"message\":\"loss scale stuck at its minimum .*\"outcome\":\"loss_scale_floor\",\"signal\":\"\",\"skipped_steps\":2\\}$' && ${cli} report @D@/run --out @D@/r.html && grep -q 'stopped at the loss-scale floor at step 2 of 6 (2 skipped. last skipped step 2): loss scale stuck at its minimum' @D@/r.html && grep -q '<td>2 / 6 <small>(stopped at the loss-scale floor)</small></td><td>2</td>' @D@/r.html"
  COMMAND ${train_tiny} --set "${stuck_precision} raise}")
hostile_case(fallback_is_recorded_and_labelled 0
  "loss scale stuck at its minimum 2\\^40: gradients keep overflowing. falling back to bfloat16 .*precision falls back to bfloat16 from step 3 on"
  THEN "grep -q '^{\"fallback_step\":2,\"from\":\"float16\",\"reason\":\"loss scale stuck at its minimum 2^40 (on_stuck: fall_back)\",\"to\":\"bfloat16\"}$' @D@/run/metrics.jsonl && tail -n 1 @D@/run/metrics.jsonl | grep -q '\"end\":6,.*\"outcome\":\"completed\"' && ${cli} report @D@/run --out @D@/r.html && grep -q 'data-run=\"float16 → bfloat16\"' @D@/r.html && grep -q 'fell back from float16 to bfloat16 after step 2' @D@/r.html"
  COMMAND ${train_tiny} --set "${stuck_precision} fall_back}")
# POL 0 and POL 1 are bit-identical for float16 on the fp32 route (tests/train's
# SameBits.Pol0AndPol1AgreeForFloat16OnTheFp32Route compares the bits): the run says so.
hostile_case(pol_identity_is_said 0
  "precision_opt_level 1 computes the same bits as precision_opt_level 0 on these routes: float16 products on fp32 routes are exact in one pass at POL 0 and 1"
  THEN "head -n 1 @D@/run/metrics.jsonl | grep -q '\"same_bits_opt_levels\":\\[0\\]' && ${cli} report @D@/run --out @D@/r.html && grep -q 'computes the same bits as precision_opt_level 0 on these routes' @D@/r.html"
  COMMAND ${train_tiny} --set trainer.init.loop.max_steps=2
          --set "trainer.init.precision={fp16_type: float16, loss_scaling_factor: dynamic, matmul_route: fp32}")
hostile_case(pol_identity_is_not_said_where_it_does_not_hold 0 "step 2/2"
  NOT "computes the same bits"
  THEN "! grep -q same_bits @D@/run/metrics.jsonl"
  COMMAND ${train_tiny} --set trainer.init.loop.max_steps=2
          --set "trainer.init.precision={fp16_type: float16, loss_scaling_factor: dynamic, precision_opt_level: 2, matmul_route: fp32}")

# compare: two formats, two seeds each, 3 steps: every step logged, the runs in seed
# directories, drawn as a mean and a band; no interleaved throughput asked for, so the report
# compares none and says why.
hostile_case(compare_seeds_draw_a_band 0
  "compare: logging every step \\(the config logs every 2..*compare: float32 seed 2 \\(1 of 4\\), run directory .*/float32/seed-2.*compare: float16 seed 3 \\(4 of 4\\).*compare: float16 seed 3: completed 3 steps"
  THEN "test -f @D@/c/float16/seed-3/metrics.jsonl && grep -q 'data-run=\"float16\" data-kind=\"training range\" data-points=\"3\"' @D@/c/report.html && grep -q '<b>float16</b> (2 seeds): validation loss [0-9.]* &plusmn. ' @D@/c/report.html && grep -q 'No throughput comparison' @D@/c/report.html && test ! -e @D@/c/throughput.jsonl"
  COMMAND compare --config ${tiny} --formats float32,float16 --seeds 2 --steps 3
          --throughput-steps 0 --out @D@/c)
hostile_case(compare_zero_seeds 2 "^mantissa: error: --seeds: 0 \\(expected 1 to 100\\)$"
  COMMAND compare --config ${tiny} --seeds 0)
hostile_case(compare_negative_throughput_steps 2
  "^mantissa: error: --throughput-steps: -1 \\(expected 0, none, or more\\)$"
  COMMAND compare --config ${tiny} --throughput-steps -1)
hostile_case(report_throughput_must_be_interleaved 2
  "^mantissa: error: .*/metrics.jsonl:1: not an interleaved_throughput record \\(the throughput.jsonl mantissa compare writes\\)$"
  TINY COMMAND report ${tiny_run} --throughput ${tiny_run}/metrics.jsonl --out @D@/r.html)
