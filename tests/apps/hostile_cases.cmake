# The hostile and fault cases of issue 14 (docs/reliability.md lists each with what the
# program does): every one runs the `mantissa` program on a file or situation built here and
# asserts the exit status and the message. Files are made by mantissa_hostile (its own JSON
# and zlib, never mantissa's writers) from scratch or from the tiny run's checkpoint.
add_executable(mantissa_hostile hostile_files.cpp)
find_package(ZLIB REQUIRED)
find_package(nlohmann_json CONFIG REQUIRED)
target_link_libraries(mantissa_hostile PRIVATE ZLIB::ZLIB nlohmann_json::nlohmann_json)
target_include_directories(mantissa_hostile PRIVATE ${PROJECT_SOURCE_DIR}/tests/support)

set(hostile $<TARGET_FILE:mantissa_hostile>)
set(expect ${CMAKE_CURRENT_SOURCE_DIR}/expect.sh)
set(hdir ${CMAKE_CURRENT_BINARY_DIR}/hostile)
set(ck6 ${tiny_run}/ckpt-00000006.safetensors)
set(ck3 ${tiny_run}/ckpt-00000003.safetensors)
set(mlp ${PROJECT_SOURCE_DIR}/configs/fashion_mnist/mlp-float32.yaml)

# hostile_case(NAME STATUS REGEX [TINY] [SETUP cmd] [THEN cmd] [NOT regex] COMMAND args...)
# @D@ in SETUP, THEN and COMMAND is the case's own empty directory; TINY: needs the tiny run.
function(hostile_case name status regex)
  cmake_parse_arguments(C "TINY" "SETUP;THEN;NOT" "COMMAND" ${ARGN})
  set(d ${hdir}/${name})
  set(setup "rm -rf ${d} && mkdir -p ${d}")
  if(C_SETUP)
    string(APPEND setup " && ${C_SETUP}")
  endif()
  set(opts --setup "${setup}")
  if(C_THEN)
    list(APPEND opts --then "${C_THEN}")
  endif()
  if(C_NOT)
    list(APPEND opts --not "${C_NOT}")
  endif()
  string(REPLACE "@D@" "${d}" opts "${opts}")
  string(REPLACE "@D@" "${d}" args "${C_COMMAND}")
  add_test(NAME cli.${name} COMMAND ${expect} ${opts} ${status} "${regex}" -- ${cli} ${args}
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  if(C_TINY)
    set_tests_properties(cli.${name} PROPERTIES FIXTURES_REQUIRED tiny_run)
  endif()
endfunction()

set(run_dir trainer.init.checkpoint.dir=@D@/run)
set(train_tiny train --config ${tiny} --mode train --set ${run_dir})

# --- Crashes: sizes from files overflow-checked ------------------------------------------------
hostile_case(idx_overflowing_dimensions 2
  "^mantissa: error: .*/train-images-idx3-ubyte.gz: IDX dimensions 60000 x 350476688 x 3289581145 need more than the 1073741824 bytes an IDX array may hold"
  SETUP "${hostile} idx @D@/train-images-idx3-ubyte.gz --gz --payload 64 60000 350476688 3289581145 && ${hostile} idx @D@/train-labels-idx1-ubyte.gz --gz 60000"
  COMMAND train --config ${mlp} --set trainer.fit.train_dataloader.path=@D@ --set ${run_dir})
hostile_case(inspect_shape_overflowing_int64 2
  "^mantissa: error: .*/c.safetensors: tensor 'model.lnf.bias': shape \\[4611686018427387936\\] of F32 has a byte size past int64"
  TINY SETUP "${hostile} set-shape ${ck6} @D@/c.safetensors model.lnf.bias [4611686018427387936]"
  COMMAND inspect @D@/c.safetensors)
hostile_case(resume_shape_overflowing_int64 2
  "^mantissa: error: .*/c.safetensors: tensor 'model.lnf.bias': shape \\[4611686018427387936\\] of F32 has a byte size past int64"
  TINY SETUP "${hostile} set-shape ${ck6} @D@/c.safetensors model.lnf.bias [4611686018427387936]"
  COMMAND ${train_tiny} --resume @D@/c.safetensors THEN "test ! -e @D@/run/ckpt-00000006.safetensors")

# --- Data lost: run directories, signals, failed writes ------------------------------------------
hostile_case(fresh_run_keeps_foreign_checkpoints 2
  "^mantissa: error: .*/run: already holds checkpoints of another run \\(ckpt-00000100.safetensors\\); a fresh run never overwrites or deletes them"
  TINY SETUP "mkdir @D@/run && cp ${ck6} @D@/run/ckpt-00000100.safetensors"
  THEN "cmp ${ck6} @D@/run/ckpt-00000100.safetensors && test $(ls @D@/run | grep -c ckpt) -eq 1"
  COMMAND ${train_tiny})
# Each periodic checkpoint is said (the tiny config saves every 3 steps of 6).
hostile_case(periodic_checkpoints_are_said 0
  "checkpoint [^ ]*/run/ckpt-00000003.safetensors.*checkpoint [^ ]*/run/ckpt-00000006.safetensors"
  COMMAND ${train_tiny})
# A link to the run's newest checkpoint resumes it (the link is the file it names).
hostile_case(resume_through_a_link_to_the_newest 0 "resumed from .*/link.safetensors at step 6"
  TINY SETUP "mkdir @D@/run && cp ${ck3} ${ck6} @D@/run && ln -s run/ckpt-00000006.safetensors @D@/link.safetensors"
  COMMAND ${train_tiny} --resume @D@/link.safetensors --set trainer.init.loop.max_steps=7)
hostile_case(resume_older_keeps_newer_checkpoints 2
  "^mantissa: error: .*/run: holds checkpoints newer than .*ckpt-00000003.safetensors \\(ckpt-00000006.safetensors\\), which continuing from it would overwrite or delete"
  TINY SETUP "mkdir @D@/run && cp ${ck3} ${ck6} @D@/run"
  THEN "cmp ${ck6} @D@/run/ckpt-00000006.safetensors"
  COMMAND ${train_tiny} --resume @D@/run/ckpt-00000003.safetensors)
# A metrics write that fails (the file, a run's, at the process's size limit, as a full disk fails it:
# write returns an error) stops the run after a checkpoint it can resume from. (A device node
# such as /dev/full is refused before any write: only regular files are written.)
set(d ${hdir}/metrics_write_fails_after_a_checkpoint)
string(REPLACE "@D@" "${d}" tiny_args "${train_tiny}")
add_test(NAME cli.metrics_write_fails_after_a_checkpoint
  COMMAND ${expect} --setup "rm -rf ${d} && mkdir -p ${d}/run && head -n 1 ${tiny_run}/metrics.jsonl >${d}/run/metrics.jsonl && truncate -s 1048576 ${d}/run/metrics.jsonl"
    --then "${cli} inspect ${d}/run >/dev/null"
    2 "mantissa: error: .*/run/metrics.jsonl: cannot append a metrics record \\(File too large\\); checkpoint .*/run/ckpt-00000000.safetensors written: resume with --resume latest"
    -- sh -c "ulimit -f 2048; exec \"$0\" \"$@\"" ${cli} ${tiny_args}
  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.metrics_write_fails_after_a_checkpoint PROPERTIES
  FIXTURES_REQUIRED tiny_run)
hostile_case(unusable_checkpoint_dir_fails_before_training 2
  "^mantissa: error: .*/file/run: cannot create the run directory \\(Not a directory\\)"
  SETUP "touch @D@/file" NOT "step [0-9]+/"
  COMMAND train --config ${tiny} --mode train --set trainer.init.checkpoint.dir=@D@/file/run)
# Two trainers on one run directory; SIGTERM and SIGINT: checkpoint, then exit 128 + signal.
add_test(NAME cli.two_trainers_one_run_dir COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/signals.sh two
         ${cli} ${tiny} ${hdir}/two WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
add_test(NAME cli.sigterm_checkpoints_and_exits_143 COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/signals.sh TERM
         ${cli} ${tiny} ${hdir}/term WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
add_test(NAME cli.sigint_checkpoints_and_exits_130 COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/signals.sh INT
         ${cli} ${tiny} ${hdir}/int WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
add_test(NAME cli.compare_passes_sigterm_to_its_run COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/signals.sh compare
         ${cli} ${tiny} ${hdir}/compare_term WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
# SIGHUP (a closed terminal or SSH session) as SIGTERM; a second, different signal ends the
# program at once; a reader of the output that goes away does not end the run.
add_test(NAME cli.sighup_checkpoints_and_exits_129 COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/signals.sh HUP
         ${cli} ${tiny} ${hdir}/hup WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
add_test(NAME cli.second_different_signal_ends_at_once
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/signals.sh second ${cli} ${tiny} ${hdir}/second
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
add_test(NAME cli.closed_output_pipe_does_not_end_the_run
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/signals.sh pipe ${cli} ${tiny} ${hdir}/pipe
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})

# --- Silent acceptance: non-finite steps in every format ------------------------------------------
# Weights of a standard deviation near float32's range (the largest initializer_range taken):
# with finite weights and gradients, every AdamW update overflows its second moment. The
# optimizer's guard skips each step, and a run none of whose steps applied ends with an error.
set(exploding --set trainer.init.model.initializer_range=1.0e+37)
# Weights of standard deviation 300 overflow float16 (max 65504) in the forward: a non-finite
# loss at a static loss scale of 1.
set(overflowing_half --set trainer.init.model.initializer_range=300)
hostile_case(float32_nonfinite_steps_are_skipped 2
  "(skipped step [1-4]: the update would have made '[^']*' non-finite.*){4}mantissa: error: no step of this run was applied"
  COMMAND ${train_tiny} ${exploding} --set "trainer.init.precision={enabled: false}"
          --set trainer.init.loop.max_steps=4 --set trainer.init.logging.log_steps=4)
hostile_case(bfloat16_nonfinite_steps_are_skipped 2
  "(skipped step [1-4]: the update would have made '[^']*' non-finite.*){4}mantissa: error: no step of this run was applied"
  COMMAND ${train_tiny} ${exploding} --set "trainer.init.precision={fp16_type: bfloat16}"
          --set trainer.init.loop.max_steps=4 --set trainer.init.logging.log_steps=4)
hostile_case(static_scale_nonfinite_steps_are_skipped 0
  "skipped step 1: non-finite loss at loss scale 2\\^7.*step 4/4 .* skipped 4 "
  COMMAND ${train_tiny} ${exploding}
          --set "trainer.init.precision={fp16_type: float16, loss_scaling_factor: 128}"
          --set trainer.init.loop.max_steps=4 --set trainer.init.logging.log_steps=4)
hostile_case(nonfinite_run_raises_after_max_consecutive_skips 2
  "(skipped step [1-2]: non-finite loss at loss scale 1.*){2}mantissa: error: 3 steps in a row had a non-finite loss or gradients at loss scale 1: the run diverged; lower the learning rate"
  COMMAND ${train_tiny} ${overflowing_half}
          --set "trainer.init.precision={fp16_type: float16, loss_scaling_factor: 1, max_consecutive_skipped_steps: 3}")
hostile_case(on_nonfinite_raise 2
  "mantissa: error: step 0: non-finite loss at loss scale 1 in wte.weight, .*, head.weight; first in the [^(]* \\(precision.on_nonfinite is raise"
  COMMAND ${train_tiny} ${overflowing_half}
          --set "trainer.init.precision={fp16_type: float16, loss_scaling_factor: 1, on_nonfinite: raise}")
hostile_case(on_nonfinite_apply_writes_nan_weights 0
  "step 2/2 .* skipped 0 "
  NOT "skipped step"
  THEN "${cli} inspect @D@/run 2>&1 | grep -q 'non-finite values'"
  COMMAND ${train_tiny} ${exploding}
          --set "trainer.init.precision={enabled: false, on_nonfinite: apply}"
          --set trainer.init.loop.max_steps=2)
hostile_case(on_nonfinite_with_dynamic_scaling_is_refused 2
  "^mantissa: error: trainer.init.precision.on_nonfinite: raise does not apply with loss_scaling_factor: dynamic"
  COMMAND ${train_tiny} --set trainer.init.precision.on_nonfinite=raise)
hostile_case(static_float16_scale_that_overflows_raises 2
  "mantissa: error: 20 steps in a row had non-finite gradients at the static loss scale 1e\\+08: the scale overflows the half format; lower loss_scaling_factor or set it to dynamic"
  COMMAND ${train_tiny} --set "trainer.init.precision={fp16_type: float16, loss_scaling_factor: 1.0e+8}"
          --set trainer.init.loop.max_steps=40)
hostile_case(static_float16_scale_that_underflows_warns 0
  "step 0: every gradient is zero at the static loss scale 1e-30: the scaled gradients underflow to zero in the half format"
  COMMAND ${train_tiny} --set "trainer.init.precision={fp16_type: float16, loss_scaling_factor: 1.0e-30}"
          --set trainer.init.loop.max_steps=2)

# --- Silent acceptance: checkpoints ---------------------------------------------------------------
hostile_case(eval_refuses_nan_weights 2
  "^mantissa: error: .*/c.safetensors: tensor 'model.wte.weight' holds 1 non-finite values \\(inf or NaN; the first at index 0\\): the checkpoint is unusable"
  TINY SETUP "${hostile} nan ${ck6} @D@/c.safetensors model.wte.weight"
  COMMAND eval --config ${tiny} --set ${run_dir} --resume @D@/c.safetensors)
hostile_case(generate_refuses_nan_weights 2
  "^mantissa: error: .*/c.safetensors: tensor 'model.wte.weight' holds 1 non-finite values"
  TINY SETUP "${hostile} nan ${ck6} @D@/c.safetensors model.wte.weight"
  COMMAND generate --checkpoint @D@/c.safetensors)
hostile_case(corrupt_tensor_fails_its_crc32 2
  "^mantissa: error: .*/c.safetensors: tensor '[a-z.0-9_]+' fails its crc32 check \\(recorded [0-9a-f]{8}, computed [0-9a-f]{8}\\): the file is corrupt"
  TINY SETUP "${hostile} flip ${ck6} @D@/c.safetensors"
  COMMAND inspect @D@/c.safetensors)
hostile_case(resume_latest_never_skips_a_corrupt_newest 2
  "^mantissa: error: .*/run/ckpt-00000006.safetensors: tensor .* fails its crc32 check .* The newest checkpoint that loads is .*/run/ckpt-00000003.safetensors: move the newer ones away"
  TINY SETUP "mkdir @D@/run && cp ${ck3} @D@/run && ${hostile} flip ${ck6} @D@/run/ckpt-00000006.safetensors"
  COMMAND ${train_tiny} --resume latest)
foreach(meta "global_step;-5;'global_step': '-5' \\(expected an integer >= 0\\)"
             "global_step;5abc;'global_step': '5abc' \\(expected an integer >= 0\\)"
             "fp16_type;float128;'fp16_type': 'float128' \\(expected float32, float16, bfloat16 or cbfloat16\\)"
             "optimizer_step;7;'optimizer_step': '7' \\(expected at most global_step, 6\\)")
  list(GET meta 0 key)
  list(GET meta 1 value)
  list(GET meta 2 message)
  hostile_case(checkpoint_meta_${key}_${value} 2
    "^mantissa: error: .*/c.safetensors: checkpoint metadata ${message}"
    TINY SETUP "${hostile} set-meta ${ck6} @D@/c.safetensors ${key} ${value}"
    COMMAND inspect @D@/c.safetensors)
endforeach()
hostile_case(checkpoint_meta_negative_loss_scale 2
  "^mantissa: error: .*/c.safetensors: checkpoint metadata 'scaler': scaler state: 'loss_scale' is -1 \\(expected a finite float32 > 0\\)"
  TINY SETUP "${hostile} set-meta ${ck6} @D@/c.safetensors scaler '{\"loss_scale\": -1, \"steps_since_rescale\": 0, \"overflows_since_rescale\": 0, \"num_skipped_steps\": 0, \"hysteresis_left\": 1, \"scaling_stopped\": false}'"
  COMMAND ${train_tiny} --resume @D@/c.safetensors)
# A FIFO where the run writes (its metrics, a checkpoint's temporary) or a directory under a
# checkpoint's name: refused before the first step, never waited on.
hostile_case(fifo_as_the_metrics_file 2
  "^mantissa: error: .*/run/metrics.jsonl: is a FIFO; mantissa writes the metrics file only to a regular file"
  SETUP "mkdir @D@/run && mkfifo @D@/run/metrics.jsonl"
  COMMAND ${train_tiny})
hostile_case(fifo_as_a_checkpoints_temporary 2
  "^mantissa: error: .*/run/ckpt-00000003.safetensors.tmp: is a FIFO under a name the run writes its checkpoints through"
  NOT "step [0-9]+/"
  SETUP "mkdir @D@/run && mkfifo @D@/run/ckpt-00000003.safetensors.tmp"
  COMMAND ${train_tiny})
hostile_case(directory_under_a_checkpoints_name 2
  "^mantissa: error: .*/run/ckpt-00000006.safetensors: is a directory under a name the run saves a checkpoint as"
  NOT "step [0-9]+/"
  SETUP "mkdir -p @D@/run/ckpt-00000006.safetensors"
  COMMAND ${train_tiny})
# An error in the config a checkpoint stores names the checkpoint (not the user's YAML).
hostile_case(checkpoint_config_error_names_the_file 2
  "^mantissa: error: .*/c.safetensors \\(its config\\): trainer.init.model.name: missing"
  TINY SETUP "${hostile} set-meta ${ck6} @D@/c.safetensors config 'foo: 1'"
  COMMAND generate --checkpoint @D@/c.safetensors --length 4)
# A renamed checkpoint (its name says a later step than it holds) would be resumed as the
# newest, and its run would overwrite the checkpoints it never wrote: refused, ckpt-6 kept.
hostile_case(resume_renamed_checkpoint 2
  "^mantissa: error: .*/run/ckpt-00000010.safetensors: its name says step 10, its metadata step 3 \\(a renamed checkpoint"
  TINY SETUP "cp -r ${tiny_run} @D@/run && mv @D@/run/ckpt-00000003.safetensors @D@/run/ckpt-00000010.safetensors"
  THEN "cmp @D@/run/ckpt-00000006.safetensors ${ck6}"
  COMMAND ${train_tiny} --resume latest --set trainer.init.loop.max_steps=12)
# A checkpoint past the run's last step is not "completed" silently.
hostile_case(resume_past_max_steps 2
  "^mantissa: error: .*/run/ckpt-00000006.safetensors: at step 6, past trainer.init.loop.max_steps 4 \\(raise max_steps"
  TINY SETUP "cp -r ${tiny_run} @D@/run"
  THEN "cmp @D@/run/ckpt-00000006.safetensors ${ck6}"
  COMMAND ${train_tiny} --resume latest --set trainer.init.loop.max_steps=4)
hostile_case(checkpoint_fractional_shape 2
  "^mantissa: error: .*/c.safetensors: tensor 'model.lnf.bias': shape \\[32.5\\] holds 32.5, not an integer >= 0"
  TINY SETUP "${hostile} set-shape ${ck6} @D@/c.safetensors model.lnf.bias [32.5]"
  COMMAND inspect @D@/c.safetensors)
hostile_case(checkpoint_bytes_after_the_last_tensor 2
  "^mantissa: error: .*/c.safetensors: 4 bytes after the last tensor belong to no tensor"
  TINY SETUP "${hostile} append ${ck6} @D@/c.safetensors 4"
  COMMAND inspect @D@/c.safetensors)
hostile_case(checkpoint_shape_and_span_disagree 2
  "^mantissa: error: .*/c.safetensors: tensor 'model.lnf.bias': shape \\[64\\] of F32 needs 256 bytes \\(64 x 4\\), but data_offsets \\[[0-9]+, [0-9]+\\] span 128"
  TINY SETUP "${hostile} set-shape ${ck6} @D@/c.safetensors model.lnf.bias [64]"
  COMMAND inspect @D@/c.safetensors)
hostile_case(resume_wrong_shape_names_file_and_tensor 2
  "^mantissa: error: .*/c.safetensors: load_state_dict: parameter 'lnf.bias' has shape \\[2, 16\\], expected \\[32\\]"
  TINY SETUP "${hostile} set-shape ${ck6} @D@/c.safetensors model.lnf.bias [2,16]"
  COMMAND ${train_tiny} --resume @D@/c.safetensors)
hostile_case(generate_wrong_shape_names_file_and_tensor 2
  "^mantissa: error: .*/c.safetensors: load_state_dict: parameter 'lnf.bias' has shape \\[2, 16\\], expected \\[32\\]"
  TINY SETUP "${hostile} set-shape ${ck6} @D@/c.safetensors model.lnf.bias [2,16]"
  COMMAND generate --checkpoint @D@/c.safetensors)
hostile_case(resume_precision_differs 2
  "^mantissa: error: .*ckpt-00000006.safetensors: the checkpoint was trained with other settings than the config's: trainer.init.precision is \\{fp16_type: cbfloat16, .*\\} in the checkpoint, \\{fp16_type: float16, .*\\} in the config\\. Say which win: --resume-settings checkpoint"
  TINY COMMAND ${train_tiny} --resume ${ck6} --set trainer.init.precision.fp16_type=float16)
hostile_case(resume_optimizer_differs 2
  "^mantissa: error: .*ckpt-00000006.safetensors: the checkpoint was trained with other settings than the config's: trainer.init.optimizer is \\{AdamW: \\{learning_rate: 3.0e-3\\}\\} in the checkpoint, \\{SGD: \\{lr: 0.1\\}\\} in the config"
  TINY COMMAND ${train_tiny} --resume ${ck6} --set "trainer.init.optimizer={SGD: {lr: 0.1}}")
hostile_case(resume_settings_config_wins 0
  "resuming with the config's settings, not the checkpoint's: trainer.init.optimizer .*the checkpoint's adamw state is not loaded: sgd starts with fresh state.*resumed from .*ckpt-00000006.safetensors at step 6.*step 8/8"
  TINY COMMAND ${train_tiny} --resume ${ck6} --set "trainer.init.optimizer={SGD: {lr: 0.1}}"
          --set trainer.init.loop.max_steps=8 --resume-settings config)
# The report tells a resume in another precision: the label names both, in order, and the
# outcome line says at which step what changed.
hostile_case(report_tells_a_resume_in_another_precision 0
  "resumed from .*ckpt-00000006.safetensors at step 6.*step 8/8"
  TINY SETUP "cp -r ${tiny_run} @D@/run"
  THEN "${cli} report @D@/run --out @D@/r.html >/dev/null && grep -q '<b>cbfloat16 [^ ]* bfloat16</b>' @D@/r.html && grep -q 'resumed at step 6 in other settings: precision cbfloat16 [^ ]* bfloat16, fp16_type cbfloat16 [^ ]* bfloat16' @D@/r.html"
  COMMAND ${train_tiny} --resume @D@/run/ckpt-00000006.safetensors
          --set trainer.init.precision.fp16_type=bfloat16 --set trainer.init.loop.max_steps=8
          --resume-settings config)
hostile_case(report_out_ending_in_a_slash_is_refused 2
  "^mantissa: error: .*/nd/: names a directory; --out names the report's HTML file \\(e.g. .*/nd/report.html\\)"
  TINY THEN "test ! -e @D@/nd"
  COMMAND report ${tiny_run} --out @D@/nd/)
hostile_case(resume_settings_checkpoint_wins 0
  "resuming with the checkpoint's settings, not the config's: trainer.init.precision .*precision cbfloat16.*step 8/8"
  TINY THEN "${cli} inspect @D@/run | grep -Eq 'fp16_type +cbfloat16'"
  COMMAND ${train_tiny} --resume ${ck6} --set trainer.init.precision.fp16_type=float16
          --set trainer.init.loop.max_steps=8 --resume-settings checkpoint)

# --- Silent acceptance: settings out of range (PyTorch's own checks as the floor) ---------------
foreach(bad "learning_rate_negative;trainer.init.optimizer.AdamW.learning_rate=-1e-3;trainer.init.optimizer.AdamW.learning_rate: -0.001 must be >= 0"
            "learning_rate_nan;trainer.init.optimizer.AdamW.learning_rate=.nan;trainer.init.optimizer.AdamW.learning_rate: '.nan' is not a finite number"
            "learning_rate_inf;trainer.init.optimizer.AdamW.learning_rate=.inf;trainer.init.optimizer.AdamW.learning_rate: '.inf' is not a finite number"
            "weight_decay_negative;trainer.init.optimizer.AdamW.weight_decay=-1;trainer.init.optimizer.AdamW.weight_decay: -1 must be >= 0"
            "weight_decay_inf;trainer.init.optimizer.AdamW.weight_decay=.inf;trainer.init.optimizer.AdamW.weight_decay: '.inf' is not a finite number"
            "beta1_above_one;trainer.init.optimizer.AdamW.beta1=1.5;trainer.init.optimizer.AdamW.beta1: 1.5 must be in \\[0, 1\\)"
            "eps_negative;trainer.init.optimizer.AdamW.eps=-1;trainer.init.optimizer.AdamW.eps: -1 must be >= 0"
            "sgd_momentum_negative;trainer.init.optimizer={SGD: {lr: 0.1, momentum: -3}};trainer.init.optimizer.SGD.momentum: -3 must be >= 0"
            "sgd_nesterov_without_momentum;trainer.init.optimizer={SGD: {lr: 0.1, nesterov: true}};trainer.init.optimizer.SGD.nesterov: needs momentum > 0 and dampening 0"
            "initializer_range_negative;trainer.init.model.initializer_range=-0.02;trainer.init.model.initializer_range: -0.02 must be in \\[0, 1e\\+37\\]"
            "initializer_range_overflows;trainer.init.model.initializer_range=1e38;trainer.init.model.initializer_range: 1e\\+38 must be in \\[0, 1e\\+37\\]"
            "scheduler_learning_rate_negative;trainer.init.schedulers=[{ConstantLR: {learning_rate: -1}}];trainer.init.schedulers\\[0\\].*learning_rate: -1 must be >= 0"
            "scheduler_gamma_makes_it_negative;trainer.init.schedulers=[{StepLR: {initial_learning_rate: 0.1, step_size: 2, gamma: -1}}];trainer.init.schedulers over trainer.init.loop.max_steps 6: optimizer adamw: the learning rate of parameter group 0 at step 2 is -0.1 .*it must be a finite number >= 0"
            "set_without_value;trainer.init.loop.max_steps=;--set 'trainer.init.loop.max_steps=': no value after '=' \\(write trainer.init.loop.max_steps=null to restore the default\\)")
  list(GET bad 0 name)
  list(GET bad 1 assignment)
  list(GET bad 2 message)
  hostile_case(config_${name} 2 "^mantissa: error: ${message}" NOT "step [0-9]+/"
    COMMAND ${train_tiny} --set "${assignment}")
endforeach()
# A OneCycle schedule as long as the run (its total_steps the run's max_steps) runs to the end:
# the last step's record once asked the schedule for the step after it, past total_steps.
hostile_case(one_cycle_as_long_as_the_run 0 "step 6/6" NOT "error"
  COMMAND ${train_tiny} --set "trainer.init.schedulers=[{OneCycleLR: {max_lr: 0.01, total_steps: 6}}]")
# One shorter than the run is refused before the first step, the metrics file untouched.
hostile_case(one_cycle_shorter_than_the_run 2
  "trainer.init.schedulers over trainer.init.loop.max_steps 6: schedule OneCycle: step 5 is past total_steps 5"
  THEN "test ! -e @D@/run/metrics.jsonl"
  COMMAND ${train_tiny} --set "trainer.init.schedulers=[{OneCycleLR: {max_lr: 0.01, total_steps: 5}}]")
hostile_case(generate_negative_seed 2
  "^mantissa: error: --seed: '-1' is not an integer in \\[0, 18446744073709551615\\]$"
  TINY COMMAND generate --checkpoint ${tiny_run} --seed -1)
hostile_case(generate_bad_temperature_before_loading 2
  "^mantissa: error: --temperature: -1 \\(expected a finite number >= 0; 0: greedy\\)"
  COMMAND generate --checkpoint /nonexistent --temperature -1)
hostile_case(repeated_option_is_named 2
  "^mantissa: error: --steps: given 2 times; it takes one value \\(give it once\\)$"
  COMMAND bench train --config ${tiny} --steps 1 --steps 2)
# Integer options are decimal digits only: CLI11 alone took 0x10 as 16 and " 5" as 5.
hostile_case(hex_integer_option_is_refused 2
  "^mantissa: error: --steps: '0x2' is not a decimal integer$"
  NOT "step [0-9]+/"
  COMMAND bench train --config ${tiny} --steps 0x2)
hostile_case(generate_length_past_its_bound_is_refused 2
  "^mantissa: error: --length: '1000001' is not an integer in \\[1, 1000000\\]$"
  TINY COMMAND generate --checkpoint ${tiny_run} --length 1000001)
# A recipe word keeps the user's --set recipe settings (checked like any other key).
hostile_case(bench_recipe_word_keeps_the_users_recipe_settings 2
  "^mantissa: error: trainer.init.precision.recipe.scale_rule: 'bogus' \\(expected one of: floor, rceil, ceil, even\\)"
  NOT "step [0-9]+/"
  COMMAND bench train --config ${tiny} --precision mxfp4 --steps 1 --warmup 0
          --set trainer.init.precision.recipe.scale_rule=bogus)
# A records file whose last line lacks its newline: the new record starts a line of its own.
hostile_case(bench_json_after_a_record_without_its_newline 0 "measuring the GEMM peak"
  SETUP "${cli} bench train --config ${tiny} --steps 1 --warmup 0 --json @D@/a.json >/dev/null 2>&1 && head -n 1 @D@/a.json | tr -d '\\n' >@D@/r.json"
  THEN "test $(grep -c '^{' @D@/r.json) -eq 2"
  COMMAND bench train --config ${tiny} --steps 1 --warmup 0 --json @D@/r.json)
# A vocabulary smaller than the text's bytes: the message gives the bound the text needs.
hostile_case(vocab_size_below_the_texts_bytes 2
  "^mantissa: error: trainer.init.model.vocab_size: 100 is too small for this text: its highest byte is 126, so at least 127 \\(256 takes any byte-level text\\)$"
  SETUP "printf 'abc~%.0s' $(seq 1 400) >@D@/t.txt"
  COMMAND bench train --config ${tiny} --steps 1 --warmup 0 --set trainer.init.model.vocab_size=100
          --set trainer.fit.train_dataloader.path=@D@/t.txt)
# bench runs its own number of steps: a schedule shorter than them fails before the first.
hostile_case(bench_schedule_shorter_than_its_steps 2
  "^mantissa: error: trainer.init.schedulers over the benchmark's 12 steps \\(2 warm-up and 10 timed\\): schedule OneCycle: step 6 is past total_steps 6"
  NOT "step [0-9]+/"
  COMMAND bench train --config ${tiny} --set "trainer.init.schedulers={OneCycleLR: {max_lr: 0.01, total_steps: 6}}")
# Image batches larger than their data: named by key, before the first step.
hostile_case(image_validation_batch_larger_than_its_images 2
  "^mantissa: error: validation data: trainer.fit.val_dataloader.batch_size: 16 is larger than the validation images \\(8\\)"
  NOT "step [0-9]+/"
  SETUP "${hostile} idx @D@/train-images-idx3-ubyte.gz --gz 8 28 28 && ${hostile} idx @D@/train-labels-idx1-ubyte.gz --gz 8 && cp @D@/train-images-idx3-ubyte.gz @D@/t10k-images-idx3-ubyte.gz && cp @D@/train-labels-idx1-ubyte.gz @D@/t10k-labels-idx1-ubyte.gz"
  COMMAND train --config ${mlp} --set trainer.fit.train_dataloader.path=@D@ --set ${run_dir}
          --set trainer.fit.train_dataloader.batch_size=4 --set trainer.fit.val_dataloader.batch_size=16)
hostile_case(image_training_batch_larger_than_its_images 2
  "^mantissa: error: trainer.fit.train_dataloader.batch_size: 16 is larger than the dataset \\(8 examples\\)"
  SETUP "${hostile} idx @D@/train-images-idx3-ubyte.gz --gz 8 28 28 && ${hostile} idx @D@/train-labels-idx1-ubyte.gz --gz 8 && cp @D@/train-images-idx3-ubyte.gz @D@/t10k-images-idx3-ubyte.gz && cp @D@/train-labels-idx1-ubyte.gz @D@/t10k-labels-idx1-ubyte.gz"
  COMMAND train --config ${mlp} --set trainer.fit.train_dataloader.path=@D@ --set ${run_dir}
          --set trainer.fit.train_dataloader.batch_size=16)
# Options a float32 run has no use for are said, not silently dropped.
hostile_case(bench_float32_says_what_it_does_not_use 0
  "bench: float32 runs without mixed precision: --loss-scaling 128, --opt-level 2 change nothing for it"
  COMMAND bench train --config ${tiny} --precision float32 --loss-scaling 128 --opt-level 2
          --steps 1 --warmup 0)
hostile_case(resume_settings_without_resume 2
  "^mantissa: error: --resume-settings: give it with --resume"
  COMMAND ${train_tiny} --resume-settings config)

# --- Late failures: found before the first step ---------------------------------------------------
hostile_case(validation_split_too_small_fails_before_training 2
  "^mantissa: error: validation data: README.md \\[val\\]: [0-9]+ tokens make [0-9]+ windows of context 32, fewer than one batch of 2"
  NOT "step [0-9]+/"
  COMMAND train --config ${tiny} --set ${run_dir} --set trainer.fit.train_dataloader.val_fraction=0.001)

# --- Unbounded: decompression and allocation -------------------------------------------------------
hostile_case(idx_gzip_bomb_stops_at_the_declared_size 2
  "^mantissa: error: .*/train-labels-idx1-ubyte.gz: gzip data inflates past the 14 bytes its IDX header declares \\(trailing data, or a decompression bomb\\)"
  SETUP "${hostile} idx @D@/train-images-idx3-ubyte.gz --gz 6 4 4 && ${hostile} idx @D@/train-labels-idx1-ubyte.gz --gz --payload 50000000 6"
  COMMAND train --config ${mlp} --set trainer.fit.train_dataloader.path=@D@ --set ${run_dir})
# A second gzip member was ignored: the images come in three members (read as gunzip reads
# them), the labels' first member holds all 6 the header declares and a second adds 14 more.
hostile_case(idx_second_gzip_member_is_read 2
  "^mantissa: error: .*/train-labels-idx1-ubyte.gz: gzip data inflates past the 14 bytes its IDX header declares"
  SETUP "${hostile} idx @D@/train-images-idx3-ubyte.gz --gz --members 3 6 4 4 && ${hostile} idx @D@/train-labels-idx1-ubyte.gz --gz --payload 20 --members 2 6"
  COMMAND train --config ${mlp} --set trainer.fit.train_dataloader.path=@D@ --set ${run_dir})
hostile_case(huge_model_refused_before_allocating 2
  "^mantissa: error: trainer.init.model \\(gpt\\): [0-9]+ parameters: their float32 weights and gradients need [0-9.e+]+ GiB, more than this machine's [0-9.]+ GiB of memory"
  COMMAND train --config ${CMAKE_CURRENT_SOURCE_DIR}/huge-gpt.yaml --set ${run_dir})
hostile_case(generate_checkpoint_config_describing_a_huge_model 2
  "^mantissa: error: .*/c.safetensors: its config describes a GPT of [0-9]+ parameters, but it holds [0-9]+"
  TINY SETUP "${hostile} set-meta-file ${ck6} @D@/c.safetensors config ${CMAKE_CURRENT_SOURCE_DIR}/huge-gpt.yaml"
  COMMAND generate --checkpoint @D@/c.safetensors)

# --- Messages ------------------------------------------------------------------------------------
hostile_case(config_is_a_directory 2
  "^mantissa: error: .*/hostile/config_is_a_directory: is a directory, not the config file$"
  COMMAND train --config @D@)
hostile_case(resume_from_a_directory 2
  "^mantissa: error: .*/hostile/resume_from_a_directory: is a directory, not the safetensors file$"
  COMMAND ${train_tiny} --resume @D@)
hostile_case(text_dataset_is_a_directory 2
  "^mantissa: error: .*/hostile/text_dataset_is_a_directory: is a directory, not the text file$"
  COMMAND ${train_tiny} --set trainer.fit.train_dataloader.path=@D@)
