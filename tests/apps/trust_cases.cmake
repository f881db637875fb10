# The hostile inputs and faults of issue 27 (docs/reliability.md, "Issue 27"): each runs the
# `mantissa` program and asserts the exit status and the message (hostile_case, from
# hostile_cases.cmake).

# --- Crash: nesting bounded in every JSON and YAML reader ----------------------------------------
set(deep_header SETUP "${hostile} deep-header @D@/deep.safetensors 200000")
set(deep_message "^mantissa: error: .*/deep.safetensors: header: JSON nested more than 64 levels deep")
hostile_case(deep_json_header_inspect 2 "${deep_message}" ${deep_header}
  COMMAND inspect @D@/deep.safetensors)
hostile_case(deep_json_header_generate 2 "${deep_message}" ${deep_header}
  COMMAND generate --checkpoint @D@/deep.safetensors)
hostile_case(deep_json_header_resume 2 "${deep_message}" ${deep_header}
  COMMAND ${train_tiny} --resume @D@/deep.safetensors)
hostile_case(deep_yaml_config 2
  "^mantissa: error: .*/deep.yaml: nested too deeply for the YAML parser"
  SETUP "printf 'a: ' >@D@/deep.yaml && head -c 100000 /dev/zero | tr '\\0' '\\133' >>@D@/deep.yaml"
  COMMAND train --config @D@/deep.yaml)

# --- Hangs: only regular files are read ---------------------------------------------------------
hostile_case(config_is_a_fifo 2
  "^mantissa: error: .*/f.yaml: is a FIFO, not a regular file \\(expected the config file\\)$"
  SETUP "mkfifo @D@/f.yaml" COMMAND train --config @D@/f.yaml)
hostile_case(text_corpus_is_a_fifo 2
  "^mantissa: error: .*/corpus.txt: is a FIFO, not a regular file \\(expected the text file\\)$"
  SETUP "mkfifo @D@/corpus.txt"
  COMMAND ${train_tiny} --set trainer.fit.train_dataloader.path=@D@/corpus.txt)
hostile_case(report_metrics_is_a_fifo 2
  "^mantissa: error: .*/run/metrics.jsonl: is a FIFO, not a regular file"
  SETUP "mkdir @D@/run && mkfifo @D@/run/metrics.jsonl"
  COMMAND report @D@/run --out @D@/r.html)

# --- NaN checkpoints: the updated weights and state are checked before they are kept ------------
foreach(opt "adamw_lr_1e39;trainer.init.optimizer={AdamW: {learning_rate: 1.0e+39}}"
            "adamw_eps_0;trainer.init.optimizer={AdamW: {learning_rate: 1.0e-3, eps: 0}}"
            "sgd_lr_1e300;trainer.init.optimizer={SGD: {lr: 1.0e+300}}"
            "adamw_weight_decay_1e300;trainer.init.optimizer={AdamW: {learning_rate: 1.0e-3, weight_decay: 1.0e+300}}")
  list(GET opt 0 name)
  list(GET opt 1 assignment)
  hostile_case(nonfinite_update_${name} 2
    "skipped step 1: the update would have made '[a-z0-9_.]+' non-finite .*mantissa: error: no step of this run was applied: every update would have made '[a-z0-9_.]+' non-finite"
    THEN "! ls @D@/run | grep -q ckpt-00000006"
    COMMAND ${train_tiny} --set "${assignment}")
endforeach()
hostile_case(nonfinite_updates_in_a_row_raise 2
  "mantissa: error: 3 steps in a row were not applied: with finite gradients, the optimizer's update made '[a-z0-9_.]+' non-finite"
  COMMAND ${train_tiny} --set "trainer.init.optimizer={SGD: {lr: 1.0e+300}}"
          --set trainer.init.precision.max_consecutive_skipped_steps=3)
# A schedule that jumps to 1e300 at step 4: the steps before are kept, the rest refused, and
# the checkpoints written on the way are finite (`eval` loads the newest).
hostile_case(schedule_jump_keeps_finite_checkpoints 0
  "step 2/6 .*skipped step 5: the update would have made"
  THEN "${cli} inspect @D@/run/ckpt-00000006.safetensors >/dev/null && ${cli} inspect @D@/run/ckpt-00000003.safetensors >/dev/null"
  COMMAND ${train_tiny} --set "trainer.init.schedulers=[{PiecewiseConstantLR: {milestones: [4], learning_rates: [1.0e-3, 1.0e+300]}}]")
hostile_case(resume_negative_exp_avg_sq 2
  "^mantissa: error: .*/c.safetensors: optimizer adamw: state 'lnf.bias.exp_avg_sq' holds -1 at index 0 \\(expected a finite number >= 0\\): the optimizer state is invalid"
  TINY SETUP "${hostile} set-value ${ck6} @D@/c.safetensors optimizer.lnf.bias.exp_avg_sq -1"
  COMMAND ${train_tiny} --resume @D@/c.safetensors)

# --- Silent acceptance: duplicate keys, quoted scalars, empty strings ---------------------------
hostile_case(config_duplicate_key 2
  "^mantissa: error: .*/dup.yaml: trainer.init.seed: the key is given twice in one mapping"
  SETUP "printf 'trainer:\\n  init:\\n    seed: 2\\n    seed: 3\\n' >@D@/dup.yaml"
  COMMAND train --config @D@/dup.yaml)
hostile_case(config_duplicate_map 2
  "^mantissa: error: .*/tiny.yaml: trainer.init.loop: the key is given twice in one mapping"
  SETUP "sed 's/^    loop:.*/&\\n    loop: {max_steps: 2}/' ${tiny} >@D@/tiny.yaml"
  COMMAND train --config @D@/tiny.yaml)
hostile_case(config_quoted_integer 2
  "^mantissa: error: trainer.init.seed: '1' is quoted, so a string \\(expected a non-negative integer: write it without quotes\\)"
  COMMAND ${train_tiny} --set "trainer.init.seed=\"1\"")
hostile_case(config_quoted_boolean 2
  "^mantissa: error: trainer.fit.train_dataloader.shuffle: 'false' is quoted, so a string \\(expected true or false"
  COMMAND ${train_tiny} --set "trainer.fit.train_dataloader.shuffle=\"false\"")
# A message quoting a huge value from a file is one line of at most 4 KiB, saying how much it
# left out (the value: a format name of 1 MiB).
hostile_case(error_quoting_a_megabyte_is_cut 2
  "^mantissa: error: trainer.init.precision.fp16_type: 'x{4000,4096} \\.\\.\\. \\([0-9]+ more bytes of this message not shown\\)$"
  SETUP "(sed -n '1,7p' ${tiny} && printf '    precision: {fp16_type: ' && head -c 1048576 /dev/zero | tr '\\0' x && printf '}\\n' && sed -n '9,$p' ${tiny}) >@D@/tiny.yaml"
  COMMAND train --config @D@/tiny.yaml --mode train --set ${run_dir})
hostile_case(config_empty_checkpoint_dir 2
  "^mantissa: error: trainer.init.checkpoint.dir: an empty string"
  COMMAND train --config ${tiny} --set "trainer.init.checkpoint.dir=\"\"")

# --- Unclear messages ---------------------------------------------------------------------------
hostile_case(idx_labels_of_two_dimensions 2
  "^mantissa: error: .*/train-labels-idx1-ubyte.gz: labels of dimensions 8 x 1 \\(expected one dimension: one label per image\\)"
  SETUP "${hostile} idx @D@/train-images-idx3-ubyte.gz --gz 8 28 28 && ${hostile} idx @D@/train-labels-idx1-ubyte.gz --gz 8 1"
  COMMAND train --config ${mlp} --set trainer.fit.train_dataloader.path=@D@ --set ${run_dir})
hostile_case(images_do_not_suit_the_model 2
  "^mantissa: error: trainer.fit.train_dataloader \\(.*\\): images of 1 x 2 x 3 = 6 values do not suit trainer.init.model.input_size 784"
  NOT "step [0-9]+/"
  SETUP "${hostile} idx @D@/train-images-idx3-ubyte.gz --gz 8 2 3 && ${hostile} idx @D@/train-labels-idx1-ubyte.gz --gz 8 && cp @D@/train-images-idx3-ubyte.gz @D@/t10k-images-idx3-ubyte.gz && cp @D@/train-labels-idx1-ubyte.gz @D@/t10k-labels-idx1-ubyte.gz"
  COMMAND train --config ${mlp} --set trainer.fit.train_dataloader.path=@D@ --set ${run_dir})

# --- Data loss: no link followed in a run directory; --out never replaces a run's files -------
hostile_case(lock_file_symlink_is_refused 2
  "^mantissa: error: .*/run/.lock: is a symbolic link; mantissa never follows links inside a run directory"
  SETUP "mkdir @D@/run && echo keep >@D@/victim.txt && ln -s ../victim.txt @D@/run/.lock"
  THEN "test \"$(cat @D@/victim.txt)\" = keep"
  COMMAND ${train_tiny})
hostile_case(lock_file_hard_link_is_refused 2
  "^mantissa: error: .*/run/.lock: is not a regular file of its own"
  SETUP "mkdir @D@/run && echo keep >@D@/victim.txt && ln @D@/victim.txt @D@/run/.lock"
  THEN "test \"$(cat @D@/victim.txt)\" = keep"
  COMMAND ${train_tiny})
hostile_case(metrics_symlink_is_refused 2
  "^mantissa: error: .*/run/metrics.jsonl: is a symbolic link; mantissa never writes the metrics file through a link"
  SETUP "mkdir @D@/run && echo keep >@D@/victim.txt && ln -s ../victim.txt @D@/run/metrics.jsonl"
  THEN "test \"$(cat @D@/victim.txt)\" = keep"
  COMMAND ${train_tiny})
hostile_case(report_out_onto_the_runs_metrics 2
  "^mantissa: error: .*/metrics.jsonl: is a file of the run directory .*; --out never replaces a run's own files"
  TINY SETUP "cp -r ${tiny_run} @D@/r"
  THEN "cmp ${tiny_run}/metrics.jsonl @D@/r/metrics.jsonl"
  COMMAND report @D@/r --out @D@/r/metrics.jsonl)
hostile_case(report_out_onto_another_runs_checkpoint 2
  "^mantissa: error: .*/b/ckpt-00000003.safetensors: is a name a run directory's own files take"
  TINY SETUP "cp -r ${tiny_run} @D@/b"
  THEN "cmp ${tiny_run}/ckpt-00000003.safetensors @D@/b/ckpt-00000003.safetensors"
  COMMAND report ${tiny_run} --out @D@/b/ckpt-00000003.safetensors)
hostile_case(report_out_over_a_file_that_is_not_a_report 2
  "^mantissa: error: .*/notes.txt: exists and is not a report \\(it does not begin '<!DOCTYPE html>'\\); --out replaces only an earlier report"
  TINY SETUP "echo keep >@D@/notes.txt"
  THEN "test \"$(cat @D@/notes.txt)\" = keep"
  COMMAND report ${tiny_run} --out @D@/notes.txt)
# The report compares formats on one model: not a directory twice, not another model; a seed
# claim only where it holds; a throughput record that matches no run is an error.
hostile_case(report_the_same_directory_twice 2
  "^mantissa: error: report: .*/tiny-run/? is given twice"
  TINY COMMAND report ${tiny_run} ${tiny_run}/ --out @D@/r.html)
hostile_case(report_runs_of_different_models 2
  "^mantissa: error: report: .*/tiny-run/metrics.jsonl holds a gpt of 26016 parameters, .*/m/metrics.jsonl a mlp of 26016: the report compares formats on one model"
  TINY SETUP "mkdir @D@/m && head -n 1 ${tiny_run}/metrics.jsonl | sed 's/\"model\":\"gpt\"/\"model\":\"mlp\"/' >@D@/m/metrics.jsonl"
  COMMAND report ${tiny_run} @D@/m --out @D@/r.html)
hostile_case(report_says_when_seeds_differ 0 "^$"
  TINY SETUP "mkdir @D@/s && sed 's/\"seed\":2,/\"seed\":7,/' ${tiny_run}/metrics.jsonl >@D@/s/metrics.jsonl"
  THEN "grep -q 'The runs have different seeds (2, 7)' @D@/r.html && ! grep -q 'Same seed and batches' @D@/r.html"
  COMMAND report ${tiny_run} @D@/s --out @D@/r.html)
hostile_case(report_throughput_matching_no_run 2
  "^mantissa: error: report --throughput: no record matches a run \\(records for float16; runs that started in cbfloat16"
  TINY SETUP "echo '{\"interleaved_throughput\": \"float16\", \"unit\": \"tokens\", \"items_per_s\": 100.0, \"slowest_items_per_s\": 90.0, \"fastest_items_per_s\": 110.0, \"steps\": 10}' >@D@/t.jsonl"
  COMMAND report ${tiny_run} --throughput @D@/t.jsonl --out @D@/r.html)
# A metrics.jsonl of someone else's is never appended to; one an eval began is reported.
hostile_case(foreign_metrics_file_is_not_appended_to 2
  "^mantissa: error: .*/run/metrics.jsonl: holds something other than mantissa's metrics records"
  SETUP "mkdir @D@/run && echo 'my notes' >@D@/run/metrics.jsonl"
  THEN "test \"$(cat @D@/run/metrics.jsonl)\" = 'my notes'"
  COMMAND ${train_tiny})
hostile_case(a_run_an_eval_began_is_reported 0 "eval at step 6: loss"
  TINY SETUP "mkdir @D@/eo && cp ${ck6} @D@/eo/"
  THEN "${cli} train --config ${tiny} --mode train --set trainer.init.checkpoint.dir=@D@/eo --resume latest --set trainer.init.loop.max_steps=7 2>/dev/null && ${cli} report @D@/eo --out @D@/r.html >/dev/null"
  COMMAND eval --config ${tiny} --set trainer.init.checkpoint.dir=@D@/eo)
hostile_case(report_out_onto_a_device 2
  "^mantissa: error: /dev/null: is a character device; mantissa writes the report only to a regular file or a new path"
  TINY THEN "test -c /dev/null"
  COMMAND report ${tiny_run} --out /dev/null)

# --- Silent acceptance: empty option values ------------------------------------------------------
# (through sh: CMake drops an empty argument from a test's command line)
add_test(NAME cli.mode_empty COMMAND ${expect} --not "step [0-9]+/" 2
  "^mantissa: error: --mode: an empty value \\(give a value, or leave the option out\\)$"
  -- sh -c "exec \"$0\" train --config ${tiny} --mode ''" ${cli})
add_test(NAME cli.generate_empty_prompt_is_allowed COMMAND ${expect} 0 "^$"
  -- sh -c "exec \"$0\" generate --checkpoint ${tiny_run} --prompt '' --length 4" ${cli})
set_tests_properties(cli.generate_empty_prompt_is_allowed PROPERTIES FIXTURES_REQUIRED tiny_run)
# A value past a double's range would show a rounding error of 0: refused, as is a blank.
hostile_case(formats_value_past_a_doubles_range 2
  "^mantissa: error: --value: '1e400' is beyond a double's range"
  COMMAND formats --value 1e400)
hostile_case(formats_value_below_a_doubles_range 2
  "^mantissa: error: --value: '1e-400' is below a double's range"
  COMMAND formats --value 1e-400)
add_test(NAME cli.formats_value_empty COMMAND ${expect} --not "float16" 2
  "^mantissa: error: --value: an empty value" -- sh -c "exec \"$0\" formats --value ''" ${cli})

# --- Silent write failure --------------------------------------------------------------------------
# A device (here the full disk /dev/full) or a file of something else as --json: refused before
# the first step; a failing write of a regular file: FileIo.AFullDiskIsAnErrorNamingTheFile.
hostile_case(bench_json_on_a_full_disk 2
  "mantissa: error: --json: /dev/full: is a character device; bench appends its records only to a regular file"
  NOT "step [0-9]+/"
  COMMAND bench train --config ${tiny} --steps 1 --json /dev/full)
hostile_case(bench_json_onto_a_checkpoint_is_refused 2
  "mantissa: error: --json: .*/ckpt-00000004.safetensors: holds something other than bench records"
  SETUP "printf 'not a record\\n' > @D@/ckpt-00000004.safetensors" NOT "step [0-9]+/"
  COMMAND bench train --config ${tiny} --steps 1 --json @D@/ckpt-00000004.safetensors)

# --- Terminal escapes: names from files are shown, never obeyed ------------------------------------
string(ASCII 27 esc)
hostile_case(escape_sequences_in_names_are_made_visible 2
  "^mantissa: error: .*/e\\\\x1b\\[31m.yaml: cannot open the config file"
  NOT "${esc}"
  COMMAND train --config "@D@/e${esc}[31m.yaml")

# --- The vendor's defaults as printed: 2e15 taken as written, the likely 2^15 said ------------------
hostile_case(vendor_2e15_is_taken_as_written_and_said 0
  "initial_loss_scale: 2e\\+15 is 2 x 10\\^15 as written; the vendor's documentation writes 2e15 for 2\\^15 \\(32768\\): write 32768 if that is meant"
  COMMAND ${train_tiny} --set trainer.init.loop.max_steps=2
          --set "trainer.init.precision={fp16_type: float16, loss_scaling_factor: dynamic, initial_loss_scale: 2e15, max_loss_scale: 2e15}")
hostile_case(vendor_2e-14_is_refused_saying_why 2
  "^mantissa: error: .*min_loss_scale: 2e-14 is below the smallest allowed, 2\\^-14 \\(6.103515625e-05\\); 2e-14 is 2 x 10\\^-14 as written"
  COMMAND ${train_tiny} --set "trainer.init.precision={fp16_type: float16, loss_scaling_factor: dynamic, min_loss_scale: 2e-14}")

# --- Sizes that overflow and names that are not the run's (issue 27, a second audit) ---------------
hostile_case(grad_accum_steps_overflowing_items_per_step 2
  "mantissa: error: trainer.init.loop.grad_accum_steps: 4611686018427387904 micro-batches of [0-9]+ items overflow a 64-bit count of items per step"
  NOT "step [0-9]+/"
  COMMAND ${train_tiny} --set trainer.init.loop.grad_accum_steps=4611686018427387904)
hostile_case(set_path_with_an_empty_key 2
  "mantissa: error: --set trainer.init.loop.max_steps.: an empty key in the path"
  COMMAND ${train_tiny} --set trainer.init.loop.max_steps.=3)
hostile_case(compare_into_an_earlier_out_is_refused_before_any_run 2
  "mantissa: error: --out .*/cmp: .*/cmp/float32 already holds the checkpoints of an earlier run \\(ckpt-00000003.safetensors\\)"
  TINY SETUP "mkdir -p @D@/cmp/float32 && cp ${ck3} @D@/cmp/float32/"
  NOT "compare: float32 \\(1 of"
  THEN "test -f @D@/cmp/float32/ckpt-00000003.safetensors"
  COMMAND compare --config ${tiny} --formats float32 --steps 2 --throughput-steps 0 --out @D@/cmp)
# What compare writes last is checked first: a foreign throughput.jsonl or report.html, an
# earlier compare's checkpoints under the other --seeds layout, seeds past 2^64 - 1.
hostile_case(compare_never_replaces_a_foreign_throughput_file 2
  "mantissa: error: .*/cmp/throughput.jsonl:1: .*; compare replaces only an earlier compare's throughput.jsonl"
  SETUP "mkdir -p @D@/cmp && echo precious >@D@/cmp/throughput.jsonl"
  NOT "compare: float32 \\(1 of"
  THEN "test \"$(cat @D@/cmp/throughput.jsonl)\" = precious"
  COMMAND compare --config ${tiny} --formats float32 --steps 1 --throughput-steps 1 --out @D@/cmp)
hostile_case(compare_checks_its_report_before_the_runs 2
  "mantissa: error: .*/cmp/report.html: exists and is not a report"
  SETUP "mkdir -p @D@/cmp && echo keep >@D@/cmp/report.html"
  NOT "compare: float32 \\(1 of"
  THEN "test \"$(cat @D@/cmp/report.html)\" = keep"
  COMMAND compare --config ${tiny} --formats float32 --steps 1 --throughput-steps 0 --out @D@/cmp)
hostile_case(compare_with_other_seeds_into_an_earlier_out 2
  "mantissa: error: --out .*/cmp: .*/cmp/float32 already holds the checkpoints of an earlier run"
  TINY SETUP "mkdir -p @D@/cmp/float32 && cp ${ck3} @D@/cmp/float32/"
  NOT "compare: float32 seed"
  COMMAND compare --config ${tiny} --formats float32 --seeds 2 --steps 1 --throughput-steps 0 --out @D@/cmp)
hostile_case(compare_seeds_past_the_largest_seed 2
  "mantissa: error: --seeds: 2 seeds from trainer.init.seed 18446744073709551615 pass the largest seed"
  COMMAND compare --config ${tiny} --formats float32 --seeds 2 --steps 1 --throughput-steps 0
          --out @D@/cmp --set trainer.init.seed=18446744073709551615)
hostile_case(eval_never_trains 2
  "mantissa: error: --mode: 'train' \\(expected one of: eval, eval_all; `mantissa train` trains\\)"
  THEN "test ! -e @D@/run"
  COMMAND eval --config ${tiny} --mode train --set ${run_dir})
# A checkpoint loads only into the model it was trained as (num_heads changes no weight shape).
hostile_case(eval_with_another_model_is_refused 2
  "mantissa: error: .*/ckpt-00000003.safetensors: the checkpoint holds another model than the config's: trainer.init.model.num_heads is 2 in the checkpoint, 4 in the config"
  TINY COMMAND eval --config ${tiny} --resume ${ck3} --set trainer.init.model.num_heads=4)
# A checkpoint trained in another precision is evaluated in neither silently: an error unless
# --resume-settings says which; `checkpoint` computes as it was trained.
hostile_case(eval_in_another_precision_is_refused 2
  "mantissa: error: .*/ckpt-00000003.safetensors: the checkpoint was trained in another precision than the config's: trainer.init.precision is .*cbfloat16.* in the checkpoint, ~ in the config. Say which the evaluation computes in"
  TINY COMMAND eval --config ${tiny} --resume ${ck3} --set ${run_dir} --set trainer.init.precision=null)
hostile_case(eval_in_the_checkpoints_precision 0
  "evaluating in the checkpoint's precision, not the config's: trainer.init.precision is .*cbfloat16.* in the checkpoint, ~ in the config"
  TINY COMMAND eval --config ${tiny} --resume ${ck3} --set ${run_dir} --set trainer.init.precision=null
               --resume-settings checkpoint)
hostile_case(eval_of_a_checkpoint_from_elsewhere_is_not_recorded 0
  "evaluating .*/ckpt-00000003.safetensors, a checkpoint from outside .*/run: the result is not recorded in its metrics.jsonl"
  TINY THEN "test ! -e @D@/run/metrics.jsonl"
  COMMAND eval --config ${tiny} --resume ${ck3} --set ${run_dir})
hostile_case(eval_all_with_one_checkpoint_is_refused 2
  "mantissa: error: --resume: '.*/ckpt-00000003.safetensors' names one checkpoint, but --mode eval_all evaluates every checkpoint"
  TINY COMMAND eval --config ${tiny} --mode eval_all --resume ${ck3} --set ${run_dir})
hostile_case(bench_json_in_a_missing_directory 2
  "mantissa: error: --json: .*/nodir/records.json: cannot be created \\(No such file or directory\\); the records would be lost after the run"
  NOT "step [0-9]+/"
  COMMAND bench train --config ${tiny} --steps 1 --warmup 0 --json @D@/nodir/records.json)
hostile_case(bench_negative_opt_level_is_refused 2
  "mantissa: error: trainer.init.precision.precision_opt_level: -1 \\(expected one of: 0, 1, 2\\)"
  NOT "step [0-9]+/"
  COMMAND bench train --config ${tiny} --steps 1 --warmup 0 --opt-level -1)
hostile_case(resume_with_another_seed_says_so 0
  "trainer.init.seed is 2 in the checkpoint, 9 in the config: the run continues the checkpoint's random state"
  TINY SETUP "cp ${ck3} @D@/"
  COMMAND ${train_tiny} --resume @D@/ckpt-00000003.safetensors --set trainer.init.seed=9
          --set trainer.init.loop.max_steps=4)
hostile_case(resume_with_other_training_data_says_so 0
  "trainer.fit.train_dataloader is text README.md, split train, batch_size 2, context 32 in the checkpoint, text README.md, split train, batch_size 2, context 16 in the config: the run continues at the checkpoint's position in the config's data"
  TINY SETUP "cp ${ck3} @D@/"
  COMMAND ${train_tiny} --resume @D@/ckpt-00000003.safetensors
          --set trainer.fit.train_dataloader.context=16 --set trainer.init.loop.max_steps=4)
# Labels outside the model's classes: refused before the first step (the dataset's labels are 1).
hostile_case(labels_outside_the_models_classes 2
  "^mantissa: error: trainer.fit.train_dataloader \\(.*\\): label 1 \\(image 0\\) is not a class of trainer.init.model.num_classes 1 \\(expected 0 to 0\\)"
  NOT "step [0-9]+/"
  SETUP "${hostile} idx @D@/train-images-idx3-ubyte.gz --gz 8 28 28 && ${hostile} idx @D@/train-labels-idx1-ubyte.gz --gz 8 && cp @D@/train-images-idx3-ubyte.gz @D@/t10k-images-idx3-ubyte.gz && cp @D@/train-labels-idx1-ubyte.gz @D@/t10k-labels-idx1-ubyte.gz"
  COMMAND train --config ${mlp} --set trainer.fit.train_dataloader.path=@D@ --set ${run_dir} --set trainer.init.model.num_classes=1)
# generate writes each byte as it is sampled: interrupted, it keeps what it printed.
add_test(NAME cli.generate_interrupted_keeps_its_output
  COMMAND sh -c "mkdir -p \"$(dirname \"$1\")\" && timeout -s INT 3 \"$0\" generate --checkpoint ${tiny_run} --prompt In --length 1000000 > \"$1\"; test -s \"$1\" && head -c 2 \"$1\" | grep -q In"
          ${cli} ${hdir}/generate_interrupted.out)
set_tests_properties(cli.generate_interrupted_keeps_its_output PROPERTIES FIXTURES_REQUIRED tiny_run)
