# What the install tests' scripts share (included by run_install_test.cmake and
# run_host_project_test.cmake, in cmake -P mode):
#   step(<name> <command>...)   runs a command; fails the test with its output
#                               if it fails or prints a Vulkan validation error;
#                               leaves its stdout/stderr in step_out/step_err
#   check_golden_logits(<engine> <checker> <fixture_dir> <work_dir>)
#                               runs <engine> (a generator binary) on the golden
#                               prompt of <fixture_dir>/golden.json and has
#                               <checker> compare its logits with logits_f32.bin:
#                               max |diff| / max |ref| <= 1e-3
include_guard(GLOBAL)

function(step name)
  string(TIMESTAMP t0 "%s")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(TIMESTAMP t1 "%s")
  math(EXPR secs "${t1} - ${t0}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install test: ${name} failed (${rc}):\n${ARGN}\n${out}\n${err}")
  endif()
  if(err MATCHES "Vulkan validation error")
    message(FATAL_ERROR "install test: ${name}: Vulkan validation errors:\n${err}")
  endif()
  message(STATUS "${name}: ok (${secs} s)")
  set(step_out "${out}" PARENT_SCOPE)
  set(step_err "${err}" PARENT_SCOPE)
endfunction()

function(check_golden_logits engine checker fixture_dir work_dir)
  file(READ ${fixture_dir}/golden.json golden)
  string(JSON n LENGTH "${golden}" prompt)
  math(EXPR last "${n} - 1")
  set(ids "")
  foreach(i RANGE ${last})
    string(JSON id GET "${golden}" prompt ${i})
    list(APPEND ids ${id})
  endforeach()
  list(JOIN ids "," ids)
  get_filename_component(name ${engine} NAME)
  set(logits ${work_dir}/${name}-logits.f32)
  step("run ${name}" ${engine} --model ${fixture_dir} --tokens ${ids} --logits-out ${logits})
  message(STATUS "${name}: ${step_err}")
  step("check logits" ${checker} ${logits} ${fixture_dir}/logits_f32.bin 1e-3)
  message(STATUS "${step_out}")
endfunction()
