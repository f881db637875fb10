# The process around the program (the ninth audit, docs/reliability.md): OpenMP's environment,
# closed or full standard streams, a file-size limit, empty attached option values, newlines
# in values, a lock file of the user's and a resumed file that does not exist.
set(pdir ${CMAKE_CURRENT_BINARY_DIR}/process)

# OMP_DYNAMIC=true or an OMP_THREAD_LIMIT below the thread count gave oneDNN smaller teams than
# it split its work for: the same checkpoint evaluated to another loss on the onednn_fp32 route.
# Each is compared with a run of the thread count it should have: the default's, and one
# thread for a limit of one.
set(d ${pdir}/omp_environment)
set(eval_onednn ${cli} eval --config ${tiny} --resume ${ck6} --resume-settings config
    --set trainer.init.checkpoint.dir=${d}/run --set trainer.init.precision.matmul_route=onednn_fp32)
string(REPLACE ";" " " eval_onednn "${eval_onednn}")
add_test(NAME cli.openmp_environment_gives_the_same_loss COMMAND sh -c
  "set -e; rm -rf ${d}; mkdir -p ${d}
   ${eval_onednn} >${d}/plain 2>/dev/null
   OMP_DYNAMIC=true ${eval_onednn} >${d}/dynamic 2>/dev/null
   OMP_NUM_THREADS=1 ${eval_onednn} >${d}/one_thread 2>/dev/null
   OMP_THREAD_LIMIT=1 ${eval_onednn} >${d}/limited 2>/dev/null
   grep -q 'validation: loss' ${d}/plain; cmp ${d}/plain ${d}/dynamic; cmp ${d}/one_thread ${d}/limited"
  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.openmp_environment_gives_the_same_loss PROPERTIES
  FIXTURES_REQUIRED tiny_run)

# A thread count no machine runs (once a segmentation fault inside libgomp).
add_test(NAME cli.absurd_thread_count_is_refused
  COMMAND ${expect} 2 "^mantissa: error: OMP_NUM_THREADS=100000: 100000 threads on [0-9]+ cores \\(expected at most [0-9]+"
    -- env OMP_NUM_THREADS=100000 ${cli} formats)

# MANTISSA_AMX=OFF (or 0, or false) once left the tiles on without a word: only `off` turned
# them off. A value that is not a setting is refused before anything runs.
add_test(NAME cli.unknown_amx_setting_is_refused
  COMMAND ${expect} 2 "^mantissa: error: MANTISSA_AMX='OFF' is not a setting \\(expected off, or on or unset"
    -- env MANTISSA_AMX=OFF ${cli} formats)
add_test(NAME cli.amx_settings_are_taken
  COMMAND sh -c "MANTISSA_AMX=off ${cli} formats >/dev/null && MANTISSA_AMX=on ${cli} formats >/dev/null && MANTISSA_AMX= ${cli} formats >/dev/null")

# OMP_STACKSIZE=16K once crashed a training run (segmentation fault: the worker threads'
# stacks overflowed); below 256K is refused, in any unit; 256K and larger sizes train.
add_test(NAME cli.small_openmp_stack_is_refused
  COMMAND ${expect} 2 "^mantissa: error: OMP_STACKSIZE=16K: 16384 bytes of stack for each OpenMP thread \\(expected at least 256K"
    -- env OMP_STACKSIZE=16K ${cli} formats)
add_test(NAME cli.small_openmp_stack_in_other_units_is_refused
  COMMAND sh -c "for v in 100000B ' 200 k' 0G 255; do OMP_STACKSIZE=\"$v\" ${cli} formats >/dev/null 2>&1; test $? -eq 2 || exit 1; done")
set(d ${pdir}/stack_size)
add_test(NAME cli.large_enough_openmp_stack_trains
  COMMAND sh -c "set -e; rm -rf ${d}; for v in 256K 1M 8m; do OMP_STACKSIZE=$v ${cli} train --config ${tiny} --mode train --set trainer.init.checkpoint.dir=${d}/$v --set trainer.init.loop.max_steps=1 >/dev/null; done"
  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})

# More threads than the CPUs the process may run on (taskset to one CPU): a note, and the
# command runs (once nothing was said).
add_test(NAME cli.oversubscription_is_noted
  COMMAND sh -c "cpu=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*\\([0-9]*\\).*/\\1/p' /proc/self/status)
   out=$(OMP_NUM_THREADS=4 taskset -c $cpu ${cli} formats 2>&1 >/dev/null) || exit 1
   echo \"$out\" | grep -q '^mantissa: note: OMP_NUM_THREADS=4: 4 threads on the 1 CPU this process may run on' || exit 1
   test -z \"$(OMP_NUM_THREADS=1 taskset -c $cpu ${cli} formats 2>&1 >/dev/null)\"")

# stderr closed: errors keep their status (once an abort, 134), and the run directory's lock
# file holds the pid alone (once every log line landed in it).
set(d ${pdir}/closed_stderr)
add_test(NAME cli.closed_stderr_keeps_statuses_and_the_lock COMMAND sh -c
  "rm -rf ${d}; mkdir -p ${d}
   ${cli} formats --value x 2>&-; test $? -eq 2 || exit 1
   ${cli} train --config ${tiny} --mode train --set trainer.init.checkpoint.dir=${d}/run --set trainer.init.loop.max_steps=1 >/dev/null 2>&-
   test $? -eq 0 || exit 1
   grep -qx '[0-9][0-9]*' ${d}/run/.lock && test $(wc -l <${d}/run/.lock) -eq 1"
  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})

# A file-size limit (`ulimit -f`) fails the checkpoint's write with EFBIG, reported, instead of
# killing the program by SIGXFSZ; the partial temporary is removed and the end record written.
set(d ${pdir}/file_size_limit)
add_test(NAME cli.file_size_limit_is_a_failed_write
  COMMAND ${expect} --setup "rm -rf ${d} && mkdir -p ${d}"
    --then "test ! -e ${d}/run/ckpt-00000003.safetensors.tmp && grep -q '\"outcome\"' ${d}/run/metrics.jsonl"
    2 "mantissa: error: .*/run/ckpt-00000003.safetensors.tmp: write failed \\(File too large\\)"
    -- bash -c "ulimit -f 250; exec \"$0\" \"$@\"" ${cli} train --config ${tiny} --mode train
       --set trainer.init.checkpoint.dir=${d}/run
  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})

# `--title=` (an unset variable after '=') once took the next argument as its value.
add_test(NAME cli.empty_attached_value_is_refused
  COMMAND ${expect} 2 "^mantissa: error: --title=: an empty value \\(give a value, or leave the option out\\)"
    -- ${cli} report ${tiny_run} --title= ${tiny_run} --out ${pdir}/never.html)

# What was printed to stdout and lost (a full disk) is a failed write, status 2.
add_test(NAME cli.lost_standard_output_is_a_failed_write
  COMMAND ${expect} 2 "^mantissa: error: standard output: write failed \\(No space left on device\\)"
    -- sh -c "exec \"$0\" formats >/dev/full" ${cli})
add_test(NAME cli.lost_long_standard_output_is_a_failed_write
  COMMAND ${expect} 2 "^mantissa: error: standard output: write failed \\(No space left on device\\)"
    -- sh -c "exec \"$0\" formats --value 1 >/dev/full" ${cli})

# A newline in a value is shown as \x0a: it cannot forge a line of its own.
hostile_case(newline_in_a_value_cannot_forge_a_line 0
  "run directory .*/x\\\\x0amantissa: error: disk on fire"
  COMMAND train --config ${tiny} --mode train --set trainer.init.loop.max_steps=1
          --set "trainer.init.checkpoint.dir=\"@D@/x\\nmantissa: error: disk on fire\"")

# A resumed file that does not exist is said so first (once: advice about foreign checkpoints).
hostile_case(resume_of_a_missing_file 2
  "^mantissa: error: --resume LATEST: no such file \\(the newest checkpoint is --resume latest\\)"
  TINY SETUP "mkdir @D@/run && cp ${ck3} @D@/run"
  COMMAND ${train_tiny} --resume LATEST)

# Nothing left behind by a run refused before it wrote anything: a --resume of a missing file
# into a new run directory once left the directory and its .lock; an eval of a checkpoint
# from elsewhere once created the config's run directory, which it records nothing in.
set(d ${pdir}/nothing_left)
add_test(NAME cli.refused_run_leaves_no_directory COMMAND sh -c
  "rm -rf ${d}; mkdir -p ${d}
   ${cli} train --config ${tiny} --mode train --set trainer.init.checkpoint.dir=${d}/refused --resume ${d}/missing.safetensors 2>/dev/null
   test $? -eq 2 && test ! -e ${d}/refused || exit 1
   ${cli} eval --config ${tiny} --set trainer.init.checkpoint.dir=${d}/elsewhere --resume ${ck6} >${d}/out 2>/dev/null
   test $? -eq 0 && grep -q 'validation: loss' ${d}/out && test ! -e ${d}/elsewhere"
  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.refused_run_leaves_no_directory PROPERTIES FIXTURES_REQUIRED tiny_run)

# An archived run this user cannot write (a read-only copy; as root, evaluated as nobody) is
# evaluated in place, each mode, the results printed and said unrecorded; once "the run
# directory is not writable".
set(d ${pdir}/read_only_run)
add_test(NAME cli.read_only_run_is_evaluated_in_place COMMAND sh -c
  "chmod -R u+w ${d} 2>/dev/null; rm -rf ${d}; mkdir -p ${d}; cp -r ${tiny_run} ${d}/run; rm -f ${d}/run/.lock; chmod -R a-w ${d}/run
   as=''; if [ $(id -u) -eq 0 ]; then as='setpriv --reuid=65534 --regid=65534 --clear-groups'; fi
   if ! $as sh -c 'cat ${tiny} README.md ${d}/run/ckpt-00000006.safetensors >/dev/null && ${cli} formats >/dev/null' 2>/dev/null; then
     echo 'skip: user nobody cannot reach the program or the tiny config here (a checkout under a private directory)'; exit 77
   fi
   for mode in eval eval_all; do
     $as ${cli} eval --mode $mode --config ${tiny} --set trainer.init.checkpoint.dir=${d}/run >${d}/$mode.out 2>${d}/$mode.err || exit 1
     grep -q 'step 6)' ${d}/$mode.out && grep -q 'is not writable here: the results* .*printed, not recorded' ${d}/$mode.err || exit 1
   done
   grep -q 'step 3)' ${d}/eval_all.out"
  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.read_only_run_is_evaluated_in_place PROPERTIES FIXTURES_REQUIRED tiny_run
  SKIP_RETURN_CODE 77)

# A `.lock` of the user's in the run directory is not truncated.
hostile_case(users_lock_file_is_kept 2
  "^mantissa: error: .*/run/.lock: holds something other than a process id"
  SETUP "mkdir @D@/run && echo 'precious notes' >@D@/run/.lock"
  THEN "grep -qx 'precious notes' @D@/run/.lock"
  COMMAND ${train_tiny})

# A config named by dots alone ("...yaml": stem "..") once put its run in runs/ itself.
hostile_case(config_named_by_dots_needs_a_run_directory 2
  "^mantissa: error: .*/\\.\\.\\.yaml: a config named by dots alone gives no run directory name; set trainer.init.checkpoint.dir"
  SETUP "cp ${tiny} @D@/...yaml"
  COMMAND train --config @D@/...yaml --mode train)

# An option before the command word (once CLI11's "A subcommand is required").
add_test(NAME cli.option_before_the_command_is_named
  COMMAND ${expect} 2 "^mantissa: error: --version: unknown option \\(mantissa takes a command first, one of: train, eval, generate, inspect, formats, bench, compare, report\\)"
    -- ${cli} --version)

# `report --out -` once wrote a file named "-".
add_test(NAME cli.report_out_dash_is_refused
  COMMAND ${expect} 2 "^mantissa: error: --out -: the report is written to a file"
    -- ${cli} report ${tiny_run} --out -)
set_tests_properties(cli.report_out_dash_is_refused PROPERTIES FIXTURES_REQUIRED tiny_run)

# A NaN validation loss is printed "nan" (once "-nan", a sign that means nothing).
set(d ${pdir}/nan_validation)
add_test(NAME cli.nan_validation_is_printed_without_a_sign COMMAND sh -c
  "rm -rf ${d}; mkdir -p ${d}
   ${cli} train --config ${tiny} --set trainer.init.checkpoint.dir=${d}/run --set trainer.init.model.initializer_range=300 --set 'trainer.init.precision={fp16_type: float16, loss_scaling_factor: 1, on_nonfinite: apply}' --set trainer.init.loop.max_steps=2 >${d}/out 2>/dev/null
   grep -q '^validation: loss nan, perplexity nan (2 batches, step 2)$' ${d}/out || { cat ${d}/out; exit 1; }"
  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})

# Training's lines to a reader that went away are lost, the status unchanged (SIGPIPE is
# ignored while training): the check of standard output does not count a closed pipe.
set(d ${pdir}/closed_stdout_pipe)
add_test(NAME cli.closed_stdout_pipe_keeps_the_status COMMAND bash -c
  "rm -rf ${d}; mkdir -p ${d}
   ${cli} train --config ${tiny} --set trainer.init.checkpoint.dir=${d}/run --set trainer.init.loop.max_steps=2 2>/dev/null | true
   test \${PIPESTATUS[0]} -eq 0"
  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})

# A `bible` program that prints some text and then fails is named with its status (once "gave
# no text", and a partial corpus must never be trained on).
set(d ${pdir}/bible_fails_after_text)
add_test(NAME cli.bible_failing_after_text_is_named
  COMMAND ${expect} --setup "rm -rf ${d} && mkdir -p ${d}/bin && printf '#!/bin/sh\\necho In the beginning\\nexit 3\\n' >${d}/bin/bible && chmod +x ${d}/bin/bible"
    2 "^mantissa: error: KJV corpus: the `bible` program failed \\(exit status 3\\) after 17 bytes of text"
    -- env PATH=${d}/bin:/usr/bin:/bin ${cli} train --config ${tiny} --mode train
       --set trainer.init.checkpoint.dir=${d}/run
       --set "trainer.fit.train_dataloader={dataset: kjv, data_dir: ${d}/kjv, batch_size: 2, context: 32}"
  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})

# `compare --out FILE` once began the first run before finding FILE is not a directory.
hostile_case(compare_out_onto_a_file 2
  "^mantissa: error: --out .*/afile: is not a directory"
  SETUP "echo hi >@D@/afile" NOT "compare: float32"
  COMMAND compare --config ${tiny} --formats float32 --throughput-steps 0 --out @D@/afile)

# A number past its type's range is said so (once "is not an integer" / "is not a number").
hostile_case(config_integer_past_its_range 2
  "^mantissa: error: trainer.init.loop.max_steps: '9223372036854775808' is past the range of an integer \\(-9223372036854775808..9223372036854775807\\)"
  COMMAND ${train_tiny} --set trainer.init.loop.max_steps=9223372036854775808)
hostile_case(config_number_past_its_range 2
  "^mantissa: error: trainer.init.optimizer.AdamW.learning_rate: '1e999' is past the range of a number \\(magnitudes up to about 1.8e308\\)"
  COMMAND ${train_tiny} --set trainer.init.optimizer.AdamW.learning_rate=1e999)

# A route cache that cannot be used is said in training's own output (once only `formats`
# said why every run measured again).
set(d ${pdir}/route_cache_is_a_file)
add_test(NAME cli.unusable_route_cache_is_said
  COMMAND ${expect} --setup "rm -rf ${d} && mkdir -p ${d} && echo hi >${d}/afile"
    0 "matrix products: [^\n]*; route cache off: cannot [^\n]*/afile/routes-"
    -- env MANTISSA_ROUTE_CACHE=${d}/afile ${cli} train --config ${tiny} --mode train
       --set trainer.init.checkpoint.dir=${d}/run --set trainer.init.loop.max_steps=1
  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})

# A key or word that looks right but holds a character that is not ASCII (a zero-width space,
# a Cyrillic letter) is said so: the message once showed two identical-looking words.
hostile_case(invisible_character_in_a_key_is_named 2
  "^mantissa: error: trainer.init.loop.max_steps.*: unknown key \\(its character 10 is U\\+200B, not ASCII\\) \\(expected one of: "
  COMMAND ${train_tiny} --set "trainer.init.loop.max_steps​=3")
hostile_case(lookalike_letter_in_a_word_is_named 2
  "^mantissa: error: trainer.init.model.name: '.*' \\(its character 1 is U\\+0433, not ASCII\\) \\(expected one of: gpt, mlp, cnn\\)"
  COMMAND ${train_tiny} --set "trainer.init.model.name=гpt")
